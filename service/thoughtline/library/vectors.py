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

from thoughtline.library.search import chunk_texts
from thoughtline.storage import search as search_store
from thoughtline.storage.migrations import VECTOR_SLOTS

if TYPE_CHECKING:
    from thoughtline.library.embed import Embedder

BATCH = 64
# Thoughts longer than this (about MiniLM's 256-token window) also get passage vectors. Passages
# for every multi-sentence thought helped LoCoMo a little (hybrid recall@5 +0.01) but doubled the
# vectors, and KNN cost at 100k thoughts, so only text the model would otherwise cut gets them.
PASSAGE_MIN_CHARS = 0


def embed_pending(
    embedder: Embedder, pending: Sequence[search_store.PendingThought], passage_min_chars: int = PASSAGE_MIN_CHARS
) -> list[tuple[int, list[bytes]]]:
    """Embed queued thoughts; returns (thought id, [float32 blob per passage]) for `store_vectors`."""
    if not pending:
        return []
    owners: list[int] = []
    texts: list[str] = []
    for i, p in enumerate(pending):
        for text in chunk_texts(p.body, VECTOR_SLOTS, passage_min_chars):
            owners.append(i)
            texts.append(text)
    matrix = embedder.embed(texts).astype(np.float32)
    out: list[tuple[int, list[bytes]]] = [(p.thought_id, []) for p in pending]
    for row, owner in enumerate(owners):
        out[owner][1].append(matrix[row].tobytes())
    return out


def collect_pending(conn: apsw.Connection, limit: int = BATCH) -> list[search_store.PendingThought]:
    """Read up to `limit` queued thoughts (a read connection is enough)."""
    ids = search_store.pending_vector_ids(conn, limit)
    return search_store.pending_thoughts(conn, ids) if ids else []


def backfill(
    conn: apsw.Connection,
    embedder: Embedder,
    *,
    batch: int = BATCH,
    passage_min_chars: int = PASSAGE_MIN_CHARS,
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
        rows = embed_pending(embedder, pending, passage_min_chars)
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

    # (vector keys, vectors transposed to dim x n); a key is thought id * VECTOR_SLOTS + slot.
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
        """The k most similar thoughts as (thought id, cosine similarity of its best vector)."""
        q = query.astype(np.float32)
        key_parts: list[NDArray[np.int64]] = []
        sim_parts: list[NDArray[np.float32]] = []
        wanted = None if allowed is None else np.asarray(allowed, dtype=np.int64)
        for keys, mat_t in self.blocks:
            if wanted is not None:
                mask = np.isin(keys // VECTOR_SLOTS, wanted)
                keys, mat_t = keys[mask], mat_t[:, mask]
            key_parts.append(keys)
            sim_parts.append(q @ mat_t)
        if not key_parts:
            return []
        keys, sims = np.concatenate(key_parts), np.concatenate(sim_parts)
        if keys.shape[0] == 0:
            return []
        # Twice k vectors, then the best per thought (long thoughts have several vectors).
        fetch = min(2 * k, sims.shape[0])
        top = np.argpartition(-sims, fetch - 1)[:fetch]
        return search_store.best_per_thought(((int(keys[i]), float(sims[i])) for i in top), k)
