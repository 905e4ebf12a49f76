"""The `thread_briefing` assembly (SPEC §5.3), as a typed `Briefing`.

Reads rows through `storage/threads.py` and `storage/thread_events.py` inside one read snapshot
and applies the pure rules of `domain/thread_state.py` (events, open items, state, lifecycle) and
`domain/thread_types.py`; nothing here writes, and nothing here knows a wire shape:
`wire/threads.py` renders the JSON both surfaces send, the MCP layer adds the readable text.

A thread may hold thousands of events and a briefing shows a few dozen, so only those are read
(issue 18): the newest events, the newest decisions and conclusion, the latest outcome and event
the state rule reads, and the blockers and questions with what closed them. Each is a bounded
query; the result is the one the rules give over all of the thread's events.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import apsw

from thoughtline.domain.thread_state import (
    MAX_EVENT_TEXT,
    OUTCOME_KINDS,
    Event,
    Lifecycle,
    OpenItems,
    State,
    clip,
    event_kind,
    headline,
    lifecycle,
    state_of,
    still_open,
)
from thoughtline.domain.thread_types import TYPE_EVENT_KINDS, ThreadType, thread_type
from thoughtline.library.threads import Periods as Periods
from thoughtline.library.threads import lifecycle_of
from thoughtline.storage import thread_events
from thoughtline.storage import threads as thread_store
from thoughtline.storage.router import UserStore
from thoughtline.storage.thread_events import EVERY, Scope
from thoughtline.storage.threads import MemberRow

MAX_DECISIONS = 10
# A briefing is a bounded catch-up however long a thread has run: the newest open blockers and
# questions and the most recently updated members are listed, with counts of all of them.
MAX_OPEN_ITEMS = 10
MAX_MEMBERS = 20
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
    new_members: tuple[MemberRow, ...]  # the newest added, at most MAX_MEMBERS
    new_member_count: int
    state_then: State
    state_now: State


@dataclass(frozen=True)
class Briefing:
    """A thread's briefing; every event list is newest first and every event text clipped to 280.

    `open_blockers` / `open_questions` are the newest MAX_OPEN_ITEMS of those open, the counts say how
    many are open; `members` are the MAX_MEMBERS most recently updated (`thread.member_count` counts all).
    """

    thread: BriefingThread
    open_blockers: tuple[Event, ...]
    open_questions: tuple[Event, ...]
    decisions: tuple[Event, ...]
    latest_conclusion: Event | None
    events: tuple[Event, ...]
    members: tuple[MemberRow, ...]
    open_blocker_count: int = 0
    open_question_count: int = 0
    changed_since: ChangedSince | None = None


class _Events:
    """The events of one thread as the bounded queries return them, each remembering its thought."""

    def __init__(self, conn: apsw.Connection, thread_rowid: int) -> None:
        self._conn = conn
        self._thread = thread_rowid
        # id(event) -> (thought id, the event): the event is held so its id stays its own.
        self._thoughts: dict[int, tuple[int, Event]] = {}

    def _events(self, found: Iterable[thread_events.EventRow]) -> list[Event]:
        events = []
        for row in found:
            kind = event_kind(row.event, row.final, row.revision)
            if kind is not None:  # always: every row read is an event thought
                event = Event(kind, row.at, row.sequence_id, row.thought_number, row.branch_id, "")
                self._thoughts[id(event)] = (row.thought_id, event)
                events.append(event)
        return events

    def thought(self, event: Event) -> int:
        """The thought id of an event these queries returned."""
        return self._thoughts[id(event)][0]

    def newest(self, limit: int, kinds: str | tuple[str, ...] | None = None, scope: Scope = EVERY) -> list[Event]:
        """The `limit` newest events (of `kinds`, or any) within `scope`, newest first."""
        return self._events(thread_events.latest_events(self._conn, self._thread, limit, kinds, scope))

    def last(self, events: Iterable[Event | None]) -> Event | None:
        """The latest of these events in the thread's order (time, then thought id)."""
        present = [e for e in events if e is not None]
        return max(present, key=lambda e: (e.at, self.thought(e)), default=None)

    def state(
        self, life: Lifecycle, scope: Scope = EVERY, latest: Event | None = None
    ) -> tuple[State, OpenItems, tuple[int, int]]:
        """The reducer's state, the newest MAX_OPEN_ITEMS of each kind left open (oldest first), and the open counts.

        The open-item rule replays light rows of its four kinds; only the open items shown are
        read in full. The latest outcome is the latest of each outcome kind: blockers and
        questions are among the replayed rows, the others one query each. `latest` may pass
        the newest event of the scope when the caller has read it already.
        """
        items = thread_events.open_item_rows(self._conn, self._thread, scope)
        blockers, questions = still_open(items)
        outcome: str | None = None
        if not blockers and not questions:
            # Only now can the outcome decide (resolved) or the newest event (a setback: uncertain).
            last_of = {r.kind: (r.at, r.thought_id, r.kind) for r in items}  # the last row of each kind wins
            outcomes = [last_of[k] for k in OUTCOME_KINDS if k in last_of]
            others = tuple(sorted(OUTCOME_KINDS - set(thread_events.OPEN_ITEM_KINDS)))
            outcomes += [(e.at, self.thought(e), e.kind) for e in self.newest(1, others, scope)]
            outcome = max(outcomes, default=(0, 0, None))[2]
            if latest is None:
                latest = next(iter(self.newest(1, None, scope)), None)
        state = state_of(bool(blockers), bool(questions), outcome, latest.kind if latest else None, life)
        shown = OpenItems(self._in_full(blockers[-MAX_OPEN_ITEMS:]), self._in_full(questions[-MAX_OPEN_ITEMS:]))
        return state, shown, (len(blockers), len(questions))

    def _in_full(self, items: Sequence[thread_events.ItemRow]) -> tuple[Event, ...]:
        found = thread_events.events_by_id(self._conn, [r.thought_id for r in items]) if items else []
        return tuple(self._events(found))


