"""How long a model change takes: re-queueing a store and embedding it again, per 1,000 thoughts.

Builds a store of reasoning-set dev thoughts (repeated to the size asked) whose vectors are
recorded as another model's, then times what the first embedding pass of a new Thoughtline does:
`vectors.adopt_model` (one transaction: drop every vector, queue every thought, record the id)
and `vectors.backfill` with the shipped MiniLM (the same batches `thoughtline reindex` runs; a
server runs them after commits or, on Lambda, a bounded batch per search). Prints JSON.

    python -m bench.reembed --thoughts 1000
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from thoughtline.domain.vector_keys import PASSAGE_MIN_CHARS, VECTOR_SLOTS, chunk_texts
from thoughtline.library import vectors
from thoughtline.library.embed import MiniLMEmbedder
from thoughtline.storage import embedder_ids
from thoughtline.storage import vectors as vector_store
from thoughtline.storage.db import connect, write_transaction
from thoughtline.storage.migrations import migrate

DEV = Path(__file__).resolve().parent / "data" / "reasoning" / "dev.json"
PREVIOUS = "previous-model"


def build(path: Path, thoughts: int) -> int:
    """A store of `thoughts` dev thoughts with random unit vectors of the previous model; returns vector count."""
    sequences = [[t["thought"] for t in s["thoughts"]] for s in json.loads(DEV.read_text())["sequences"]]
    conn = connect(path, "wal")
    migrate(conn)
    rng = np.random.default_rng(3)
    written, copy = 0, 0
    with write_transaction(conn):
        while written < thoughts:
            for n, bodies in enumerate(sequences):
                bodies = bodies[: thoughts - written]
                if not bodies:
                    break
                conn.execute(
                    "INSERT INTO sequences(public_id, title, total_thoughts, last_thought_number, thought_count, "
                    "created_at, updated_at) VALUES (?, ?, ?, ?, ?, 0, 0)",
                    (f"seq_{copy:016x}{n:016x}", f"copy {copy}", len(bodies), len(bodies), len(bodies)),
                )
                seq = conn.last_insert_rowid()
                for i, body in enumerate(bodies, start=1):
                    conn.execute(
                        "INSERT INTO thoughts(sequence_id, position, number, total, next_needed, body, created_at) "
                        "VALUES (?, ?, ?, ?, 1, ?, 0)",
                        (seq, i, i, len(bodies), body),
                    )
                written += len(bodies)
            copy += 1
    pending = vector_store.pending_thoughts(conn, vector_store.pending_vector_ids(conn, thoughts))
    rows = []
    for p in pending:
        count = len(chunk_texts(p.body, VECTOR_SLOTS, PASSAGE_MIN_CHARS))
        mat = rng.standard_normal((count, 384)).astype(np.float32)
        mat /= np.linalg.norm(mat, axis=1, keepdims=True)
        rows.append((p.thought_id, [r.tobytes() for r in mat]))
    with write_transaction(conn):
        vector_store.store_vectors(conn, rows, made_by=PREVIOUS)
    count = vector_store.vector_count(conn)
    conn.close()
    return count


def main() -> None:
    """Build, re-queue, re-embed, print the timings."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--thoughts", type=int, default=1_000)
    args = parser.parse_args()
    embedder = MiniLMEmbedder()
    embedder.embed(["warm the session up"])
    with tempfile.TemporaryDirectory(prefix="reembed-") as tmp:
        path = Path(tmp) / "store.sqlite3"
        stored = build(path, args.thoughts)
        conn = connect(path, "wal")
        t0 = time.perf_counter()
        queued = vectors.adopt_model(conn, embedder)
        t1 = time.perf_counter()
        embedded = vectors.backfill(conn, embedder)
        t2 = time.perf_counter()
        assert embedder_ids.recorded_embedder(conn) == embedder.model_id
        assert vector_store.vector_count(conn) == stored
        conn.close()
    per_k = 1_000 / args.thoughts
    print(
        json.dumps(
            {
                "thoughts": args.thoughts,
                "vectors": stored,
                "queued": queued,
                "embedded": embedded,
                "requeue_ms": round((t1 - t0) * 1000, 1),
                "embed_s": round(t2 - t1, 2),
                "seconds_per_1k_thoughts": round((t2 - t0) * per_k, 2),
                "load_average": [round(x, 2) for x in os.getloadavg()],
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
