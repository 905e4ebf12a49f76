"""Vector SQL: the only queries over thought_vectors, vector_queue and search_state.

Owns the queue of thoughts waiting for their vectors, storing vectors (one per passage) under the
store's recorded model, what an in-memory index reads back to stay fresh, and resetting the whole
index when the model changes. Callers own transactions, as for the keyword side (`storage/search.py`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import apsw

from thoughtline.domain.vector_keys import VECTOR_SLOTS, vector_key
from thoughtline.storage import embedder_ids, vector_codes, vector_scan


@dataclass(frozen=True)
class PendingThought:
    """A thought still waiting for its vectors."""

    thought_id: int
    body: str


def _one(conn: apsw.Connection, sql: str, params: tuple[Any, ...] = ()) -> Any:
    """The first column of the first row (every caller's query returns exactly one row)."""
    return conn.execute(sql, params).fetchall()[0][0]


def pending_vector_ids(conn: apsw.Connection, limit: int = 1_000) -> list[int]:
    """Thoughts committed without a vector yet, oldest first."""
    return [
        int(r[0]) for r in conn.execute("SELECT thought_id FROM vector_queue ORDER BY thought_id LIMIT ?", (limit,))
    ]


def pending_count(conn: apsw.Connection) -> int:
    """How many thoughts wait for a vector."""
    return int(_one(conn, "SELECT count(*) FROM vector_queue"))


def pending_thoughts(conn: apsw.Connection, ids: Sequence[int]) -> list[PendingThought]:
    """Bodies of queued thoughts, in id order."""
    rows = conn.execute(
        "SELECT id, body FROM thoughts WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id",
        (json.dumps(list(ids)),),
    )
    return [PendingThought(int(r[0]), str(r[1])) for r in rows]


def store_vectors(conn: apsw.Connection, rows: Sequence[tuple[int, Sequence[bytes]]], *, made_by: str) -> int:
    """Store the vectors of queued thoughts (one per passage, at most VECTOR_SLOTS) and dequeue them.

    Returns how many thoughts were stored. A thought deleted (or edited) since it was read is no
    longer queued as it was, so its vectors are dropped here instead of leaving orphans; the
    caller runs this inside a write transaction. `made_by` is the id of the model that made them:
    when the store has since recorded another model (another process adopted it after these
    vectors were made), nothing is stored, so a store never holds vectors of two models. A store
    with no recorded id records `made_by` (the library adopts a model before it embeds).
    """
    if not rows:
        return 0
    recorded = embedder_ids.recorded_embedder(conn)
    if recorded is not None and recorded != made_by:
        return 0
    ids = [tid for tid, _ in rows]
    queued = {
        int(r[0])
        for r in conn.execute(
            "SELECT thought_id FROM vector_queue WHERE thought_id IN (SELECT value FROM json_each(?))",
            (json.dumps(ids),),
        )
    }
    keep = [(tid, blobs[:VECTOR_SLOTS]) for tid, blobs in rows if tid in queued and blobs]
    if not keep:
        return 0
    max_key = int(_one(conn, "SELECT max_vector_id FROM search_state WHERE id = 1"))
    for tid, blobs in keep:
        for slot in range(VECTOR_SLOTS):  # point deletes: sqlite-vec scans everything for ranges
            conn.execute("DELETE FROM thought_vectors WHERE vector_key = ?", (vector_key(tid, slot),))
        for slot, blob in enumerate(blobs):
            conn.execute(
                "INSERT INTO thought_vectors(vector_key, embedding) VALUES (?, ?)", (vector_key(tid, slot), blob)
            )
        conn.execute("DELETE FROM vector_queue WHERE thought_id = ?", (tid,))
    vector_codes.write_codes(conn, keep)
    lowest = vector_key(min(tid for tid, _ in keep), 0)
    highest = max(vector_key(tid, len(blobs) - 1) for tid, blobs in keep)
    # Appends above the highest stored key can be picked up incrementally by an in-memory index;
    # anything else (a backfilled gap) bumps the generation so it reloads.
    bump = 1 if lowest <= max_key else 0
    conn.execute(
        "UPDATE search_state SET generation = generation + ?, max_vector_id = max(max_vector_id, ?) WHERE id = 1",
        (bump, highest),
    )
    if recorded is None:
        embedder_ids.record_embedder(conn, made_by)
    return len(keep)


def vector_state(conn: apsw.Connection) -> tuple[int, int]:
    """(generation, highest stored vector key): what an in-memory index compares to stay fresh."""
    row: tuple[Any, ...] = conn.execute("SELECT generation, max_vector_id FROM search_state WHERE id = 1").fetchall()[0]
    return int(row[0]), int(row[1])


def vector_count(conn: apsw.Connection) -> int:
    """How many vectors are stored (a long thought has several); cheap at any size (`vector_scan`)."""
    return vector_scan.vector_count(conn)


def vectors_after(conn: apsw.Connection, after_key: int) -> list[tuple[int, bytes]]:
    """Every stored (vector key, vector) with a key above `after_key`, in key order."""
    return [
        (int(r[0]), bytes(r[1]))
        for r in conn.execute(
            "SELECT vector_key, embedding FROM thought_vectors WHERE vector_key > ? ORDER BY vector_key",
            (after_key,),
        )
    ]


def vectors_with_sequence_after(conn: apsw.Connection, after_key: int) -> list[tuple[int, bytes, int]]:
    """Every stored (vector key, vector, sequence row id) with a key above `after_key`, in key order."""
    return [
        (int(r[0]), bytes(r[1]), int(r[2]))
        for r in conn.execute(
            "SELECT v.vector_key, v.embedding, t.sequence_id FROM thought_vectors v "
            f"JOIN thoughts t ON t.id = v.vector_key / {VECTOR_SLOTS} WHERE v.vector_key > ? ORDER BY v.vector_key",
            (after_key,),
        )
    ]


def reset_index(conn: apsw.Connection, model_id: str) -> int:
    """Rebuild FTS from the thoughts, drop every vector, queue every thought again, record `model_id`.

    Returns the number of thoughts queued. Runs in the caller's write transaction.
    """
    # The index is contentless (it holds neighbours' text), so it is refilled rather than rebuilt.
    conn.execute("INSERT INTO thoughts_fts(thoughts_fts) VALUES ('delete-all')")
    conn.execute(
        "INSERT INTO thoughts_fts(rowid, body, context, title) SELECT id, body, context, title FROM thought_search_text"
    )
    conn.execute("DELETE FROM vector_queue")
    return embedder_ids.replace_embedder(conn, model_id)
