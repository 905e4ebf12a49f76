"""What the export checker keeps of each sequence and branch it has read: the whole-file state.

A `SequenceTally` holds a sequence's thoughts so far (positions, numbers, owning branches) so the
checker can resolve references as the tools do and recompute the derived columns (`Derived`);
a `BranchTally` holds a branch's fork point. `domain/export_rules.py` fills and reads them.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

from thoughtline.domain.thinking import BranchInfo, ThoughtRef


@dataclass(frozen=True)
class Derived:
    """A sequence's columns that follow from its thoughts."""

    title: str
    thought_count: int
    last_thought_number: int
    total_thoughts: int
    last_time: int  # its newest thought's `created_at`: `updated_at` is never older


@dataclass
class SequenceTally:
    """A sequence as read so far: its thoughts' positions, numbers and branches, and its derived columns."""

    label: str
    ref: int
    count: int = 0
    title: str = ""
    last_number: int = 0
    last_total: int = 0
    numbers: dict[int, int] = field(default_factory=dict)  # position -> thought number
    flawed: bool = False  # a thought of it broke a rule: its derived columns are not known
    public_id: str = ""
    parent: str | None = None
    created: int = 0  # its `created_at`: no thought, branch or membership of it is older
    last_time: int = 0  # the newest thought time so far: the next thought is not older
    owners: dict[int, int | None] = field(default_factory=dict)  # position -> branch file id (None = main)
    branches: dict[str, BranchInfo] = field(default_factory=dict)  # by name, keyed by branch file ids
    # (branch file id, number) -> positions, ascending: the thoughts a reference can land on.
    scopes: dict[tuple[int | None, int], list[int]] = field(default_factory=dict)

    def find(self, branch: int | None, number: int, max_position: int | None) -> ThoughtRef | None:
        """The tools' `Finder` over the thoughts read so far: the newest `number` on `branch`."""
        positions = self.scopes.get((branch, number), [])
        at = bisect_right(positions, max_position) if max_position is not None else len(positions)
        return ThoughtRef(positions[at - 1], number, branch) if at else None


@dataclass
class BranchTally:
    """A branch as read: its sequence, its fork point, its name and parent branch (file ids)."""

    sequence: int
    label: str
    ref: int
    from_thought: int
    fork_position: int
    name: str = ""
    parent: int | None = None


# The stand-in for a branch id that names no branch: its sequence (0) matches no record's.
NO_BRANCH = BranchTally(sequence=0, label="", ref=0, from_thought=0, fork_position=0)
