"""Thread state rules (SPEC §5.3): events of member thoughts, open items, the state reducer, lifecycle.

Everything here is pure: the briefing reads rows from the store and hands them to these
functions, so each rule is tested directly on tables of cases.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypeVar, get_args

# The one list of event kinds (SPEC §5.3): callers may tag the first nine on a thought; the
# last two are derived only. `domain/arguments.py` and the schemas take their lists from here.
TaggedEventKind = Literal[
    "decision",
    "blocker",
    "blocker_cleared",
    "question",
    "answer",
    "milestone",
    "setback",
    "resolution",
    "observation",
]
DerivedEventKind = Literal["conclusion", "update"]
EventKind = Literal[TaggedEventKind, DerivedEventKind]
State = Literal["resolved", "blocked", "uncertain", "stable", "ongoing"]
Lifecycle = Literal["active", "dormant", "closed"]

DAY_MS = 86_400_000
MAX_EVENT_TEXT = 280
MAX_HEADLINE = 160
# The kinds whose latest occurrence decides whether a thread counts as resolved.
OUTCOME_KINDS = frozenset({"resolution", "blocker", "question", "setback"})
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")
_KINDS: dict[str, EventKind] = {kind: kind for kind in get_args(EventKind)}


@dataclass(frozen=True)
class Event:
    """One event of a thread: a member thought with an explicit or derived kind.

    `text` is the start of the thought as stored; it is clipped only when shown (`clip`), since a
    briefing shows a few of a thread's many events.
    """

    kind: EventKind
    at: int
    sequence_id: str
    thought_number: int
    branch_id: str | None
    text: str


def event_kind(explicit: str | None, final: bool, revision: bool) -> EventKind | None:
    """A thought's event kind: its explicit `event`, else final → conclusion, revision → update.

    One thought is one event; an explicit tag says more than either fallback, and a final
    revision is first of all where the reasoning ended.
    """
    if explicit is not None and explicit in _KINDS:
        return _KINDS[explicit]
    if final:
        return "conclusion"
    if revision:
        return "update"
    return None


def clip(text: str, limit: int) -> str:
    """Whitespace collapsed and cut to `limit` characters (an ellipsis marks a cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


@dataclass(frozen=True)
class OpenItems:
    """The blockers and questions no later event has closed, oldest first."""

    blockers: tuple[Event, ...]
    questions: tuple[Event, ...]

    @property
    def nothing_open(self) -> bool:
        """No open blocker and no open question."""
        return not self.blockers and not self.questions


class Opening(Protocol):
    """What the open-item rule reads of an event: its kind and its sequence."""

    @property
    def kind(self) -> str: ...

    @property
    def sequence_id(self) -> object: ...


_Item = TypeVar("_Item", bound=Opening)


def _close(open_events: list[_Item], closer: Opening) -> None:
    """Remove the most recent open item of the closer's sequence, else the thread's most recent."""
    for i in range(len(open_events) - 1, -1, -1):
        if open_events[i].sequence_id == closer.sequence_id:
            del open_events[i]
            return
    if open_events:
        open_events.pop()


def still_open(events: Iterable[_Item]) -> tuple[list[_Item], list[_Item]]:
    """(blockers, questions) no later event of `events` (in time order) closed, oldest first.

    Any kind of item that has a `kind` and a `sequence_id` will do, so a caller may replay light
    rows and look up only the ones left open.
    """
    blockers: list[_Item] = []
    questions: list[_Item] = []
    for event in events:
        if event.kind == "blocker":
            blockers.append(event)
        elif event.kind == "question":
            questions.append(event)
        elif event.kind == "blocker_cleared":
            _close(blockers, event)
        elif event.kind == "answer":
            _close(questions, event)
    return blockers, questions


def open_items(events: Sequence[Event]) -> OpenItems:
    """Open blockers and questions after `events` (in time order)."""
    blockers, questions = still_open(events)
    return OpenItems(tuple(blockers), tuple(questions))


def reduce_state(events: Sequence[Event], lifecycle: Lifecycle, items: OpenItems | None = None) -> State:
    """The thread's state from its events in time order; the first matching rule wins.

    `items` may pass `open_items(events)` when the caller has it already.
    """
    items = open_items(events) if items is None else items
    outcomes: list[str | None] = [None, *(e.kind for e in events if e.kind in OUTCOME_KINDS)]
    latest = events[-1].kind if events else None
    return state_of(bool(items.blockers), bool(items.questions), outcomes[-1], latest, lifecycle)


def state_of(
    blocked: bool, asking: bool, latest_outcome: str | None, latest: str | None, lifecycle: Lifecycle
) -> State:
    """The state rule on what it reads of the events, so a briefing need not hold them all:
    whether a blocker or a question is open, the kind of the latest outcome (of `OUTCOME_KINDS`)
    and the kind of the latest event."""
    if latest_outcome == "resolution" and not blocked and not asking:
        return "resolved"
    if blocked:
        return "blocked"
    if asking or latest == "setback":
        return "uncertain"
    if lifecycle in ("dormant", "closed"):
        return "stable"
    return "ongoing"


def lifecycle(archived: bool, last_activity_ms: int, now_ms: int, dormant_days: float, closed_days: float) -> Lifecycle:
    """`closed` when archived or idle for the closed period, `dormant` for the dormant period, else `active`."""
    if archived:
        return "closed"
    idle = now_ms - last_activity_ms
    if idle >= closed_days * DAY_MS:
        return "closed"
    if idle >= dormant_days * DAY_MS:
        return "dormant"
    return "active"


def first_sentence(text: str) -> str:
    """The first sentence of a text (up to its first . ! or ? followed by a space), collapsed."""
    flat = " ".join(text.split())
    end = _SENTENCE_END.search(flat)
    return flat[: end.end()] if end else flat


def headline(description: str, events: Sequence[Event], fallback: str) -> str:
    """≤ 160 chars: the description's first sentence, else the latest conclusion or decision, else `fallback`."""
    sentence = first_sentence(description)
    if sentence:
        return clip(sentence, MAX_HEADLINE)
    for event in reversed(events):
        if event.kind in ("conclusion", "decision"):
            return clip(event.text, MAX_HEADLINE)
    return clip(fallback, MAX_HEADLINE)
