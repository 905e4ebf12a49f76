"""Thread event SQL: the few events of a thread a briefing shows, found and bounded by the database.

An event is a member thought with an explicit `event` or a derived one (a final thought is a
conclusion, a revision an update; SPEC §5.3). A thread may hold thousands of them, and a briefing
shows a few dozen, so nothing here reads all of a thread's events: each query seeks the two
partial indexes of migration 0014 per member sequence and stops at what it returns.

- `thoughts_event_time` (sequence, time): the newest events of any kind.
- `thoughts_event_kinds` (sequence, event, time): the newest events of given kinds, and the
  open-item replay, which reads blockers, questions and what closes them, and no other kind.

Both are partial on the WHERE every query here repeats (`_EVENTISH`), and cover every column read,
so no thought row is visited except for the texts of the events shown (`event_texts`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, get_args

import apsw

from thoughtline.domain.thread_state import TaggedEventKind
from thoughtline.storage.rows import rows

# Events are read up to this many characters of the thought; the briefing clips them to 280.
_EVENT_TEXT_CHARS = 600
# The WHERE of both partial indexes; each query repeats it so the planner may use them.
_EVENTISH = "({t}.event IS NOT NULL OR {t}.next_needed = 0 OR {t}.is_revision = 1)"
_BY_TIME = "thoughts_event_time"
_BY_KIND = "thoughts_event_kinds"
# The explicit kinds that open and close open items (`domain/thread_state.open_items`).
OPEN_ITEM_KINDS = ("blocker", "blocker_cleared", "question", "answer")
_COLS = "t.id, t.event, t.next_needed, t.is_revision, t.created_at, s.public_id, t.number, b.name"
_NO_TIME, _NO_END = -(2**62), 2**62  # beyond every instant: no bound
_EXPLICIT = frozenset(get_args(TaggedEventKind))


@dataclass(frozen=True)
class EventRow:
    """A member thought that is an event (explicit or derived); its text is read only when shown."""

    thought_id: int
    event: str | None
    final: bool
    revision: bool
    at: int
    sequence_id: str
    thought_number: int
    branch_id: str | None


@dataclass(frozen=True)
class Scope:
    """Which of a thread's events count: written after `after_ms`, at or before `until_ms`, in
    sequences that joined at or before `joined_by_ms` (None: no bound)."""

    after_ms: int | None = None
    until_ms: int | None = None
    joined_by_ms: int | None = None


EVERY = Scope()  # all of a thread's events


def _event_row(r: tuple[Any, ...]) -> EventRow:
    return EventRow(int(r[0]), r[1], not r[2], bool(r[3]), int(r[4]), str(r[5]), int(r[6]), r[7])


def _named(conn: apsw.Connection, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    return list(conn.execute(sql, params))


def _window(t: str) -> str:
    # Written as one range on the time column (no OR), so each member's seek starts inside it.
    return f"{t}.created_at > coalesce(:after, :none) AND {t}.created_at <= coalesce(:until, :never)"


def _match(t: str, kinds: str | tuple[str, ...] | None) -> tuple[str, str]:
    """(index, SQL condition) for events of `kinds` (None: any kind).

    Explicit kinds, or the derived `conclusion` alone, are seeks on (sequence, event) of
    `thoughts_event_kinds`, in time order from there (several kinds: a per-member sort of their
    few rows). The kinds are from the domain's fixed list, checked here, so they may be literals.
    """
    if kinds is None:
        return _BY_TIME, "1"
    wanted = (kinds,) if isinstance(kinds, str) else kinds
    if wanted == ("conclusion",):
        return _BY_KIND, f"{t}.event IS NULL AND {t}.next_needed = 0"
    if not wanted or not set(wanted) <= _EXPLICIT:
        raise ValueError(f"latest_events takes explicit event kinds or 'conclusion' alone, not {wanted!r}")
    return _BY_KIND, f"{t}.event IN ({', '.join(repr(k) for k in wanted)})"


def latest_events(
    conn: apsw.Connection,
    thread_rowid: int,
    limit: int,
    kinds: str | tuple[str, ...] | None = None,
    scope: Scope = EVERY,
) -> list[EventRow]:
    """The `limit` newest events of a thread (of `kinds`, or any; within `scope`), newest first.

    Two bounded steps, both in the database: each member's newest matching event time (one
    index seek per member), then, from the members whose newest is among the `limit` newest of
    those (only they can hold the thread's `limit` newest events), at most `limit` events each.
    So a call reads about members + limit² index entries, however many events the thread has.
    Ties in time go to the higher thought id, as the full time order (created_at, id) has them.
    """
    index, match_x = _match("x", kinds)
    _, match_t = _match("t", kinds)
    newest_of = (
        f"SELECT x.created_at FROM thoughts x INDEXED BY {index} WHERE x.sequence_id = {{seq}} "
        f"AND {_EVENTISH.format(t='x')} AND {match_x} AND {_window('x')} "
        "ORDER BY x.created_at DESC, x.id DESC LIMIT 1 OFFSET {offset}"
    )
    sql = (
        "WITH latest AS MATERIALIZED ("
        f"  SELECT m.sequence_id AS seq, ({newest_of.format(seq='m.sequence_id', offset='0')}) AS at"
        "   FROM thread_members m WHERE m.thread = :thread AND (:joined IS NULL OR m.created_at <= :joined)"
        "), top AS ("
        "  SELECT seq FROM latest WHERE at >= coalesce("
        "    (SELECT at FROM latest WHERE at IS NOT NULL ORDER BY at DESC LIMIT 1 OFFSET :limit - 1), :none)"
        f") SELECT {_COLS} FROM top JOIN sequences s ON s.id = top.seq "
        f"JOIN thoughts t INDEXED BY {index} ON t.sequence_id = top.seq "
        "LEFT JOIN branches b ON b.id = t.branch "
        f"WHERE {_EVENTISH.format(t='t')} AND {match_t} AND t.created_at <= coalesce(:until, :never) "
        # One lower bound, so the member's seek starts at its limit-th newest: with two, SQLite may
        # seek on the window's and test the subquery on every row.
        "AND t.created_at >= max(coalesce(:after + 1, :none), "
        f"coalesce(({newest_of.format(seq='top.seq', offset=':limit - 1')}), :none)) "
        "ORDER BY t.created_at DESC, t.id DESC LIMIT :limit"
    )
    params = {
        "thread": thread_rowid,
        "joined": scope.joined_by_ms,
        "after": scope.after_ms,
        "until": scope.until_ms,
        "limit": limit,
        "none": _NO_TIME,
        "never": _NO_END,
    }
    return [_event_row(r) for r in _named(conn, sql, params)] if limit > 0 else []


class ItemRow(NamedTuple):
    """A blocker, question, cleared blocker or answer, as light as the open-item replay needs."""

    thought_id: int
    kind: str
    sequence_id: int  # the sequence's row id: the rule compares sequences, never shows them
    at: int


def open_item_rows(conn: apsw.Connection, thread_rowid: int, scope: Scope = EVERY) -> list[ItemRow]:
    """The thread's blockers, questions, cleared blockers and answers (within `scope`), oldest first.

    What is still open depends on the order of every opening and closing event, so these are
    all read, and no event of another kind: one seek per member and kind, index only. The ones
    left open are then read in full by `events_by_id`.
    """
    kinds = ", ".join(f"'{k}'" for k in OPEN_ITEM_KINDS)
    found = _named(
        conn,
        f"SELECT t.id, t.event, t.sequence_id, t.created_at FROM thread_members m "
        f"JOIN thoughts t INDEXED BY {_BY_KIND} ON t.sequence_id = m.sequence_id AND t.event IN ({kinds}) "
        f"WHERE m.thread = :thread AND (:joined IS NULL OR m.created_at <= :joined) AND {_EVENTISH.format(t='t')} "
        f"AND {_window('t')} ORDER BY t.created_at, t.id",
        {
            "thread": thread_rowid,
            "joined": scope.joined_by_ms,
            "after": scope.after_ms,
            "until": scope.until_ms,
            "none": _NO_TIME,
            "never": _NO_END,
        },
    )
    return [ItemRow(*r) for r in found]


def events_by_id(conn: apsw.Connection, thought_ids: Sequence[int]) -> list[EventRow]:
    """The event rows of these thoughts, in the order given."""
    found = _named(
        conn,
        f"SELECT {_COLS} FROM thoughts t JOIN sequences s ON s.id = t.sequence_id "
        "LEFT JOIN branches b ON b.id = t.branch WHERE t.id IN (SELECT value FROM json_each(:ids))",
        {"ids": json.dumps(list(thought_ids))},
    )
    by_id = {int(r[0]): _event_row(r) for r in found}
    return [by_id[i] for i in thought_ids if i in by_id]


def count_events_after(conn: apsw.Connection, thread_rowid: int, after_ms: int) -> int:
    """How many events of the thread were written after `after_ms` (a range per member, nothing older)."""
    found = _named(
        conn,
        f"SELECT count(*) FROM thread_members m JOIN thoughts t INDEXED BY {_BY_TIME} "
        "ON t.sequence_id = m.sequence_id AND t.created_at > :after "
        f"WHERE m.thread = :thread AND {_EVENTISH.format(t='t')}",
        {"thread": thread_rowid, "after": after_ms},
    )
    return int(found[0][0])


def event_kinds(conn: apsw.Connection, thread_rowid: int, kinds: frozenset[str]) -> set[str]:
    """Which of `kinds` (explicit ones) the member thoughts of a thread carry.

    One EXISTS per kind, each a seek on (sequence, event) per member that stops at the first.
    """
    ordered = sorted(kinds)
    probes = ", ".join(
        f"EXISTS (SELECT 1 FROM thread_members m JOIN thoughts t INDEXED BY {_BY_KIND} "
        f"ON t.sequence_id = m.sequence_id WHERE m.thread = ?1 AND {_EVENTISH.format(t='t')} AND t.event = ?{n})"
        for n in range(2, len(ordered) + 2)
    )
    found = rows(conn, f"SELECT {probes}", (thread_rowid, *ordered))[0] if ordered else ()
    return {kind for kind, present in zip(ordered, found, strict=True) if present}


def event_texts(conn: apsw.Connection, thought_ids: Iterable[int]) -> dict[int, str]:
    """The opening of each of these thoughts (as much as an event shows, and then some)."""
    found = rows(
        conn,
        f"SELECT id, substr(body, 1, {_EVENT_TEXT_CHARS}) FROM thoughts WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(sorted(set(thought_ids))),),
    )
    return {int(r[0]): str(r[1]) for r in found}
