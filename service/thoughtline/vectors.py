"""Vectors after commit: embedding queued thoughts, the reindex job, and the in-memory index.

Writes only queue a thought (a trigger in migration 0002_search); this module turns the queue
into vectors in batches, either from a background task after commits, at query time for what is
still missing (Lambda), or from `thoughtline reindex`. It imports the model only through the
`Embedder` protocol, so importing it never loads onnxruntime.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import apsw
import numpy as np
from numpy.typing import NDArray

from thoughtline import search_store
from thoughtline.search import embedding_text

if TYPE_CHECKING:
    from thoughtline.embed import Embedder

BATCH = 64
# How much of the previous thought is embedded with each thought (characters). Measured on
# LoCoMo; see bench/eval_locomo.py and the issue-5 report.
CONTEXT_CHARS = 0


def embed_pending(
    embedder: Embedder, pending: Sequence[search_store.PendingThought], context_chars: int = CONTEXT_CHARS
) -> list[tuple[int, bytes]]:
    """Embed queued thoughts; returns (thought id, float32 blob) rows ready for `store_vectors`."""
    if not pending:
        return []
    texts = [embedding_text(p.body, p.previous, context_chars) for p in pending]
    matrix = embedder.embed(texts)
    return [(p.thought_id, matrix[i].astype(np.float32).tobytes()) for i, p in enumerate(pending)]


def collect_pending(conn: apsw.Connection, limit: int = BATCH) -> list[search_store.PendingThought]:
    """Read up to `limit` queued thoughts (a read connection is enough)."""
    ids = search_store.pending_vector_ids(conn, limit)
    return search_store.pending_thoughts(conn, ids) if ids else []


def backfill(
    conn: apsw.Connection,
    embedder: Embedder,
    *,
    batch: int = BATCH,
    context_chars: int = CONTEXT_CHARS,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Embed and store every queued thought on one read-write connection; returns how many.

    Each batch commits on its own, so an interrupted run keeps what it finished. For the CLI,
    benchmarks and tests; a running server reads on a read connection, embeds outside any
    transaction, and hands `store_vectors` to its writer instead.
    """
    done = 0
    while True:
        pending = collect_pending(conn, batch)
        if not pending:
            return done
        rows = embed_pending(embedder, pending, context_chars)
        with conn:
            stored = search_store.store_vectors(conn, rows)
        # A thought deleted meanwhile is dequeued by its delete trigger, so the loop still ends.
        done += stored
        if progress is not None:
            progress(len(pending))


def reindex(conn: apsw.Connection, embedder: Embedder, *, show_progress: bool = True) -> int:
    """Rebuild the keyword index and every vector of a store, with a progress bar.

    For `thoughtline reindex`: after a model or tokenizer change, or to repair an index.
    Returns the number of thoughts embedded.
    """
    from tqdm import tqdm

    with conn:
        total = search_store.reset_index(conn)
    with tqdm(total=total, unit="thought", desc="embedding", disable=not show_progress) as bar:
        return backfill(conn, embedder, progress=bar.update)


MAX_BLOCKS = 8


@dataclass
class VectorIndex:
    """All of a store's vectors in memory as numpy blocks, for exact KNN in a long-lived process.

    sqlite-vec's Linux wheel has no SIMD, so its KNN costs ~70-90 ms at 100k vectors; a numpy
    product costs ~10. Each block is stored transposed (dim x n, contiguous): `q @ block` then
    streams memory in order, about twice as fast as `rows @ q` here. Appended vectors become a
    new small block (no copy of the big one); blocks are merged when there are too many. The
    index compares `search_state` on every query: appends load incrementally, anything else (a
    delete, a reindex) reloads it whole.
    """

    blocks: list[tuple[NDArray[np.int64], NDArray[np.float32]]] = field(default_factory=list)
    generation: int = -1
    max_id: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def refresh(self, conn: apsw.Connection) -> None:
        """Bring the blocks in step with the store (cheap when nothing changed)."""
        generation, max_id = search_store.vector_state(conn)
        with self._lock:
            if generation == self.generation and max_id == self.max_id:
                return
            full = generation != self.generation
            rows = search_store.vectors_after(conn, 0 if full else self.max_id)
            blocks = [] if full else list(self.blocks)
            if rows:
                ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
                mat = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
                blocks.append((ids, np.ascontiguousarray(mat.T)))
            if len(blocks) > MAX_BLOCKS:
                ids = np.concatenate([b[0] for b in blocks])
                blocks = [(ids, np.ascontiguousarray(np.hstack([b[1] for b in blocks])))]
            # Readers take `self.blocks` once per search, so swapping the list is safe without a lock.
            self.blocks = blocks
            self.generation, self.max_id = generation, max_id

    def __len__(self) -> int:
        return sum(int(ids.shape[0]) for ids, _ in self.blocks)

    def search(
        self, query: NDArray[np.float32], k: int, allowed: Sequence[int] | None = None
    ) -> list[tuple[int, float]]:
        """The k most similar vectors as (thought id, cosine similarity), best first."""
        q = query.astype(np.float32)
        id_parts: list[NDArray[np.int64]] = []
        sim_parts: list[NDArray[np.float32]] = []
        wanted = None if allowed is None else np.asarray(allowed, dtype=np.int64)
        for ids, mat_t in self.blocks:
            if wanted is not None:
                mask = np.isin(ids, wanted)
                ids, mat_t = ids[mask], mat_t[:, mask]
            id_parts.append(ids)
            sim_parts.append(q @ mat_t)
        if not id_parts:
            return []
        all_ids, sims = np.concatenate(id_parts), np.concatenate(sim_parts)
        if all_ids.shape[0] == 0:
            return []
        k = min(k, sims.shape[0])
        top = np.argpartition(-sims, k - 1)[:k]
        top = top[np.argsort(-sims[top])]
        return [(int(all_ids[i]), float(sims[i])) for i in top]