def _newest_first(events: Sequence[Event]) -> list[Event]:
    return list(reversed(events))


class _Texts:
    """The shown events' texts, read in one query for all of them and clipped to 280."""

    def __init__(self, conn: apsw.Connection, found: _Events, shown: Sequence[Event]) -> None:
        self._found = found
        self._texts = thread_events.event_texts(conn, (found.thought(e) for e in shown))

    def full(self, event: Event) -> Event:
        return dataclasses.replace(event, text=self._texts.get(self._found.thought(event), ""))

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
    members = thread_store.members(conn, thread.rowid, MAX_MEMBERS)
    found = _Events(conn, thread.rowid)
    last_ms = thread_store.last_activity(conn, thread)
    life = lifecycle_of(thread, last_ms, now_ms, periods)
    recent = found.newest(events_limit)
    # The newest event is the first of `recent` whenever there is room for one.
    latest_event = recent[0] if recent else None
    state, items, (blocker_count, question_count) = found.state(life, latest=latest_event)
    kinds = thread_events.event_kinds(conn, thread.rowid, TYPE_EVENT_KINDS) if thread.type is None else set()
    kind, kind_set = thread_type(thread.type, kinds)
    blockers = _newest_first(items.blockers)
    questions = _newest_first(items.questions)
    decisions = found.newest(MAX_DECISIONS, "decision")
    latest = next(iter(found.newest(1, "conclusion")), None)
    # The headline falls back to the latest conclusion or decision when there is no description.
    fallback = found.last((latest, next(iter(decisions), None)))
    new_events: list[Event] = []
    if since_ms is not None:
        new_events = found.newest(events_limit, scope=Scope(after_ms=since_ms))
    shown = [*blockers, *questions, *decisions, *recent, *new_events, *(e for e in (latest, fallback) if e)]
    texts = _Texts(conn, found, shown)
    head = BriefingThread(
        name=thread.name,
        description=thread.description,
        headline=headline(thread.description, [texts.full(fallback)] if fallback else [], thread.name),
        type=kind,
        type_set=kind_set,
        status=thread.status,
        lifecycle=life,
        state=state,
        member_count=thread_store.member_count(conn, thread.rowid),
        last_activity_at=last_ms,
    )
    changed = None
    if since_ms is not None:
        changed = _changed_since(conn, thread, found, since_ms, periods, state, texts.shown(new_events))
    return Briefing(
        thread=head,
        open_blockers=texts.shown(blockers),
        open_questions=texts.shown(questions),
        decisions=texts.shown(decisions),
        latest_conclusion=texts.shown([latest])[0] if latest else None,
        events=texts.shown(recent),
        members=tuple(members),
        open_blocker_count=blocker_count,
        open_question_count=question_count,
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
    found: _Events,
    since_ms: int,
    periods: Periods,
    state_now: State,
    new_events: tuple[Event, ...],
) -> ChangedSince:
    """What changed after `since_ms`: new events and members (newest MAX_MEMBERS), and the state then and now.

    The state then is the reducer over the events of the sequences that were members by then,
    with the lifecycle as it stood then. An archive is known to predate `since` only when the
    registry entry has not changed since. `new_events` are the shown ones (newest first, limited).
    """
    archived_then = thread.archived and thread.updated_at <= since_ms
    last_then = thread_store.last_activity(conn, thread, until_ms=since_ms)
    life_then = lifecycle(archived_then, min(last_then, since_ms), since_ms, periods.dormant_days, periods.closed_days)
    state_then, _, _ = found.state(life_then, Scope(until_ms=since_ms, joined_by_ms=since_ms))
    return ChangedSince(
        since=since_ms,
        new_events=new_events,
        new_event_count=thread_events.count_events_after(conn, thread.rowid, since_ms),
        new_members=tuple(thread_store.members_joined_after(conn, thread.rowid, since_ms, MAX_MEMBERS)),
        new_member_count=thread_store.member_count(conn, thread.rowid, joined_after_ms=since_ms),
        state_then=state_then,
        state_now=state_now,
    )
