"""The one error hierarchy every surface reports: its codes, its classes, and their HTTP statuses.

A `ThoughtlineError` carries a code and a message that says what was wrong and how to fix it.
The MCP surface turns it into a tool result with `isError: true` and text `<code>: <message>`;
an HTTP surface answers `{"error": code, "message": …}` with `http_status(code)`. Three kinds:
`DomainError` (a refused request: nothing was written), the storage layer's `StorageError`
(`storage/faults.py`: the database failed, its `kind` says whether anything may be stored), and
`InternalError` (an unexpected failure: the outcome is unknown).
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
    "internal_error",
]

# Said after any failure nobody anticipated. A handler may already have committed (a thread
# action, a review decision) when formatting its answer fails, so "nothing was written" would be
# a lie that invites a duplicate; the caller checks, or retries idempotently.
UNKNOWN_OUTCOME = (
    "the server failed unexpectedly while handling this call, so its effect may have been stored: "
    "read it back (get_thought_history, or the tool's list action), or retry with the same requestId."
)

_HTTP_STATUS: dict[ErrorCode, int] = {
    "sequence_not_found": 404,
    "thought_not_found": 404,
    "branch_not_found": 404,
    "branch_point_not_found": 400,
    "branch_conflict": 409,
    "branch_id_required": 400,
    "revision_target_required": 400,
    "revision_target_not_found": 400,
    "idempotency_conflict": 409,
    "invalid_input": 400,
    "thread_not_found": 404,
    "thread_exists": 409,
    "thread_archived": 409,
    "proposal_not_found": 404,
    "storage_error": 503,
    "internal_error": 500,
}


class ThoughtlineError(Exception):
    """A failure reported to the caller as `<code>: <message>` (never with exception text inside)."""

    def __init__(self, code: ErrorCode, message: str, *, api_message: str | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code: ErrorCode = code
        self.message = message
        # The same refusal for a REST caller, where `message` points at MCP tools (`api/errors.py`).
        self.api_message = api_message or message

    def wire_text(self) -> str:
        """The tool-result text: `<code>: <message>`."""
        return f"{self.code}: {self.message}"


class DomainError(ThoughtlineError):
    """A refused request: nothing was written."""


class InternalError(ThoughtlineError):
    """An unexpected failure (a bug, not the caller's mistake): whether anything was stored is unknown."""

    def __init__(self, message: str = UNKNOWN_OUTCOME) -> None:
        super().__init__("internal_error", message)


def http_status(code: ErrorCode) -> int:
    """The HTTP status an HTTP surface answers for an error code (4xx: the caller's to fix)."""
    return _HTTP_STATUS[code]


def invalid(message: str) -> DomainError:
    """Shorthand for the most common refusal."""
    return DomainError("invalid_input", message)
