"""Thread views: the thread object of `configure_thread` and the `thread_briefing` assembly.

Reads rows through `storage/threads.py` inside one read snapshot and applies the pure rules of
`domain/thread_state.py` (events, open items, state, lifecycle); nothing here writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

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
from thoughtline.domain.wording import counted
from thoughtline.storage import threads as thread_store
from thoughtline.storage.thoughts import iso

MAX_DECISIONS = 10


@dataclass(frozen=True)
class Periods:
    """How long a thread may go without activity before it is dormant, then closed (days)."""

    dormant_days: float = 14.0
    closed_days: float = 45.0


def thread_object(
    conn: apsw.Connection, thread: thread_store.ThreadRow, now_ms: int, periods: Periods
) -> dict[str, Any]:
    """A thread as `configure_thread` returns it."""
    stats = thread_store.thread_stats(conn, thread)
    return {
        "name": thread.name,
        "description": thread.description,
        "status": thread.status,
        "lifecycle": _lifecycle(thread, stats.last_activity_at, now_ms, periods),
        "memberCount": stats.member_count,
        "pendingProposals": stats.pending_proposals,
        "createdAt": iso(thread.created_at),
        "updatedAt": iso(thread.updated_at),
        "lastActivityAt": iso(stats.last_activity_at),
    }


def _lifecycle(thread: thread_store.ThreadRow, last_ms: int, now_ms: int, periods: Periods) -> Lifecycle:
    return lifecycle(thread.archived, last_ms, now_ms, periods.dormant_days, periods.closed_days)


def thread_events(rows: Sequence[thread_store.EventRow]) -> list[Event]:
    """The events among member thoughts (explicit or derived), in time order."""
    events: list[Event] = []
    for row in rows:
        kind = event_kind(row.event, row.final, row.revision)
        if kind is not None:
            events.append(Event(kind, row.at, row.sequence_id, row.thought_number, row.branch_id, row.text))
    return events


def event_dict(event: Event) -> dict[str, Any]:
    """An event on the wire."""
    return {
        "kind": event.kind,
        "at": iso(event.at),
        "sequenceId": event.sequence_id,
        "thoughtNumber": event.thought_number,
        "branchId": event.branch_id,
        "text": clip(event.text, MAX_EVENT_TEXT),
    }


def _newest_first(events: Sequence[Event], limit: int | None = None) -> list[dict[str, Any]]:
    ordered = list(reversed(events))
    return [event_dict(e) for e in (ordered if limit is None else ordered[:limit])]


def _member_dict(member: thread_store.MemberRow) -> dict[str, Any]:
    return {
        "sequenceId": member.sequence_id,
        "title": member.title,
        "status": member.status,
        "updatedAt": iso(member.updated_at),
        "addedBy": member.added_by,
        "addedAt": iso(member.joined_at),
    }


def briefing(
    conn: apsw.Connection,
    thread: thread_store.ThreadRow,
    *,
    now_ms: int,
    periods: Periods,
    events_limit: int,
    since_ms: int | None = None,
) -> dict[str, Any]:
    """The structured `thread_briefing` of one thread."""
    members = thread_store.members(conn, thread.rowid)
    events = thread_events(thread_store.event_rows(conn, thread.rowid))
    last_ms = thread_store.last_activity(conn, thread)
    life = _lifecycle(thread, last_ms, now_ms, periods)
    items = open_items(events)
    state = reduce_state(events, life, items)
    decisions = [e for e in events if e.kind == "decision"]
    conclusions = [e for e in events if e.kind == "conclusion"]
    result: dict[str, Any] = {
        "thread": {
            "name": thread.name,
            "description": thread.description,
            "headline": headline(thread.description, events, thread.name),
            "status": thread.status,
            "lifecycle": life,
            "state": state,
            "memberCount": len(members),
            "lastActivityAt": iso(last_ms),
        },
        "openBlockers": _newest_first(items.blockers),
        "openQuestions": _newest_first(items.questions),
        "decisions": _newest_first(decisions, MAX_DECISIONS),
        "latestConclusion": event_dict(conclusions[-1]) if conclusions else None,
        "events": _newest_first(events, events_limit),
        "members": [_member_dict(m) for m in members],
    }
    if since_ms is not None:
        result["changedSince"] = _changed_since(conn, thread, members, events, since_ms, periods, state, events_limit)
    return result


def _changed_since(
    conn: apsw.Connection,
    thread: thread_store.ThreadRow,
    members: Sequence[thread_store.MemberRow],
    events: Sequence[Event],
    since_ms: int,
    periods: Periods,
    state_now: State,
    events_limit: int,
) -> dict[str, Any]:
    """What changed after `since_ms`: new events and members, and the state then and now.

    The state then is the reducer over the events of the sequences that were members by then,
    with the lifecycle as it stood then. An archive is known to predate `since` only when the
    registry entry has not changed since.
    """
    joined = {m.sequence_id: m.joined_at for m in members}
    then_events = [e for e in events if e.at <= since_ms and joined.get(e.sequence_id, since_ms + 1) <= since_ms]
    new_events = [e for e in events if e.at > since_ms]
    new_members = [m for m in members if m.joined_at > since_ms]
    archived_then = thread.archived and thread.updated_at <= since_ms
    last_then = thread_store.last_activity(conn, thread, until_ms=since_ms)
    life_then = lifecycle(archived_then, min(last_then, since_ms), since_ms, periods.dormant_days, periods.closed_days)
    return {
        "since": iso(since_ms),
        "newEvents": _newest_first(new_events, events_limit),
        "newEventCount": len(new_events),
        "newMembers": [_member_dict(m) for m in sorted(new_members, key=lambda m: m.joined_at, reverse=True)],
        "stateThen": reduce_state(then_events, life_then),
        "stateNow": state_now,
    }


def render_briefing(result: dict[str, Any]) -> str:
    """A readable briefing: the thread line, open items, decisions, recent events, members."""
    t = result["thread"]
    lines = [
        f"Thread {t['name']!r} · {t['lifecycle']} · {t['state']} · {counted(t['memberCount'], 'sequence')}",
        t["headline"],
    ]

    def block(title: str, events: list[dict[str, Any]]) -> None:
        if events:
            lines.extend(["", title])
            lines.extend(
                f"- {e['at'][:10]} {e['kind']}: {e['text']} ({e['sequenceId']} #{e['thoughtNumber']})" for e in events
            )

    block("Open blockers:", result["openBlockers"])
    block("Open questions:", result["openQuestions"])
    block("Decisions:", result["decisions"])
    if result["latestConclusion"] is not None:
        block("Latest conclusion:", [result["latestConclusion"]])
    block("Recent events:", result["events"])
    if result["members"]:
        lines.extend(["", "Members:"])
        lines.extend(
            f"- {m['sequenceId']} [{m['status']}] {m['title']} (added by {m['addedBy']})" for m in result["members"]
        )
    changed = result.get("changedSince")
    if changed is not None:
        lines.extend(
            [
                "",
                f"Since {changed['since']}: {changed['newEventCount']} new events, {len(changed['newMembers'])} new "
                f"members; state {changed['stateThen']} → {changed['stateNow']}.",
            ]
        )
    return "\n".join(lines)
