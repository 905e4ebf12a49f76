"""The `thread_briefing` assembly (SPEC §5.3), as a typed `Briefing`.

Reads rows through `storage/threads.py` inside one read snapshot and applies the pure rules of
`domain/thread_state.py` (events, open items, state, lifecycle) and `domain/thread_types.py`;
nothing here writes, and nothing here knows a wire shape: `wire/threads.py` renders the JSON both
surfaces send, the MCP layer adds the readable text.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import apsw

from thoughtline.domain.thread_state import (
    MAX_EVENT_TEXT,
    Event,
    Lifecycle,
    State,
    clip,
    event_kind,
    headline,
    lifecycle,
    open_items,
    reduce_state,
)
from thoughtline.domain.thread_types import ThreadType, thread_type
from thoughtline.library.threads import Periods as Periods
from thoughtline.library.threads import lifecycle_of
from thoughtline.storage import threads as thread_store
from thoughtline.storage.router import UserStore
from thoughtline.storage.threads import MemberRow

MAX_DECISIONS = 10
MAX_EVENTS = 100
DEFAULT_EVENTS = 20


@dataclass(frozen=True)
class BriefingThread:
    """The thread as its briefing heads it (times in ms)."""

    name: str
    description: str
    headline: str
    type: ThreadType
    type_set: bool
    status: str
    lifecycle: Lifecycle
    state: State
    member_count: int
    last_activity_at: int


@dataclass(frozen=True)
class ChangedSince:
    """What changed after `since`: new events (newest first, limited) and members, the state then and now."""

    since: int
    new_events: tuple[Event, ...]
    new_event_count: int
    new_members: tuple[MemberRow, ...]
    state_then: State
    state_now: State


@dataclass(frozen=True)
class Briefing:
    """A thread's briefing; every event list is newest first and every event text clipped to 280."""

    thread: BriefingThread
    open_blockers: tuple[Event, ...]
    open_questions: tuple[Event, ...]
    decisions: tuple[Event, ...]
    latest_conclusion: Event | None
    events: tuple[Event, ...]
    members: tuple[MemberRow, ...]
    changed_since: ChangedSince | None = None


def thread_events(rows: Sequence[thread_store.EventRow]) -> list[tuple[int, Event]]:
    """(thought id, event) of the events among member thoughts (explicit or derived), in time order.

    The events carry no text yet: only the few a briefing shows read theirs (`_with_texts`).
    """
    events: list[tuple[int, Event]] = []
    for row in rows:
        kind = event_kind(row.event, row.final, row.revision)
        if kind is not None:
            event = Event(kind, row.at, row.sequence_id, row.thought_number, row.branch_id, "")
            events.append((row.thought_id, event))
    return events


def _newest_first(events: Sequence[Event], limit: int | None = None) -> list[Event]:
    ordered = list(reversed(events))
    return ordered if limit is None else ordered[:limit]


class _Texts:
    """The shown events' texts, read in one query for all of them and clipped to 280."""

    def __init__(self, conn: apsw.Connection, ids: dict[int, int], shown: Sequence[Event]) -> None:
        self._ids = ids
        self._texts = thread_store.event_texts(conn, (ids[id(e)] for e in shown))

    def full(self, event: Event) -> Event:
        return dataclasses.replace(event, text=self._texts.get(self._ids[id(event)], ""))

    def shown(self, events: Sequence[Event]) -> tuple[Event, ...]:
        return tuple(dataclasses.replace(e, text=clip(self.full(e).text, MAX_EVENT_TEXT)) for e in events)


