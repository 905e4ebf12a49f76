"""The semantic side of search: every vector of a store in memory, scored per thought and per sequence.

One query costs one matrix product over all of a store's vectors (about 2 ms at 5k thoughts with
passages, ~10 ms at 100k), after which every thought has three numbers: the cosine of its whole
text, of its best passage, and of its sequence's mean vector. Reasoning steps lean on their
sequence ("it" and "the table" in step 4 mean what step 1 named), so the sequence's vector is
evidence for each of its thoughts (issue 8). Importing this module never loads the model.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

import apsw
import numpy as np
from numpy.typing import NDArray

from thoughtline.domain.vector_keys import VECTOR_SLOTS
from thoughtline.storage import search as search_store

MAX_BLOCKS = 8
IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float32]


@dataclass(frozen=True)
class Block:
    """Vectors of a run of thoughts in key order: a thought's passages are contiguous, slot 0 first."""

    keys: IntArray
    sequences: IntArray  # sequence of each vector's thought
    matrix: FloatArray  # n x dim, row-major
    seq_ids: IntArray  # distinct sequences of this block
    seq_sums: FloatArray  # sum of their whole-thought vectors (len(seq_ids) x dim)
    seq_counts: IntArray


def _block(keys: IntArray, sequences: IntArray, matrix: FloatArray) -> Block:
    whole = (keys % VECTOR_SLOTS) == 0
    seq_ids, inverse = np.unique(sequences[whole], return_inverse=True)
    sums = np.zeros((len(seq_ids), matrix.shape[1]), dtype=np.float32)
    np.add.at(sums, inverse, matrix[whole])
    counts = np.bincount(inverse, minlength=len(seq_ids)).astype(np.int64)
    return Block(keys, sequences, np.ascontiguousarray(matrix), seq_ids, sums, counts)


def _cosines(matrix: FloatArray, qs: FloatArray) -> FloatArray:
    """n x k cosines of every row of `matrix` with every query row of `qs` (unit vectors)."""
    # einsum runs numpy's own single-threaded loop: OpenBLAS's threaded gemv was 3-5x slower on a
    # busy 2-core machine (threads fighting onnxruntime and each other), ~2 ms vs ~9 ms at 12k rows.
    out: FloatArray = np.einsum("nd,kd->nk", matrix, qs)
    return out


@dataclass(frozen=True)
class Layout:
    """What refresh precomputes over all blocks: key order, thought starts and sequence centroids."""

    keys: IntArray
    starts: IntArray
    thought_ids: IntArray
    centroids: FloatArray  # unit mean whole-thought vector of each sequence
    centroid_of: IntArray  # centroid row of each thought


