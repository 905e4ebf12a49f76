"""Which model made a store's vectors, in SQL: the recorded id, and replacing every vector at once.

The id lives in the store's `meta` table (key `embedder_id`), so no migration was needed. Stores
written before it was recorded have none; what that means is the library's decision
(`library/model_identity.py`). Callers own transactions.
"""

from __future__ import annotations

from typing import Any

import apsw

from thoughtline.storage import vector_codes

EMBEDDER_KEY = "embedder_id"


def recorded_embedder(conn: apsw.Connection) -> str | None:
    """The recorded id of the model that made the store's vectors, or None when none is recorded."""
    rows = conn.execute("SELECT value FROM meta WHERE key = ?", (EMBEDDER_KEY,)).fetchall()
    return str(rows[0][0]) if rows else None


def record_embedder(conn: apsw.Connection, model_id: str) -> None:
    """Record `model_id` as the model of the store's vectors (in the caller's transaction)."""
    conn.execute(
        "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (EMBEDDER_KEY, model_id),
    )


def replace_embedder(conn: apsw.Connection, model_id: str) -> int:
    """Drop every vector, queue every thought again and record `model_id`; returns how many are queued.

    Runs in the caller's write transaction: the old vectors and the old id go together, so no
    reader ever sees vectors of one model under the id of another. The keyword index is untouched.
    """
    conn.execute("DELETE FROM thought_vectors")
    vector_codes.drop_all(conn)
    conn.execute("INSERT OR IGNORE INTO vector_queue(thought_id) SELECT id FROM thoughts")
    # Not an append: an in-memory index sees the new generation and reloads (empty at first).
    conn.execute("UPDATE search_state SET generation = generation + 1, max_vector_id = 0 WHERE id = 1")
    record_embedder(conn, model_id)
    row: tuple[Any, ...] = conn.execute("SELECT count(*) FROM vector_queue").fetchall()[0]
    return int(row[0])