def briefing(
    conn: apsw.Connection,
    thread: thread_store.ThreadRow,
    *,
    now_ms: int,
    periods: Periods,
    events_limit: int,
    since_ms: int | None = None,
) -> Briefing:
    """The briefing of one thread (inside the caller's read snapshot)."""
    members = thread_store.members(conn, thread.rowid)
    pairs = thread_events(thread_store.event_rows(conn, thread.rowid))
    events = [e for _, e in pairs]
    ids = {id(e): tid for tid, e in pairs}  # the same Event objects flow through the rules below
    last_ms = thread_store.last_activity(conn, thread)
    life = lifecycle_of(thread, last_ms, now_ms, periods)
    items = open_items(events)
    state = reduce_state(events, life, items)
    kind, kind_set = thread_type(thread.type, {e.kind for e in events})
    blockers = _newest_first(items.blockers)
    questions = _newest_first(items.questions)
    decisions = _newest_first([e for e in events if e.kind == "decision"], MAX_DECISIONS)
    conclusions = [e for e in events if e.kind == "conclusion"]
    latest = conclusions[-1] if conclusions else None
    recent = _newest_first(events, events_limit)
    # The headline falls back to the latest conclusion or decision when there is no description.
    fallback = next((e for e in reversed(events) if e.kind in ("conclusion", "decision")), None)
    new_events: list[Event] = []
    if since_ms is not None:
        new_events = _newest_first([e for e in events if e.at > since_ms], events_limit)
    shown = [*blockers, *questions, *decisions, *recent, *new_events, *(e for e in (latest, fallback) if e)]
    texts = _Texts(conn, ids, shown)
    head = BriefingThread(
        name=thread.name,
        description=thread.description,
        headline=headline(thread.description, [texts.full(fallback)] if fallback else [], thread.name),
        type=kind,
        type_set=kind_set,
        status=thread.status,
        lifecycle=life,
        state=state,
        member_count=len(members),
        last_activity_at=last_ms,
    )
    changed = None
    if since_ms is not None:
        changed = _changed_since(conn, thread, members, events, since_ms, periods, state, texts.shown(new_events))
    return Briefing(
        thread=head,
        open_blockers=texts.shown(blockers),
        open_questions=texts.shown(questions),
        decisions=texts.shown(decisions),
        latest_conclusion=texts.shown([latest])[0] if latest else None,
        events=texts.shown(recent),
        members=tuple(members),
        changed_since=changed,
    )


async def read_briefing(
    store: UserStore, name: str, *, now_ms: int, periods: Periods, events_limit: int, since_ms: int | None = None
) -> Briefing:
    """The briefing of the thread named `name` (any case), or `thread_not_found`."""

    def read(conn: apsw.Connection) -> Briefing:
        thread = thread_store.require_thread(conn, name)
        return briefing(conn, thread, now_ms=now_ms, periods=periods, events_limit=events_limit, since_ms=since_ms)

    return await store.read(read)


def _changed_since(
    conn: apsw.Connection,
    thread: thread_store.ThreadRow,
    members: Sequence[MemberRow],
    events: Sequence[Event],
    since_ms: int,
    periods: Periods,
    state_now: State,
    new_events: tuple[Event, ...],
) -> ChangedSince:
    """What changed after `since_ms`: new events and members, and the state then and now.

    The state then is the reducer over the events of the sequences that were members by then,
    with the lifecycle as it stood then. An archive is known to predate `since` only when the
    registry entry has not changed since. `new_events` are the shown ones (newest first, limited).
    """
    joined = {m.sequence_id: m.joined_at for m in members}
    then_events = [e for e in events if e.at <= since_ms and joined.get(e.sequence_id, since_ms + 1) <= since_ms]
    new_members = [m for m in members if m.joined_at > since_ms]
    archived_then = thread.archived and thread.updated_at <= since_ms
    last_then = thread_store.last_activity(conn, thread, until_ms=since_ms)
    life_then = lifecycle(archived_then, min(last_then, since_ms), since_ms, periods.dormant_days, periods.closed_days)
    return ChangedSince(
        since=since_ms,
        new_events=new_events,
        new_event_count=sum(1 for e in events if e.at > since_ms),
        new_members=tuple(sorted(new_members, key=lambda m: m.joined_at, reverse=True)),
        state_then=reduce_state(then_events, life_then),
        state_now=state_now,
    )
