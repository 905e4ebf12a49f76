"""Thread operations (SPEC §5.3): list, get, create, change, delete, pin and unpin, with typed results.

The one implementation behind `configure_thread`, the REST thread routes and the pages. Each
operation takes already-validated values (`domain/arguments.py`, `domain/thread_names.py`); only
the rule for a name a thread is given (`check_new_name`) is applied here, so no surface can skip
it. Each runs as one read snapshot or one write transaction, so a refused call changes nothing,
and returns dataclasses; each surface renders them (`wire/threads.py` for JSON, the MCP layer for
text).
"""

from __future__ import annotations

from dataclasses import dataclass

import apsw

from thoughtline.domain.thread_names import check_new_name, name_key
from thoughtline.domain.thread_state import Lifecycle, lifecycle
from thoughtline.domain.thread_types import TYPE_EVENT_KINDS, ThreadType, TypeSetting, thread_type
from thoughtline.errors import DomainError, invalid
from thoughtline.library import cursors
from thoughtline.storage import thread_events
from thoughtline.storage import threads as thread_store
from thoughtline.storage.router import UserStore
from thoughtline.storage.rows import cursor_secret


@dataclass(frozen=True)
class Periods:
    """How long a thread may go without activity before it is dormant, then closed (days)."""

    dormant_days: float = 14.0
    closed_days: float = 45.0


@dataclass(frozen=True)
class ThreadView:
    """A thread object: its registry entry with its type, lifecycle, counts and latest activity (ms)."""

    name: str
    description: str
    type: ThreadType
    type_set: bool
    status: str
    lifecycle: Lifecycle
    member_count: int
    pending_proposals: int
    created_at: int
    updated_at: int
    last_activity_at: int


@dataclass(frozen=True)
class ThreadChange:
    """What to change on a thread; None leaves a field as it is. At least one field is set."""

    new_name: str | None = None
    description: str | None = None
    status: str | None = None  # "active" | "archived"
    type: TypeSetting | None = None  # "auto": derived from the events again


@dataclass(frozen=True)
class ThreadChanged:
    """A changed thread, the name it had, and whether anything actually changed."""

    thread: ThreadView
    previous_name: str
    changed: bool


@dataclass(frozen=True)
class ThreadDeleted:
    """A deleted thread's name and what went with it (never a sequence)."""

    name: str
    removed_memberships: int
    removed_proposals: int


@dataclass(frozen=True)
class MembershipChanged:
    """A pin or unpin: the thread after it, the sequence, whether it is a member, whether it changed."""

    thread: ThreadView
    sequence_id: str
    member: bool
    changed: bool


# A thread listing is paged: a store may hold thousands of threads (names by the page).
DEFAULT_THREAD_PAGE = 50
MAX_THREAD_PAGE = 100
# A list cursor carries a thread's folded name: 64 characters can fold to over 1,100 (NFKC expands
# U+FDFA to 18), so the cursor of the longest name is far past the 500 other cursors are held to.
MAX_THREAD_CURSOR = 4096


@dataclass(frozen=True)
class ThreadPage:
    """A page of threads by name, how many there are in all, and the next page's cursor (None on the last)."""

    threads: tuple[ThreadView, ...]
    thread_count: int
    next_cursor: str | None


def lifecycle_of(thread: thread_store.ThreadRow, last_ms: int, now_ms: int, periods: Periods) -> Lifecycle:
    """A thread's lifecycle from its latest activity, under the configured periods."""
    return lifecycle(thread.archived, last_ms, now_ms, periods.dormant_days, periods.closed_days)


def view(conn: apsw.Connection, thread: thread_store.ThreadRow, now_ms: int, periods: Periods) -> ThreadView:
    """The thread object of one registry entry (inside the caller's snapshot or transaction)."""
    stats = thread_store.thread_stats(conn, thread)
    kinds = thread_events.event_kinds(conn, thread.rowid, TYPE_EVENT_KINDS) if thread.type is None else set()
    kind, kind_set = thread_type(thread.type, kinds)
    return ThreadView(
        name=thread.name,
        description=thread.description,
        type=kind,
        type_set=kind_set,
        status=thread.status,
        lifecycle=lifecycle_of(thread, stats.last_activity_at, now_ms, periods),
        member_count=stats.member_count,
        pending_proposals=stats.pending_proposals,
        created_at=thread.created_at,
        updated_at=thread.updated_at,
        last_activity_at=stats.last_activity_at,
    )


