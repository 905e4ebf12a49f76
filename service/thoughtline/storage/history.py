"""Read queries behind `get_thought_history` (and `manage_sequence`'s resume): part of the store layer.

Thoughts are paged by their position in the sequence, so a page boundary never moves when new
thoughts are written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import apsw

from thoughtline.domain.arguments import MAIN_BRANCH
from thoughtline.storage.rows import rows


def branch_key_for(conn: apsw.Connection, seq_rowid: int, name: str) -> int | bool | None:
    """The key of a named branch; None for `main`; False when the sequence has no such branch."""
    if name == MAIN_BRANCH:
        return None
    found = rows(conn, "SELECT id FROM branches WHERE sequence_id = ? AND name = ?", (seq_rowid, name))
    key: int = found[0][0] if found else False
    return key


@dataclass(frozen=True)
class ThoughtRow:
    """One stored thought as history shows it."""

    position: int
    number: int
    total: int
    next_needed: bool
    body: str
    branch_name: str | None
    is_revision: bool
    revises_number: int | None
    revises_position: int | None
    needs_more: bool | None
    flags: int
    created_at: int
    branch_from_thought: int | None = None
    branch_from_branch_id: str | None = None
    event: str | None = None


def history_rows(
    conn: apsw.Connection,
    seq_rowid: int,
    branch: int | bool | None,
    after: int | None,
    order: str,
    limit: int,
) -> list[ThoughtRow]:
    """Up to `limit` thoughts after position `after` in `order`; `branch` True = every branch."""
    where = ["t.sequence_id = ?"]
    params: list[Any] = [seq_rowid]
    if branch is not True:
        where.append("t.branch IS ?")
        params.append(branch)
    if after is not None:
        where.append("t.position > ?" if order == "asc" else "t.position < ?")
        params.append(after)
    direction = "ASC" if order == "asc" else "DESC"
    found = rows(
        conn,
        "SELECT t.position, t.number, t.total, t.next_needed, t.body, b.name, t.is_revision, t.revises_number, "
        "t.revises_position, t.needs_more, t.flags, t.created_at, t.sent_branch_from_thought, "
        "t.sent_branch_from_branch_id, t.event FROM thoughts t "
        "LEFT JOIN branches b ON b.id = t.branch "
        f"WHERE {' AND '.join(where)} ORDER BY t.position {direction} LIMIT ?",
        (*params, limit),
    )
    return [
        ThoughtRow(
            position=r[0],
            number=r[1],
            total=r[2],
            next_needed=bool(r[3]),
            body=r[4],
            branch_name=r[5],
            is_revision=bool(r[6]),
            revises_number=r[7],
            revises_position=r[8],
            needs_more=None if r[9] is None else bool(r[9]),
            flags=r[10],
            created_at=r[11],
            branch_from_thought=r[12],
            branch_from_branch_id=r[13],
            event=r[14],
        )
        for r in found
    ]


def scope_highest_number(conn: apsw.Connection, seq_rowid: int, position: int) -> int:
    """The highest thought number on the branch (or main path) holding the thought at `position`."""
    found = rows(
        conn,
        "SELECT max(t.number) FROM thoughts t WHERE t.sequence_id = ?1 AND t.branch IS "
        "(SELECT o.branch FROM thoughts o WHERE o.sequence_id = ?1 AND o.position = ?2)",
        (seq_rowid, position),
    )
    return int(found[0][0] or 0)


@dataclass(frozen=True)
class BranchSummary:
    """A branch as history lists it."""

    name: str
    parent_name: str | None
    from_thought: int
    fork_position: int


def branch_summaries(conn: apsw.Connection, seq_rowid: int) -> list[BranchSummary]:
    """Every branch of a sequence with its parent's name (None = main path), in creation order."""
    found = rows(
        conn,
        "SELECT b.name, p.name, b.from_thought, b.fork_position FROM branches b "
        "LEFT JOIN branches p ON p.id = b.parent_branch WHERE b.sequence_id = ? ORDER BY b.id",
        (seq_rowid,),
    )
    return [BranchSummary(*row) for row in found]


# How many thread names a history header (or a listing's badges) carries; `thread_count` says how
# many threads the sequence is in, as a sequence may be pinned to any number of them.
THREADS_SHOWN = 20


def thread_names(conn: apsw.Connection, seq_rowid: int) -> list[str]:
    """Names of the first `THREADS_SHOWN` threads (by name) a sequence is a confirmed member of."""
    found = rows(
        conn,
        "SELECT t.name FROM thread_members m JOIN threads t ON t.id = m.thread "
        "WHERE m.sequence_id = ? ORDER BY t.name_key LIMIT ?",
        (seq_rowid, THREADS_SHOWN),
    )
    return [row[0] for row in found]


def thread_count(conn: apsw.Connection, seq_rowid: int) -> int:
    """How many threads a sequence is a confirmed member of (all of them, not only those named)."""
    return int(rows(conn, "SELECT count(*) FROM thread_members WHERE sequence_id = ?", (seq_rowid,))[0][0])


# How many sub-agent ids a history header lists; `child_sequence_count` says how many there are.
CHILDREN_SHOWN = 100


def child_sequence_ids(conn: apsw.Connection, public_id: str) -> list[str]:
    """The first `CHILDREN_SHOWN` sequences whose parentSequenceId is this one (sub-agents), oldest first."""
    found = rows(
        conn,
        "SELECT public_id FROM sequences WHERE parent_public_id = ? ORDER BY id LIMIT ?",
        (public_id, CHILDREN_SHOWN),
    )
    return [row[0] for row in found]


def child_sequence_count(conn: apsw.Connection, public_id: str) -> int:
    """How many sequences name this one as their parent (all of them, not only those listed)."""
    return int(rows(conn, "SELECT count(*) FROM sequences WHERE parent_public_id = ?", (public_id,))[0][0])
