"""Where a resumed sequence goes on: the branch of its last thought and the next free number there.

Thought numbers are scoped to the branch that writes them (SPEC §2.1), so the step after the last
thought is on that thought's branch (a call without `branchId` writes to the main path) and takes
that scope's highest number + 1: the last thought's own number + 1 may already be taken, when the
last write reused a lower number.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class NextStep:
    """The `branchId` (None = the main path) and `thoughtNumber` of the thought that continues."""

    branch_id: str | None
    thought_number: int


def next_step(branch_id: str | None, last_number: int, scope_highest: int) -> NextStep:
    """The step after a last thought numbered `last_number` on `branch_id`, whose scope's highest
    number is `scope_highest` (a number no thought of that scope holds yet)."""
    return NextStep(branch_id, max(last_number, scope_highest) + 1)


def continue_args(sequence_id: str, step: NextStep) -> str:
    """The arguments that write that step, as a hint lists them."""
    branch = f", branchId {step.branch_id}" if step.branch_id is not None else ""
    return f"sequenceId {sequence_id}{branch}, thoughtNumber {step.thought_number}"
