"""The domain error every tool failure is expressed as, and its codes.

A `DomainError` becomes an MCP tool result with `isError: true` and text `<code>: <message>`;
the message says what was wrong and how to fix it.
"""

from __future__ import annotations

from typing import Literal

ErrorCode = Literal[
    "sequence_not_found",
    "thought_not_found",
    "branch_not_found",
    "branch_point_not_found",
    "branch_conflict",
    "branch_id_required",
    "revision_target_required",
    "revision_target_not_found",
    "idempotency_conflict",
    "invalid_input",
    "thread_not_found",
    "thread_exists",
    "thread_archived",
    "proposal_not_found",
    "storage_error",
]


class DomainError(Exception):
    """A refused request: nothing was written."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code: ErrorCode = code
        self.message = message

    def wire_text(self) -> str:
        """The tool-result text: `<code>: <message>`."""
        return f"{self.code}: {self.message}"


def invalid(message: str) -> DomainError:
    """Shorthand for the most common refusal."""
    return DomainError("invalid_input", message)
