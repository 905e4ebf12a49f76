"""Sequence operations outside the write path: listing, lifecycle actions and deletion (SPEC §2.3, §5.2).

The one implementation behind `manage_sequence`, `delete_thought_sequence`, the REST sequence
routes and the library pages, with typed results. Listing pages with a signed cursor
(`library/cursors.py`, one purpose per order) bound to its filters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import apsw

from thoughtline.domain.resuming import NextStep, next_step
from thoughtline.domain.thread_names import name_key
from thoughtline.errors import DomainError, invalid
from thoughtline.library import cursors
from thoughtline.storage import history as history_store
from thoughtline.storage import lifecycle as lifecycle_store
from thoughtline.storage import search as search_store
from thoughtline.storage import thoughts as store
from thoughtline.storage.history import ThoughtRow
from thoughtline.storage.lifecycle import SequenceSummary
from thoughtline.storage.router import UserStore
from thoughtline.storage.rows import cursor_secret
from thoughtline.storage.sequence_reads import SequenceRow, get_sequence

# The lifecycle actions and the status each one sets.
TARGET_STATUS = {"pause": "paused", "resume": "active", "complete": "completed", "abandon": "abandoned"}
LIFECYCLE_ACTIONS = tuple(TARGET_STATUS)
# The orders a listing offers (`storage.lifecycle.LIST_ORDERS`): "updated" for a person looking for
# recent work, "created" for a client walking every page, whose key never moves.
LIST_ORDERS = lifecycle_store.LIST_ORDERS
DEFAULT_ORDER = "updated"
# A cursor with a thread filter carries the name's folded key (over 1,000 characters for the widest
# valid names, JSON-escaped): the tool and REST accept what `list_sequences` issues.
MAX_LIST_CURSOR = 4096
_CURSOR_PURPOSE = {"updated": cursors.Purpose.SEQUENCES, "created": cursors.Purpose.SEQUENCES_CREATED}


@dataclass(frozen=True)
class SequencePage:
    """A page of sequences in the order asked for, and the cursor of the next page (None on the last)."""

    sequences: tuple[SequenceSummary, ...]
    next_cursor: str | None


@dataclass(frozen=True)
class Transition:
    """A sequence after a lifecycle action; `last_thought` only for resume (so an agent can continue),
    with `next`, the branch and number of the thought that continues it."""

    action: str
    sequence: SequenceRow
    last_thought: ThoughtRow | None
    next: NextStep | None = None


@dataclass(frozen=True)
class Deletion:
    """What a delete removed; `deleted` False (and 0 thoughts) when the id was unknown."""

    sequence_id: str
    deleted: bool
    deleted_thoughts: int


def _thread_not_found(name: str) -> DomainError:
    return DomainError("thread_not_found", f"no thread named {name!r}; check the name or omit 'thread'.")


async def list_sequences(
    opened: UserStore,
    status: str | None,
    thread: str | None,
    limit: int,
    cursor: str | None,
    order: str = DEFAULT_ORDER,
) -> SequencePage:
    """A page of sequences in `order` (one of LIST_ORDERS); the cursor continues the same filters and order.

    Walking every page in "created" order returns each sequence that exists throughout the walk
    exactly once, however the sequences change meanwhile. In "updated" order a sequence written to
    (or paused, completed, ...) during the walk moves above the cursor and the rest of the walk does
    not show it (docs/api.md, "Paging").
    """
    purpose = _CURSOR_PURPOSE[order]

    def read(conn: apsw.Connection) -> SequencePage:
        if thread is not None and not search_store.thread_exists(conn, thread):
            raise _thread_not_found(thread)
        found = None if thread is None else name_key(thread)
        secret = cursor_secret(conn)
        after = None
        if cursor is not None:
            bound_status, bound_thread, key, rowid = _read_cursor(secret, purpose, cursor, order)
            if (bound_status, bound_thread) != (status, found):
                raise invalid(
                    "'cursor' was issued for other 'status' or 'thread' filters; pass the same ones, or start again."
                )
            after = (int(key), int(rowid))
        rows = lifecycle_store.sequences_page(conn, status, thread, order, after, limit + 1)
        shown = rows[:limit]
        token = None
        if len(rows) > limit and shown:
            last = shown[-1]
            key = last.created_at if order == "created" else last.updated_at
            token = cursors.issue(secret, purpose, [status, found, key, last.rowid])
        return SequencePage(tuple(shown), token)

    return await opened.read(read)


def _read_cursor(secret: str, purpose: cursors.Purpose, cursor: str, order: str) -> list[Any]:
    """The payload of a list cursor for `order`; a cursor of the other order is refused by name."""
    for other, other_purpose in _CURSOR_PURPOSE.items():
        if other != order and cursors.issued_for(secret, other_purpose, cursor):
            raise invalid(f"'cursor' was issued for 'order' {other!r}; pass the same 'order', or start again.")
    return cursors.read(secret, purpose, cursor, 4)


async def change_status(opened: UserStore, sequence_id: str, action: str, now_ms: int) -> Transition:
    """Pause, resume, complete or abandon a sequence (`sequence_not_found` for an unknown id)."""
    status = TARGET_STATUS[action]
    changed = await opened.write(lambda conn: lifecycle_store.set_status(conn, sequence_id, status, now_ms))
    if not changed:
        raise DomainError("sequence_not_found", f"no sequence {sequence_id} in your store; check the id.")

    def snapshot(conn: apsw.Connection) -> tuple[SequenceRow | None, ThoughtRow | None, NextStep | None]:
        seq = get_sequence(conn, sequence_id)
        if seq is None or action != "resume":
            return seq, None, None
        found = history_store.history_rows(conn, seq.rowid, True, None, "desc", 1)
        if not found:
            return seq, None, None
        last = found[0]
        highest = history_store.scope_highest_number(conn, seq.rowid, last.position)
        return seq, last, next_step(last.branch_name, last.number, highest)

    seq, last, step = await opened.read(snapshot)
    if seq is None:  # deleted between the two calls
        raise DomainError("sequence_not_found", f"sequence {sequence_id} was deleted meanwhile.")
    return Transition(action, seq, last, step)


async def delete_sequence(opened: UserStore, sequence_id: str) -> Deletion:
    """Delete a sequence with its thoughts, branches, search rows, vectors and memberships."""
    count = await opened.write(lambda conn: store.delete_sequence(conn, sequence_id))
    return Deletion(sequence_id, count is not None, count or 0)