def _layout(blocks: Sequence[Block], dim: int) -> Layout:
    keys = np.concatenate([b.keys for b in blocks]) if blocks else np.zeros(0, dtype=np.int64)
    seqs = np.concatenate([b.sequences for b in blocks]) if blocks else np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero((keys % VECTOR_SLOTS) == 0)
    if not blocks:
        return Layout(keys, starts, keys, np.zeros((0, dim), dtype=np.float32), starts)
    # Each block's sums, added up (a sequence may span blocks).
    uniq, inverse = np.unique(np.concatenate([b.seq_ids for b in blocks]), return_inverse=True)
    sums = np.zeros((len(uniq), dim), dtype=np.float32)
    np.add.at(sums, inverse, np.vstack([b.seq_sums for b in blocks]))
    sums /= np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-9)
    centroid_of = np.searchsorted(uniq, seqs[starts]).astype(np.int64)
    return Layout(keys, starts, keys[starts] // VECTOR_SLOTS, np.ascontiguousarray(sums), centroid_of)


@dataclass(frozen=True)
class Scores:
    """Per-thought semantic evidence for one query, thoughts in id order."""

    thought_ids: IntArray
    whole: FloatArray  # cosine of the whole thought's vector
    best: FloatArray  # cosine of its best vector (a passage, or the whole when it has none)
    sequence: FloatArray  # cosine of its sequence's mean vector
    sims: FloatArray  # every vector's cosine, in key order (for `best_slot`)
    starts: IntArray  # where each thought's vectors begin in `sims`
    keys: IntArray

    def lookup(self, ids: Sequence[int]) -> dict[int, int]:
        """Row of each id in these arrays (ids without vectors are left out)."""
        wanted = np.asarray(list(ids), dtype=np.int64)
        pos = np.searchsorted(self.thought_ids, wanted)
        pos = np.minimum(pos, max(len(self.thought_ids) - 1, 0))
        found = len(self.thought_ids) > 0
        return {int(t): int(p) for t, p in zip(wanted, pos, strict=True) if found and self.thought_ids[p] == t}

    def best_slot(self, row: int) -> int:
        """Which of the thought's vectors matched best (0 = the whole thought)."""
        start = int(self.starts[row])
        end = int(self.starts[row + 1]) if row + 1 < len(self.starts) else len(self.sims)
        return int(self.keys[start + int(np.argmax(self.sims[start:end]))] % VECTOR_SLOTS)


@dataclass
class DenseIndex:
    """All of a store's vectors as numpy blocks; appends load incrementally, anything else reloads.

    The index compares `search_state` on every query (cheap), so it never serves stale vectors.
    """

    blocks: list[Block] = field(default_factory=list)
    layout: Layout | None = None
    generation: int = -1
    max_id: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def refresh(self, conn: apsw.Connection) -> None:
        """Bring the blocks in step with the store."""
        generation, max_id = search_store.vector_state(conn)
        with self._lock:
            if generation == self.generation and max_id == self.max_id:
                return
            full = generation != self.generation
            rows = search_store.vectors_with_sequence_after(conn, 0 if full else self.max_id)
            blocks = [] if full else list(self.blocks)
            if rows:
                keys = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
                seqs = np.fromiter((r[2] for r in rows), dtype=np.int64, count=len(rows))
                mat = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
                blocks.append(_block(keys, seqs, mat))
            if len(blocks) > MAX_BLOCKS:
                keys = np.concatenate([b.keys for b in blocks])
                seqs = np.concatenate([b.sequences for b in blocks])
                blocks = [_block(keys, seqs, np.vstack([b.matrix for b in blocks]))]
            dim = blocks[0].matrix.shape[1] if blocks else 0
            # Readers take `self.blocks` and `self.layout` once per query; both are swapped together.
            self.blocks, self.layout = blocks, _layout(blocks, dim)
            self.generation, self.max_id = generation, max_id

    def __len__(self) -> int:
        return sum(int(b.keys.shape[0]) for b in self.blocks)

    def score(self, query: FloatArray) -> Scores:
        """Whole, best-passage and sequence cosines of every thought for one query vector."""
        return self.score_many(np.asarray(query, dtype=np.float32)[None, :])[0]

    def score_many(self, queries: FloatArray) -> list[Scores]:
        """`score` of each row of `queries` (k x dim), all of them in one matrix product.

        Several phrasings of one question cost one pass over the store's vectors, not one each:
        the pass is bound by reading the matrix, not by the multiply.
        """
        blocks, layout = self.blocks, self.layout
        qs = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
        if not blocks or layout is None or not len(layout.starts):
            empty_i, empty_f = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
            return [Scores(empty_i, empty_f, empty_f, empty_f, empty_f, empty_i, empty_i) for _ in qs]
        sims = np.concatenate([_cosines(b.matrix, qs) for b in blocks])  # n x k
        best = np.maximum.reduceat(sims, layout.starts, axis=0)
        per_thought = _cosines(layout.centroids, qs)[layout.centroid_of]
        out = []
        for j in range(qs.shape[0]):
            column = np.ascontiguousarray(sims[:, j])
            out.append(
                Scores(
                    layout.thought_ids,
                    column[layout.starts],
                    np.ascontiguousarray(best[:, j]),
                    np.ascontiguousarray(per_thought[:, j]),
                    column,
                    layout.starts,
                    layout.keys,
                )
            )
        return out
