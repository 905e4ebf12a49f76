"""Reading a sequence back one page at a time (SPEC §2.2), as a typed `HistoryPage`.

Pages are keyed on the thought's position, so paging never skips or repeats a thought, and
thoughts written while a client pages (ascending) appear on its later pages. Cursors are signed
for this sequence, branch filter and order (`library/cursors.py`, purpose HISTORY), so a cursor
that was edited, or that belongs to another sequence or another user's store, is refused; a call
holding a cursor may leave the branch and order out, as the cursor carries them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import apsw

from thoughtline.domain.arguments import HistoryInput
from thoughtline.errors import DomainError, invalid
from thoughtline.library import cursors
from thoughtline.storage import history as history_store
from thoughtline.storage.history import BranchSummary, ThoughtRow
from thoughtline.storage.router import UserStore
from thoughtline.storage.rows import cursor_secret
from thoughtline.storage.sequence_reads import SequenceRow, get_sequence, parent_deleted


@dataclass(frozen=True)
class SequenceHeader:
    """A sequence as history heads it: its row, its sub-agents, threads and branches.

    `parent_deleted`: its stored parent link names a sequence deleted since. `child_sequence_ids`
    are the first sub-agents (oldest first), `child_sequence_count` all of them.
    """

    sequence: SequenceRow
    child_sequence_ids: tuple[str, ...]
    threads: tuple[str, ...]  # the first THREADS_SHOWN by name
    branches: tuple[BranchSummary, ...]
    parent_deleted: bool = False
    child_sequence_count: int = 0  # every sub-agent; `child_sequence_ids` lists the first ones only
    thread_count: int = 0  # every thread it is a member of; `threads` names the first ones only


@dataclass(frozen=True)
class HistoryPage:
    """One page of a sequence: its header, the page's thoughts, and the cursor of the next page (or None)."""

    header: SequenceHeader
    thoughts: tuple[ThoughtRow, ...]
    next_cursor: str | None


def _branch_text(branch_id: str | None) -> str:
    """A cursor's branch in words (None, every thought, is no branchId at all)."""
    if branch_id is None:
        return "no 'branchId' (every thought)"
    return "the main path (branchId 'main')" if branch_id == "main" else f"branchId '{branch_id}'"


@dataclass(frozen=True)
class _Scope:
    """What one page reads: after which position, in which order, on which branch (None = every thought)."""

    after: int | None
    order: Literal["asc", "desc"]
    branch_id: str | None


def _scope(secret: str, inp: HistoryInput) -> _Scope:
    """The page a call asks for. A cursor carries its branch and order, so a call may leave them out
    and still continue the same walk (the hint "pass cursor=…" works on its own); one it sends must
    match the cursor's."""
    if inp.cursor is None:
        return _Scope(None, inp.order or "asc", inp.branch_id)
    sequence_id, branch_id, order, position = cursors.read(secret, cursors.Purpose.HISTORY, inp.cursor, 4)
    if sequence_id != inp.sequence_id:
        raise invalid("'cursor' belongs to another sequence; use the cursor from this sequence's last page.")
    if (inp.branch_id is not None and inp.branch_id != branch_id) or (inp.order not in (None, order)):
        raise invalid(
            f"'cursor' was issued for {_branch_text(branch_id)} in {order} order; pass the same "
            "'branchId' and 'order' as the call that returned it (or leave them out: the cursor carries them), "
            "or start again without a cursor."
        )
    return _Scope(int(position), "desc" if order == "desc" else "asc", branch_id)


def page(conn: apsw.Connection, inp: HistoryInput) -> HistoryPage:
    """Read one page (inside the caller's read snapshot)."""
    seq = get_sequence(conn, inp.sequence_id)
    if seq is None:
        raise DomainError(
            "sequence_not_found",
            f"no sequence {inp.sequence_id} in your store; check the id returned by sequentialthinking.",
            api_message=f"no sequence {inp.sequence_id} in your store; check the id (GET /api/v1/sequences).",
        )
    secret = cursor_secret(conn)
    scope = _scope(secret, inp)
    branch: int | bool | None = True
    if scope.branch_id is not None:
        branch = history_store.branch_key_for(conn, seq.rowid, scope.branch_id)
        if branch is False:
            names = [b.name for b in history_store.branch_summaries(conn, seq.rowid)]
            raise DomainError(
                "branch_not_found",
                f"branch '{scope.branch_id}' is not in this sequence (branches: {', '.join(names) or 'none'}); "
                "use 'main' for the main path or omit branchId for everything.",
            )
    found = history_store.history_rows(conn, seq.rowid, branch, scope.after, scope.order, inp.limit + 1)
    shown: list[ThoughtRow] = []
    chars = 0
    for row in found[: inp.limit]:
        if shown and chars + len(row.body) > inp.max_characters:
            break
        shown.append(row)
        chars += len(row.body)
    more = len(shown) < len(found)
    next_cursor = None
    if more and shown:
        payload = [inp.sequence_id, scope.branch_id, scope.order, shown[-1].position]
        next_cursor = cursors.issue(secret, cursors.Purpose.HISTORY, payload)
    header = SequenceHeader(
        sequence=seq,
        child_sequence_ids=tuple(history_store.child_sequence_ids(conn, seq.public_id)),
        threads=tuple(history_store.thread_names(conn, seq.rowid)),
        branches=tuple(history_store.branch_summaries(conn, seq.rowid)),
        parent_deleted=parent_deleted(conn, seq.parent_public_id),
        child_sequence_count=history_store.child_sequence_count(conn, seq.public_id),
        thread_count=history_store.thread_count(conn, seq.rowid),
    )
    return HistoryPage(header, tuple(shown), next_cursor)


async def read_history(opened: UserStore, inp: HistoryInput) -> HistoryPage:
    """One page of history in its own read snapshot."""
    return await opened.read(lambda conn: page(conn, inp))
