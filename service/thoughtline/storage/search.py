"""Search SQL: the only queries over thoughts_fts and keyword_queue, and what a result shows of a thought.

Typed functions over an apsw connection, returning plain tuples and dataclasses. Callers own
transactions: reads run inside the read pool's snapshot, writes inside the store writer's
transaction. The vector side (queue, vectors, index state) is `storage/vectors.py`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import apsw

from thoughtline.domain.thread_names import name_key

STATUSES = ("active", "paused", "completed", "abandoned")


@dataclass(frozen=True)
class SearchFilters:
    """Restrictions on which thoughts a search may return; every field optional."""

    sequence_id: str | None = None
    status: str | None = None
    since_ms: int | None = None
    until_ms: int | None = None
    thread: str | None = None

    @property
    def active(self) -> bool:
        """True when any restriction is set."""
        return any(v is not None for v in (self.sequence_id, self.status, self.since_ms, self.until_ms, self.thread))


@dataclass(frozen=True)
class ThoughtRecord:
    """What a search result needs to know about one stored thought."""

    thought_id: int
    sequence_key: int
    sequence_id: str
    position: int
    number: int
    branch: str | None
    title: str
    status: str
    created_at: int
    body: str
    kind: str | None  # the sequence's free label


def _one(conn: apsw.Connection, sql: str, params: tuple[Any, ...] = ()) -> Any:
    """The first column of the first row (every caller's query returns exactly one row)."""
    return conn.execute(sql, params).fetchall()[0][0]


def _where(filters: SearchFilters) -> tuple[str, list[object]]:
    clauses: list[str] = []
    params: list[object] = []
    if filters.sequence_id is not None:
        clauses.append("s.public_id = ?")
        params.append(filters.sequence_id)
    if filters.status is not None:
        clauses.append("s.status = ?")
        params.append(filters.status)
    if filters.since_ms is not None:
        clauses.append("t.created_at >= ?")
        params.append(filters.since_ms)
    if filters.until_ms is not None:
        clauses.append("t.created_at <= ?")
        params.append(filters.until_ms)
    if filters.thread is not None:
        # Threads restrict search, never boost it (SPEC §5); only confirmed members count.
        clauses.append(
            "s.id IN (SELECT m.sequence_id FROM thread_members m JOIN threads th ON th.id = m.thread "
            "WHERE th.name_key = ?)"
        )
        params.append(name_key(filters.thread))
    return (" AND " + " AND ".join(clauses) if clauses else ""), params


@dataclass(frozen=True)
class ColumnWeights:
    """BM25 weights of the keyword index's columns (migration 0004_search_context)."""

    body: float = 1.0
    context: float = 0.1
    title: float = 0.5


def keyword_candidates(
    conn: apsw.Connection,
    match: str,
    filters: SearchFilters,
    limit: int,
    weights: ColumnWeights | None = None,
) -> list[tuple[int, float]]:
    """Best BM25 matches for an FTS5 MATCH expression as (thought id, score), higher = better."""
    w = weights or ColumnWeights()
    if not filters.active:
        # Every matching row is scored before the LIMIT, so joining each one to its thought and
        # sequence (needed only to filter) doubled the cost: 10.9 -> 5.1 ms at 100k thoughts.
        sql = "SELECT rowid, -bm25(thoughts_fts, ?, ?, ?) AS score FROM thoughts_fts WHERE thoughts_fts MATCH ? "
        return [
            (int(r[0]), float(r[1]))
            for r in conn.execute(sql + "ORDER BY score DESC LIMIT ?", (w.body, w.context, w.title, match, limit))
        ]
    where, params = _where(filters)
    sql = (
        "SELECT t.id, -bm25(thoughts_fts, ?, ?, ?) AS score FROM thoughts_fts "
        "JOIN thoughts t ON t.id = thoughts_fts.rowid JOIN sequences s ON s.id = t.sequence_id "
        f"WHERE thoughts_fts MATCH ?{where} ORDER BY score DESC LIMIT ?"
    )
    return [(int(r[0]), float(r[1])) for r in conn.execute(sql, (w.body, w.context, w.title, match, *params, limit))]


def bodies_matching(conn: apsw.Connection, matches: Sequence[str]) -> list[set[int]]:
    """For each FTS5 MATCH expression, the ids of every thought holding it in its own text (porter-stemmed).

    One posting-list scan per expression answers both "does this candidate hold the term?" and
    the term's document frequency; constraining rowids instead made FTS5 seek once per candidate,
    which cost ~10x more (issue 8).
    """
    sql = "SELECT rowid FROM thoughts_fts WHERE thoughts_fts MATCH ?"
    return [{int(r[0]) for r in conn.execute(sql, (f"body : ({m})",))} for m in matches]


# Every queued thought and the steps on either side of it: their rows hold its text as context.
# JOIN fixes the order (the queue first): without statistics the planner otherwise scanned
# every thought of the store and probed the queue with each.
_QUEUED_AND_NEIGHBOURS = (
    "SELECT n.id FROM keyword_queue q CROSS JOIN thoughts t ON t.id = q.thought_id "
    "CROSS JOIN thoughts n ON n.sequence_id = t.sequence_id AND n.position BETWEEN t.position - 1 AND t.position + 1"
)


def begin_keyword_batch(conn: apsw.Connection) -> None:
    """From here to `index_queued_keywords`, new thoughts are queued for the keyword index instead
    of indexed one by one (migration 0015). Call first in a write transaction."""
    conn.execute("INSERT OR IGNORE INTO keyword_batch(id) VALUES (1)")


def index_queued_keywords(conn: apsw.Connection) -> None:
    """Index every thought queued since `begin_keyword_batch`, and end the batch; call before COMMIT.

    Rows are rebuilt from `thought_search_text` exactly as the insert trigger would have left
    them. For a commit group of 16 appends one pass costs 13% fewer instructions per append than
    the trigger (callgrind) and ~25% less writer-thread time under load; for a lone append it
    costs more, so the store writer batches groups of two or more only.
    """
    conn.execute("DELETE FROM keyword_batch")
    if not _one(conn, "SELECT EXISTS (SELECT 1 FROM keyword_queue)"):
        return
    conn.execute(f"DELETE FROM thoughts_fts WHERE rowid IN ({_QUEUED_AND_NEIGHBOURS})")
    conn.execute(
        "INSERT INTO thoughts_fts(rowid, body, context, title) SELECT id, body, context, title "
        f"FROM thought_search_text WHERE id IN ({_QUEUED_AND_NEIGHBOURS})"
    )
    conn.execute("DELETE FROM keyword_queue")


def sequence_members(conn: apsw.Connection, keys: Sequence[int]) -> dict[int, set[int]]:
    """The thought ids of each given sequence row id."""
    out: dict[int, set[int]] = {k: set() for k in keys}
    rows = conn.execute(
        "SELECT sequence_id, id FROM thoughts WHERE sequence_id IN (SELECT value FROM json_each(?))",
        (json.dumps(list(keys)),),
    )
    for seq, tid in rows:
        out.setdefault(int(seq), set()).add(int(tid))
    return out


@dataclass(frozen=True)
class SequenceEnd:
    """What a result grouped by sequence shows of its sequence: size, last change, and where it ended."""

    thought_count: int
    updated_at: int
    # The latest thought of the main path (of any branch when the main path is empty).
    last_number: int
    last_branch: str | None
    last_body: str
    # Whether the sequence is finished: completed, or its latest thought needed no next one.
    finished: bool


def sequence_ends(conn: apsw.Connection, keys: Iterable[int]) -> dict[int, SequenceEnd]:
    """The `SequenceEnd` of each sequence row id (results grouped by sequence)."""
    wanted = list(keys)
    if not wanted:
        return {}
    rows = conn.execute(
        "SELECT s.id, s.thought_count, s.updated_at, s.status, t.number, b.name, t.body, t.next_needed "
        "FROM sequences s JOIN thoughts t ON t.id = (SELECT l.id FROM thoughts l WHERE l.sequence_id = s.id "
        "ORDER BY l.branch IS NOT NULL, l.position DESC LIMIT 1) LEFT JOIN branches b ON b.id = t.branch "
        "WHERE s.id IN (SELECT value FROM json_each(?))",
        (json.dumps(wanted),),
    )
    return {
        int(r[0]): SequenceEnd(
            thought_count=int(r[1]),
            updated_at=int(r[2]),
            last_number=int(r[4]),
            last_branch=None if r[5] is None else str(r[5]),
            last_body=str(r[6]),
            finished=str(r[3]) == "completed" or not int(r[7]),
        )
        for r in rows
    }


def filtered_thought_ids(conn: apsw.Connection, filters: SearchFilters) -> list[int]:
    """Ids of every thought the filters allow (the vector side scores only these)."""
    where, params = _where(filters)
    sql = f"SELECT t.id FROM thoughts t JOIN sequences s ON s.id = t.sequence_id WHERE 1 = 1{where}"
    return [int(r[0]) for r in conn.execute(sql, params)]


def neighbour_pairs(conn: apsw.Connection, ids: Iterable[int], filters: SearchFilters) -> list[tuple[int, int]]:
    """(thought, neighbour) for the thoughts written just before and after each given one (filters apply)."""
    wanted = list(ids)
    if not wanted:
        return []
    where, params = _where(filters)
    sql = (
        "SELECT c.id, t.id FROM thoughts c JOIN thoughts t ON t.sequence_id = c.sequence_id "
        "AND t.position IN (c.position - 1, c.position + 1) JOIN sequences s ON s.id = t.sequence_id "
        f"WHERE c.id IN (SELECT value FROM json_each(?)){where}"
    )
    return [(int(r[0]), int(r[1])) for r in conn.execute(sql, (json.dumps(wanted), *params))]


def load_thoughts(conn: apsw.Connection, ids: Iterable[int]) -> dict[int, ThoughtRecord]:
    """Result details for the given thought ids (missing ids are simply absent)."""
    wanted = list(ids)
    if not wanted:
        return {}
    rows = conn.execute(
        "SELECT t.id, s.id, s.public_id, t.position, t.number, b.name, s.title, s.status, t.created_at, t.body, "
        "s.kind "
        "FROM thoughts t JOIN sequences s ON s.id = t.sequence_id LEFT JOIN branches b ON b.id = t.branch "
        "WHERE t.id IN (SELECT value FROM json_each(?))",
        (json.dumps(wanted),),
    )
    return {
        int(r[0]): ThoughtRecord(
            thought_id=int(r[0]),
            sequence_key=int(r[1]),
            sequence_id=str(r[2]),
            position=int(r[3]),
            number=int(r[4]),
            branch=None if r[5] is None else str(r[5]),
            title=str(r[6]),
            status=str(r[7]),
            created_at=int(r[8]),
            body=str(r[9]),
            kind=None if r[10] is None else str(r[10]),
        )
        for r in rows
    }


def any_thought_matches(conn: apsw.Connection, filters: SearchFilters) -> bool:
    """Whether the filters leave at least one stored thought (an empty result then is no abstention)."""
    where, params = _where(filters)
    sql = f"SELECT 1 FROM thoughts t JOIN sequences s ON s.id = t.sequence_id WHERE 1 = 1{where} LIMIT 1"
    return bool(conn.execute(sql, params).fetchall())


def sequence_exists(conn: apsw.Connection, sequence_id: str) -> bool:
    """Whether the store holds a sequence with this public id."""
    return bool(conn.execute("SELECT 1 FROM sequences WHERE public_id = ?", (sequence_id,)).fetchall())


def thread_exists(conn: apsw.Connection, name: str) -> bool:
    """Whether a thread of this name exists (names compare case-insensitively)."""
    return bool(conn.execute("SELECT 1 FROM threads WHERE name_key = ?", (name_key(name),)).fetchall())


def thought_count(conn: apsw.Connection) -> int:
    """How many thoughts the store holds."""
    return int(_one(conn, "SELECT count(*) FROM thoughts"))
