"""Proposal SQL: the matching queue, backfill cursors, proposals, rejections and review reads.

Typed functions over an apsw connection inside the caller's transaction. Reads feed
`library/matching.py`; its writes re-check, inside the write transaction, everything that may
have changed since the read (a thread archived or re-described, a pair confirmed or rejected),
so a stale matching run can never propose a member, a rejected pair or an archived thread.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import apsw

from thoughtline.domain.arguments import MAX_PROPOSAL_ID
from thoughtline.domain.vector_keys import VECTOR_SLOTS
from thoughtline.storage.rows import rows

# Evidence is read up to this many characters of the thought; the listing clips it to a snippet.
_EVIDENCE_CHARS = 600


@dataclass(frozen=True)
class ThreadBasis:
    """What matching needs of an active thread."""

    rowid: int
    description: str
    description_version: int
    backfilled_version: int
    backfill_after: int
    updated_at: int

    @property
    def backfill_pending(self) -> bool:
        """Whether the thread still has to be matched against stored sequences."""
        return self.backfilled_version < self.description_version


@dataclass(frozen=True)
class ProposalRow:
    """One pending proposal as the review lists it."""

    rowid: int
    thread_rowid: int
    thread: str
    sequence_rowid: int
    sequence_id: str
    title: str
    similarity: float
    evidence: str
    proposed_at: int
    thread_archived: bool = False


def _ids(values: Iterable[int]) -> str:
    return json.dumps(list(values))


@dataclass(frozen=True)
class PendingWork:
    """Matching still to do: active threads whose backfill is pending, completed sequences queued."""

    threads: int
    sequences: int


def pending_work(conn: apsw.Connection) -> PendingWork:
    """How much matching is left (what a budgeted list reports as still running)."""
    found = rows(
        conn,
        "SELECT (SELECT count(*) FROM threads WHERE status = 'active' AND backfilled_version < description_version), "
        "(SELECT count(*) FROM thread_match_queue)",
    )
    return PendingWork(int(found[0][0]), int(found[0][1]))


def has_pending_work(conn: apsw.Connection) -> bool:
    """Whether a completed sequence waits in the queue or an active thread waits for its backfill."""
    found = rows(
        conn,
        "SELECT EXISTS (SELECT 1 FROM thread_match_queue) OR EXISTS (SELECT 1 FROM threads "
        "WHERE status = 'active' AND backfilled_version < description_version)",
    )
    return bool(found[0][0])


def active_threads(conn: apsw.Connection) -> list[ThreadBasis]:
    """Every active thread, oldest first (archived threads are never matched)."""
    found = rows(
        conn,
        "SELECT id, description, description_version, backfilled_version, backfill_after, updated_at FROM threads "
        "WHERE status = 'active' ORDER BY id",
    )
    return [ThreadBasis(int(r[0]), str(r[1]), int(r[2]), int(r[3]), int(r[4]), int(r[5])) for r in found]


def members_of(conn: apsw.Connection, thread_rowids: Sequence[int]) -> dict[int, list[int]]:
    """Confirmed member sequences (row ids) of each given thread."""
    out: dict[int, list[int]] = {t: [] for t in thread_rowids}
    for thread, seq in rows(
        conn,
        "SELECT thread, sequence_id FROM thread_members WHERE thread IN (SELECT value FROM json_each(?)) "
        "ORDER BY thread, sequence_id",
        (_ids(thread_rowids),),
    ):
        out[int(thread)].append(int(seq))
    return out


def queued(conn: apsw.Connection, limit: int) -> list[tuple[int, int]]:
    """Completed sequences waiting to be matched, as (sequence row id, queued_at), oldest first."""
    found = rows(
        conn, "SELECT sequence_id, queued_at FROM thread_match_queue ORDER BY queued_at, sequence_id LIMIT ?", (limit,)
    )
    return [(int(r[0]), int(r[1])) for r in found]


def sequences_after(conn: apsw.Connection, after_rowid: int, until_ms: int, limit: int) -> list[tuple[int, int]]:
    """(row id, created_at) of sequences above `after_rowid` created by `until_ms`, in order.

    The backfills' next batch. A backfill covers what was stored when the thread was created or
    re-described; sequences started later are matched when they complete, so an open one is
    never proposed early.
    """
    found = rows(
        conn,
        "SELECT id, created_at FROM sequences WHERE id > ? AND created_at <= ? ORDER BY id LIMIT ?",
        (after_rowid, until_ms, limit),
    )
    return [(int(r[0]), int(r[1])) for r in found]


def unembedded_thoughts(conn: apsw.Connection, sequence_rowids: Sequence[int], limit: int) -> list[int]:
    """Thoughts of these sequences still waiting for a vector (at most `limit`)."""
    found = rows(
        conn,
        "SELECT q.thought_id FROM vector_queue q JOIN thoughts t ON t.id = q.thought_id "
        "WHERE t.sequence_id IN (SELECT value FROM json_each(?)) ORDER BY q.thought_id LIMIT ?",
        (_ids(sequence_rowids), limit),
    )
    return [int(r[0]) for r in found]


def thought_vectors(conn: apsw.Connection, sequence_rowids: Sequence[int]) -> list[tuple[int, int, bytes]]:
    """(sequence, thought, vector) of every embedded thought of these sequences, in write order.

    A thought's own vector is its slot 0 (the whole text); passage vectors are not read. The
    join on `vector_key` is a point lookup in sqlite-vec (a range would scan the whole table).
    """
    found = rows(
        conn,
        "SELECT t.sequence_id, t.id, v.embedding FROM thoughts t "
        f"JOIN thought_vectors v ON v.vector_key = t.id * {VECTOR_SLOTS} "
        "WHERE t.sequence_id IN (SELECT value FROM json_each(?)) ORDER BY t.sequence_id, t.position",
        (_ids(sequence_rowids),),
    )
    return [(int(r[0]), int(r[1]), bytes(r[2])) for r in found]


def record_proposals(conn: apsw.Connection, picks: Sequence[tuple[int, int, float, int, int]]) -> int:
    """Insert (thread, sequence, similarity, evidence thought, proposed at) rows; returns how many are new.

    Skipped, whatever the caller computed: a thread no longer active, a member, a rejected pair,
    a pair already proposed (the earlier proposal stays as it is), or any proposal once the store
    has issued `MAX_PROPOSAL_ID`: a longer id could be listed but never accepted or rejected.
    """
    added = 0
    for thread, seq, similarity, evidence, at in picks:
        conn.execute(
            "INSERT INTO thread_proposals(thread, sequence_id, similarity, evidence_thought, proposed_at) "
            "SELECT ?1, ?2, ?3, ?4, ?5 WHERE EXISTS (SELECT 1 FROM threads WHERE id = ?1 AND status = 'active') "
            "AND EXISTS (SELECT 1 FROM sequences WHERE id = ?2) "
            "AND NOT EXISTS (SELECT 1 FROM thread_members WHERE thread = ?1 AND sequence_id = ?2) "
            "AND NOT EXISTS (SELECT 1 FROM thread_rejections WHERE thread = ?1 AND sequence_id = ?2) "
            "AND coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'thread_proposals'), 0) < ?6 "
            "ON CONFLICT DO NOTHING",
            (thread, seq, similarity, evidence, at, MAX_PROPOSAL_ID),
        )
        added += conn.changes()
    return added


def dequeue(conn: apsw.Connection, entries: Sequence[tuple[int, int]]) -> None:
    """Remove matched queue rows; a row queued again since it was read stays for the next run."""
    for seq, queued_at in entries:
        conn.execute("DELETE FROM thread_match_queue WHERE sequence_id = ? AND queued_at = ?", (seq, queued_at))


def advance_backfill(conn: apsw.Connection, thread: ThreadBasis, after_rowid: int, done: bool) -> None:
    """Record how far a thread's backfill got; at the end mark its description version matched.

    Nothing changes when the description changed since the run read it (that run is stale; the
    new version's backfill starts again from the first sequence), and the cursor never moves
    back (a concurrent run, the drain beside a list, may have gone further).
    """
    conn.execute(
        "UPDATE threads SET backfill_after = max(backfill_after, ?), backfilled_version = CASE WHEN ? "
        "THEN description_version ELSE backfilled_version END WHERE id = ? AND description_version = ?",
        (after_rowid, int(done), thread.rowid, thread.description_version),
    )


_PROPOSAL_SELECT = (
    "SELECT p.id, p.thread, th.name, p.sequence_id, s.public_id, s.title, p.similarity, "
    f"coalesce(substr(t.body, 1, {_EVIDENCE_CHARS}), ''), p.proposed_at, "
    "th.status = 'archived' "
    "FROM thread_proposals p JOIN threads th ON th.id = p.thread JOIN sequences s ON s.id = p.sequence_id "
    "LEFT JOIN thoughts t ON t.id = p.evidence_thought "
)


def _proposal(r: tuple[Any, ...]) -> ProposalRow:
    return ProposalRow(
        rowid=int(r[0]),
        thread_rowid=int(r[1]),
        thread=str(r[2]),
        sequence_rowid=int(r[3]),
        sequence_id=str(r[4]),
        title=str(r[5]),
        similarity=float(r[6]),
        evidence=str(r[7]),
        proposed_at=int(r[8]),
        thread_archived=bool(r[9]),
    )


def list_proposals(conn: apsw.Connection, thread_rowid: int | None, after_rowid: int, limit: int) -> list[ProposalRow]:
    """Pending proposals of active threads after `after_rowid`, oldest first (one thread or all)."""
    found = rows(
        conn,
        _PROPOSAL_SELECT + "WHERE th.status = 'active' AND (?1 IS NULL OR p.thread = ?1) AND p.id > ?2 "
        "ORDER BY p.id LIMIT ?3",
        (thread_rowid, after_rowid, limit),
    )
    return [_proposal(r) for r in found]


def count_proposals(conn: apsw.Connection, thread_rowid: int | None) -> int:
    """How many proposals `list_proposals` walks through in all (one thread's, or every active thread's)."""
    found = rows(
        conn,
        "SELECT count(*) FROM thread_proposals p JOIN threads th ON th.id = p.thread "
        "WHERE th.status = 'active' AND (?1 IS NULL OR p.thread = ?1)",
        (thread_rowid,),
    )
    return int(found[0][0])


def get_proposal(conn: apsw.Connection, rowid: int) -> ProposalRow | None:
    """One pending proposal, or None (an archived thread's too: the caller says why it can't be reviewed)."""
    found = rows(conn, _PROPOSAL_SELECT + "WHERE p.id = ?", (rowid,))
    return _proposal(found[0]) if found else None


def reject(conn: apsw.Connection, proposal: ProposalRow, now_ms: int) -> None:
    """Drop the proposal and remember the pair as rejected, forever."""
    conn.execute("DELETE FROM thread_proposals WHERE id = ?", (proposal.rowid,))
    conn.execute(
        "INSERT INTO thread_rejections(thread, sequence_id, rejected_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
        (proposal.thread_rowid, proposal.sequence_rowid, now_ms),
    )


def issued_proposal_ids(conn: apsw.Connection) -> int:
    """The highest proposal id this store ever issued (0 if none): no later proposal reuses it."""
    found = rows(conn, "SELECT seq FROM sqlite_sequence WHERE name = 'thread_proposals'")
    return int(found[0][0]) if found else 0


def reserve_proposal_ids(conn: apsw.Connection, issued: int) -> None:
    """Make every later proposal id exceed `issued` (another store's ids, carried by an import)."""
    conn.execute(
        "INSERT INTO sqlite_sequence(name, seq) SELECT 'thread_proposals', 0 "
        "WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'thread_proposals')"
    )
    conn.execute("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'thread_proposals'", (issued,))
