"""Reading a sequence's stored header and branches, and finding its thoughts by number.

What a write needs to know of the sequence it continues (`storage/thoughts.py`) and what history and
listings head a sequence with; typed queries over an open connection inside the caller's transaction.
"""

from __future__ import annotations

from dataclasses import dataclass

import apsw

from thoughtline.domain.thinking import BranchInfo, Finder, Status, ThoughtRef
from thoughtline.storage.rows import rows


@dataclass(frozen=True)
class SequenceRow:
    """A sequence's stored header."""

    rowid: int
    public_id: str
    title: str
    status: Status
    total_thoughts: int
    last_thought_number: int
    thought_count: int
    parent_public_id: str | None
    created_at: int
    updated_at: int
    kind: str | None


_SEQ_COLS = (
    "id, public_id, title, status, total_thoughts, last_thought_number, thought_count, "
    "parent_public_id, created_at, updated_at, kind"
)


def get_sequence(conn: apsw.Connection, public_id: str) -> SequenceRow | None:
    """The sequence with this public id, or None."""
    found = rows(conn, f"SELECT {_SEQ_COLS} FROM sequences WHERE public_id = ?", (public_id,))
    return SequenceRow(*found[0]) if found else None


def parent_of(conn: apsw.Connection, public_id: str) -> str | None:
    """The stored parent of a sequence (None: it has none, or there is no such sequence)."""
    found = rows(conn, "SELECT parent_public_id FROM sequences WHERE public_id = ?", (public_id,))
    return str(found[0][0]) if found and found[0][0] is not None else None


def parent_deleted(conn: apsw.Connection, parent_public_id: str | None) -> bool:
    """Whether a stored parent link names a sequence that no longer exists (deleted since).

    The link itself is kept: a parent is set once (`check_parent`), so clearing it would let a
    later call re-parent the sub-agent, and the sub-agent may keep repeating the id it recorded.
    """
    return parent_public_id is not None and not rows(
        conn, "SELECT 1 FROM sequences WHERE public_id = ?", (parent_public_id,)
    )


def get_branches(conn: apsw.Connection, seq_rowid: int) -> dict[str, BranchInfo]:
    """All branches of a sequence by name."""
    found = rows(
        conn,
        "SELECT id, name, parent_branch, from_thought, fork_position FROM branches WHERE sequence_id = ? ORDER BY id",
        (seq_rowid,),
    )
    return {row[1]: BranchInfo(*row) for row in found}


def make_finder(conn: apsw.Connection, seq_rowid: int) -> Finder:
    """A Finder backed by the `thoughts_by_scope` index."""

    def find(branch: int | None, number: int, max_position: int | None) -> ThoughtRef | None:
        found = rows(
            conn,
            "SELECT position FROM thoughts WHERE sequence_id = ? AND branch IS ? AND number = ? "
            "AND position <= ? ORDER BY position DESC LIMIT 1",
            (seq_rowid, branch, number, max_position if max_position is not None else 2**62),
        )
        return ThoughtRef(found[0][0], number, branch) if found else None

    return find
