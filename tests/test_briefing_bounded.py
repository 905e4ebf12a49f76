"""The bounded briefing (issue 18) says what the thread rules say over all of a thread's events.

`library/briefing.py` reads only the events it shows, through seeks per member
(`storage/thread_events.py`). Here random stores, written through the real write path with
branches, revisions, every event kind, equal timestamps and members joining late, are briefed
both ways: by the library, and by the pure rules of `domain/thread_state.py` applied to every
event of the thread, read with one plain query. The two must render the same JSON.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Any

import apsw
import pytest

from thoughtline.domain.arguments import EVENT_KINDS, ThoughtInput
from thoughtline.domain.thread_state import (
    MAX_EVENT_TEXT,
    Event,
    clip,
    event_kind,
    headline,
    lifecycle,
    open_items,
    reduce_state,
)
from thoughtline.domain.thread_types import thread_type
from thoughtline.errors import DomainError
from thoughtline.library.briefing import (
    MAX_DECISIONS,
    MAX_MEMBERS,
    MAX_OPEN_ITEMS,
    Briefing,
    BriefingThread,
    ChangedSince,
    Periods,
    briefing,
)
from thoughtline.library.threads import lifecycle_of
from thoughtline.storage import threads as thread_store
from thoughtline.storage.db import connect, write_transaction
from thoughtline.storage.migrations import migrate
from thoughtline.storage.thoughts import Written, append_thought
from thoughtline.wire.threads import briefing_json

DAY = 86_400_000
START = 1_790_000_000_000
THREADS = ("alpha", "beta", "gamma")
_ALL_EVENTS = (
    "SELECT t.id, t.event, t.next_needed, t.is_revision, t.created_at, s.public_id, t.number, b.name, "
    "substr(t.body, 1, 600) FROM thread_members m JOIN sequences s ON s.id = m.sequence_id "
    "JOIN thoughts t ON t.sequence_id = m.sequence_id LEFT JOIN branches b ON b.id = t.branch "
    "WHERE m.thread = ? ORDER BY t.created_at, t.id"
)


def _write_store(conn: apsw.Connection, rng: random.Random) -> None:
    """Sequences with branches, revisions and events, some in threads from their first thought."""
    ids = iter(range(10_000))
    with write_transaction(conn):
        for name in THREADS:
            description = "" if name == "gamma" else f"All about {name}. More."
            thread_store.create_thread(conn, name, description, START)
        at = START
        for _ in range(rng.randrange(6, 14)):
            seq: str | None = None
            joined = tuple(rng.sample(THREADS, rng.randrange(0, 3)))
            length = rng.randrange(1, 12)
            for n in range(1, length + 1):
                branch = n > 3 and rng.random() < 0.2
                revises = rng.randrange(1, n) if n > 1 and rng.random() < 0.2 else None
                inp = ThoughtInput(
                    thought=f"thought {n} " + " ".join(rng.choice("abcdefg") * 40 for _ in range(rng.randrange(1, 9))),
                    next_thought_needed=n < length and rng.random() > 0.1,
                    thought_number=n,
                    total_thoughts=length,
                    sequence_id=seq,
                    is_revision=True if revises else None,
                    revises_thought=revises,
                    branch_from_thought=2 if branch else None,
                    branch_id="side" if branch else None,
                    threads=joined if n == 1 else (),
                    event=rng.choice(EVENT_KINDS) if rng.random() < 0.5 else None,
                )
                at += rng.choice((0, 0, 1, 60_000, DAY))  # equal times too: ties go by thought id
                try:
                    result = append_thought(conn, inp, at, f"seq_{next(ids):032x}")
                except DomainError:
                    continue  # a revision of a thought its branch cannot see: the store stays as it was
                if isinstance(result, Written):
                    seq = result.sequence_id
        # Some sequences join later than their thoughts were written.
        for (seq_rowid,) in conn.execute("SELECT id FROM sequences").fetchall():
            if rng.random() < 0.4:
                thread = thread_store.require_thread(conn, rng.choice(THREADS))
                thread_store.add_member(conn, thread.rowid, int(str(seq_rowid)), "user", at + rng.randrange(0, 3 * DAY))


def _reference(
    conn: apsw.Connection, thread: thread_store.ThreadRow, now: int, limit: int, since: int | None
) -> Briefing:
    """The briefing as the rules give it over every event of the thread (the unbounded way)."""
    texts: dict[int, str] = {}
    events: list[Event] = []
    for _tid, explicit, next_needed, revision, at, seq, number, branch, body in conn.execute(
        _ALL_EVENTS, (thread.rowid,)
    ):
        found = event_kind(explicit, not next_needed, bool(revision))
        if found is not None:
            event = Event(found, at, seq, number, branch, "")
            texts[id(event)] = str(body)
            events.append(event)

    def shown(chosen: list[Event]) -> tuple[Event, ...]:
        return tuple(dataclasses.replace(e, text=clip(texts[id(e)], MAX_EVENT_TEXT)) for e in chosen)

    periods = Periods()
    members = thread_store.members(conn, thread.rowid)
    last_ms = thread_store.last_activity(conn, thread)
    life = lifecycle_of(thread, last_ms, now, periods)
    items = open_items(events)
    kind, kind_set = thread_type(thread.type, {e.kind for e in events})
    newest = events[::-1]
    conclusions = [e for e in newest if e.kind == "conclusion"]
    fallback = next((e for e in newest if e.kind in ("conclusion", "decision")), None)
    fallback_text = [dataclasses.replace(fallback, text=texts[id(fallback)])] if fallback else []
    changed = None
    if since is not None:
        joined = {m.sequence_id: m.joined_at for m in members}
        then = [e for e in events if e.at <= since and joined[e.sequence_id] <= since]
        last_then = thread_store.last_activity(conn, thread, until_ms=since)
        archived_then = thread.archived and thread.updated_at <= since
        life_then = lifecycle(archived_then, min(last_then, since), since, periods.dormant_days, periods.closed_days)
        changed = ChangedSince(
            since=since,
            new_events=shown([e for e in newest if e.at > since][:limit]),
            new_event_count=sum(1 for e in events if e.at > since),
            new_members=tuple(sorted((m for m in members if m.joined_at > since), key=lambda m: -m.joined_at))[
                :MAX_MEMBERS
            ],
            new_member_count=sum(1 for m in members if m.joined_at > since),
            state_then=reduce_state(then, life_then),
            state_now=reduce_state(events, life, items),
        )
    return Briefing(
        thread=BriefingThread(
            name=thread.name,
            description=thread.description,
            headline=headline(thread.description, fallback_text, thread.name),
            type=kind,
            type_set=kind_set,
            status=thread.status,
            lifecycle=life,
            state=reduce_state(events, life, items),
            member_count=len(members),
            last_activity_at=last_ms,
        ),
        open_blockers=shown(list(items.blockers[::-1])[:MAX_OPEN_ITEMS]),
        open_questions=shown(list(items.questions[::-1])[:MAX_OPEN_ITEMS]),
        open_blocker_count=len(items.blockers),
        open_question_count=len(items.questions),
        decisions=shown([e for e in newest if e.kind == "decision"][:MAX_DECISIONS]),
        latest_conclusion=shown(conclusions[:1])[0] if conclusions else None,
        events=shown(newest[:limit]),
        members=tuple(members[:MAX_MEMBERS]),
        changed_since=changed,
    )


@pytest.mark.parametrize("seed", range(40))
def test_a_bounded_briefing_equals_the_rules_over_every_event(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    conn = connect(tmp_path / "store.sqlite3", "wal")
    migrate(conn)
    _write_store(conn, rng)
    end = int(str(conn.execute("SELECT max(created_at) FROM thoughts").fetchall()[0][0]))
    for name in THREADS:
        thread = thread_store.require_thread(conn, name)
        for limit in (1, 3, 20):
            since = rng.choice((None, START + rng.randrange(0, max(1, end - START + 1))))
            now = end + rng.choice((0, 20 * DAY, 50 * DAY))
            got: dict[str, Any] = briefing_json(
                briefing(conn, thread, now_ms=now, periods=Periods(), events_limit=limit, since_ms=since)
            )
            assert got == briefing_json(_reference(conn, thread, now, limit, since)), (name, limit, since)
    conn.close()