async def thread_page(
    store: UserStore, periods: Periods, now_ms: int, include_archived: bool, limit: int, cursor: str | None
) -> ThreadPage:
    """One page of threads by name, the count of all, and the next page's cursor (bound to `include_archived`).

    A store may hold thousands of threads; each page builds the thread objects of its own rows only.
    """

    def read(conn: apsw.Connection) -> ThreadPage:
        secret = cursor_secret(conn)
        after = None
        if cursor is not None:
            after, bound = cursors.read(secret, cursors.Purpose.THREADS, cursor, 2)
            if bound != int(include_archived) or not isinstance(after, str):
                raise invalid("'cursor' was issued for another 'includeArchived'; pass the same one, or start again.")
        found = thread_store.list_threads(conn, include_archived, after, limit + 1)
        shown = found[:limit]
        token = None
        if len(found) > limit and shown:
            token = cursors.issue(secret, cursors.Purpose.THREADS, [name_key(shown[-1].name), int(include_archived)])
        views = tuple(view(conn, t, now_ms, periods) for t in shown)
        return ThreadPage(views, thread_store.count_threads(conn, include_archived), token)

    return await store.read(read)


async def get_thread(store: UserStore, periods: Periods, now_ms: int, name: str) -> ThreadView:
    """One thread by name (any case), or `thread_not_found`."""
    return await store.read(lambda conn: view(conn, thread_store.require_thread(conn, name), now_ms, periods))


async def create_thread(store: UserStore, periods: Periods, now_ms: int, name: str, description: str) -> ThreadView:
    """Register a new thread (`thread_exists` when the name is taken in any case)."""
    check_new_name(name)

    def write(conn: apsw.Connection) -> ThreadView:
        return view(conn, thread_store.create_thread(conn, name, description, now_ms), now_ms, periods)

    return await store.write(write)


def _apply(conn: apsw.Connection, thread: thread_store.ThreadRow, change: ThreadChange, now_ms: int) -> bool:
    """Apply every field of `change` in order; True when any stored value changed."""
    before = thread
    if change.new_name is not None:
        thread = thread_store.rename_thread(conn, thread, change.new_name, now_ms)
    if change.description is not None:
        thread = thread_store.set_description(conn, thread, change.description, now_ms)
    if change.status is not None:
        thread = thread_store.set_thread_status(conn, thread, change.status, now_ms)
    if change.type is not None:
        thread = thread_store.set_thread_type(conn, thread, None if change.type == "auto" else change.type, now_ms)
    return (thread.name, thread.description, thread.status, thread.type) != (
        before.name,
        before.description,
        before.status,
        before.type,
    )


async def change_thread(
    store: UserStore, periods: Periods, now_ms: int, name: str, change: ThreadChange
) -> ThreadChanged:
    """Rename, describe, archive or unarchive, or set the type of a thread, all in one transaction."""
    if change.new_name is not None:
        check_new_name(change.new_name, "newName")

    def write(conn: apsw.Connection) -> ThreadChanged:
        thread = thread_store.require_thread(conn, name)
        changed = _apply(conn, thread, change, now_ms)
        after = thread_store.require_thread(conn, change.new_name or thread.name)
        return ThreadChanged(view(conn, after, now_ms, periods), thread.name, changed)

    return await store.write(write)


async def delete_thread(store: UserStore, name: str) -> ThreadDeleted:
    """Delete a thread with its memberships and proposals (never a sequence)."""

    def write(conn: apsw.Connection) -> ThreadDeleted:
        thread = thread_store.require_thread(conn, name)
        members, proposals = thread_store.delete_thread(conn, thread)
        return ThreadDeleted(thread.name, members, proposals)

    return await store.write(write)


async def set_membership(
    store: UserStore, periods: Periods, now_ms: int, name: str, sequence_id: str, member: bool
) -> MembershipChanged:
    """Pin (`member`, addedBy user) or unpin a sequence; an unpinned pair is never proposed again."""

    def write(conn: apsw.Connection) -> MembershipChanged:
        thread = thread_store.require_thread(conn, name)
        seq_rowid = thread_store.sequence_rowid(conn, sequence_id)
        if seq_rowid is None:
            raise DomainError(
                "sequence_not_found",
                f"no sequence {sequence_id} in your store; check the id (manage_sequence list).",
                api_message=f"no sequence {sequence_id} in your store; check the id (GET /api/v1/sequences).",
            )
        if member:
            changed = thread_store.add_member(conn, thread.rowid, seq_rowid, "user", now_ms)
        else:
            changed = thread_store.remove_member(conn, thread.rowid, seq_rowid, now_ms)
        return MembershipChanged(view(conn, thread, now_ms, periods), sequence_id, member, changed)

    return await store.write(write)
