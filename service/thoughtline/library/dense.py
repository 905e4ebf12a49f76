"""The semantic side of search: every vector of a store in memory as int8 codes, scored per thought and per sequence.

One pass over a store's codes scores every phrasing of a query at once (`score_many`), after
which every thought has three numbers: the cosine of its whole text, of its best passage, and of
its sequence's mean vector. Reasoning steps lean on their sequence ("it" and "the table" in step 4
mean what step 1 named), so the sequence's vector is evidence for each of its thoughts (issue 8).

Codes take a byte per dimension with one scale per vector (issue 19: float32 made a 100k-thought
store's index 384 MB); cosines move by about 5e-4 against float32. The sequence cosine needs no
mean vectors: q·mean(S)/|mean(S)| is the sum of the sequence's whole-thought cosines over the
norm of their sum, so the index keeps one norm per sequence. Reading the vectors into runs of
codes is `dense_runs.py`. Importing this module never loads the model or onnxruntime.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field

import apsw
import numpy as np
from numpy.typing import NDArray

from thoughtline import resources
from thoughtline.domain.vector_keys import VECTOR_SLOTS
from thoughtline.library import helping
from thoughtline.library.dense_runs import (
    Loaded,
    Run,
    concat,
    distinct,
    load_chunks,
    load_codes,
    load_rows,
    merge_open,
    product,
    sequence_sums,
    sequences_of_thoughts,
)
from thoughtline.library.int8_product import FloatArray, Queries
from thoughtline.storage import vector_codes, vector_scan
from thoughtline.storage import vectors as vector_store

IntArray = NDArray[np.int64]
# Appends add small packed runs; beyond this many the next refresh loads the store afresh.
MAX_PACKED = 64
# Per-vector bytes beyond its codes (scale, slot, column sum); what `estimated_bytes` assumes.
OVERHEAD_PER_VECTOR = 12


@dataclass(frozen=True)
class Passages:
    """Each thought's best vector without a Python step per thought (np.maximum.reduceat was 4x slower).

    Thoughts are taken most vectors first, so the ones with an n-th vector are a prefix of that
    order: each level is one gather and one in-place maximum over a prefix.
    """

    firsts: NDArray[np.int32]  # first vector of each thought, most vectors first
    inverse: NDArray[np.int32]  # where each thought (in id order) sits in that order
    levels: tuple[tuple[int, NDArray[np.int32]], ...]  # (thoughts with an n-th vector, where it is), n = 2, 3…

    @classmethod
    def of(cls, starts: IntArray, vectors: int) -> Passages:
        counts = np.diff(np.append(starts, vectors))
        by_count = np.argsort(-counts, kind="stable")
        inverse = np.empty(len(starts), dtype=np.int32)
        inverse[by_count] = np.arange(len(starts), dtype=np.int32)
        firsts, ordered = starts[by_count].astype(np.int32), counts[by_count]
        levels = []
        for offset in range(1, int(counts.max()) if len(counts) else 0):
            having = int(np.count_nonzero(ordered > offset))
            levels.append((having, firsts[:having] + np.int32(offset)))
        return cls(firsts, inverse, tuple(levels))

    @property
    def nbytes(self) -> int:
        return int(self.firsts.nbytes + self.inverse.nbytes) + sum(int(at.nbytes) for _, at in self.levels)

    def best(self, sims: FloatArray) -> FloatArray:
        """Each thought's highest cosine among its vectors (`sims`: one phrasing's, in key order)."""
        best = sims[self.firsts]
        for having, at in self.levels:
            np.maximum(best[:having], sims[at], out=best[:having])
        out: FloatArray = best[self.inverse]
        return out


@dataclass(frozen=True)
class Layout:
    """Key order of the vectors, thought starts, and each thought's sequence with its norm."""

    order: IntArray | None  # column of each vector in key order (None: columns are in key order)
    starts: IntArray  # where each thought's vectors begin, in key order
    thought_ids: IntArray
    slots: NDArray[np.uint8]  # slot of each vector, in key order
    seq_ids: IntArray  # sequence row ids, sorted
    seq_of: NDArray[np.int32]  # index into seq_ids of each thought
    seq_norms: FloatArray  # norm of the sum of each sequence's whole-thought vectors
    passages: Passages

    @property
    def nbytes(self) -> int:
        arrays = (self.starts, self.thought_ids, self.slots, self.seq_ids, self.seq_of, self.seq_norms)
        held = sum(int(a.nbytes) for a in arrays) + self.passages.nbytes
        return held + (int(self.order.nbytes) if self.order is not None else 0)


def _empty_layout() -> Layout:
    i = np.zeros(0, dtype=np.int64)
    empty = Passages.of(i, 0)
    return Layout(None, i, i, np.zeros(0, np.uint8), i, np.zeros(0, np.int32), np.zeros(0, np.float32), empty)


def _layout(keys: IntArray, thought_seqs: IntArray, seq_ids: IntArray, seq_norms: FloatArray) -> Layout:
    """The layout of vectors with `keys` in column order; `thought_seqs` maps each thought in key order."""
    order = None if bool(np.all(keys[1:] > keys[:-1])) else np.argsort(keys, kind="stable")
    ordered = keys if order is None else keys[order]
    starts = np.flatnonzero((ordered % VECTOR_SLOTS) == 0)
    seq_of = np.searchsorted(seq_ids, thought_seqs).astype(np.int32)
    slots = (ordered % VECTOR_SLOTS).astype(np.uint8)
    passages = Passages.of(starts, len(keys))
    return Layout(order, starts, ordered[starts] // VECTOR_SLOTS, slots, seq_ids, seq_of, seq_norms, passages)


@dataclass(frozen=True)
class Scores:
    """Per-thought semantic evidence for one query, thoughts in id order."""

    thought_ids: IntArray
    whole: FloatArray  # cosine of the whole thought's vector
    best: FloatArray  # cosine of its best vector (a passage, or the whole when it has none)
    sequence: FloatArray  # cosine of its sequence's mean vector
    sims: FloatArray  # every vector's cosine, in key order (for `best_slot`)
    starts: IntArray  # where each thought's vectors begin in `sims`
    slots: NDArray[np.uint8]  # each vector's slot, in key order

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
        return int(self.slots[start + int(np.argmax(self.sims[start:end]))])


@dataclass
class DenseIndex:
    """All of a store's vectors as runs of int8 codes; appends load incrementally, anything else reloads.

    The index compares `search_state` on every query (cheap), so it never serves stale vectors.
    Readers take `_state` (runs and layout) once per query; refresh swaps it whole.
    """

    _state: tuple[list[Run], Layout] = field(default_factory=lambda: ([], _empty_layout()))
    # False reads every vector through the vec0 table, as a store of an unknown layout is read.
    read_chunks: bool = True
    # False reads the floats even where the store keeps every vector's codes (and codes them).
    read_codes: bool = True
    # Called after a refresh changed what the index holds (the library keeps its memory budget).
    on_loaded: Callable[[], None] | None = None
    # The thread a big store's product shares its work with (the library's one); None: serial.
    helper: Executor | None = None
    generation: int = -1
    max_id: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def nbytes(self) -> int:
        """Bytes the index holds (codes, scales and layout)."""
        runs, layout = self._state
        return sum(r.nbytes for r in runs) + layout.nbytes

    @staticmethod
    def estimated_bytes(vector_count: int, dim: int = 384) -> int:
        """What an index of `vector_count` vectors will hold once loaded (before it is)."""
        return vector_count * (dim + OVERHEAD_PER_VECTOR)

    def __len__(self) -> int:
        return len(self._state[1].slots)

    def refresh(self, conn: apsw.Connection) -> None:
        """Bring the index in step with the store."""
        generation, max_id = vector_store.vector_state(conn)
        with self._lock:
            if generation == self.generation and max_id == self.max_id:
                return
            self._load(conn, generation, max_id)
        if self.on_loaded is not None:
            self.on_loaded()

    def _load(self, conn: apsw.Connection, generation: int, max_id: int) -> None:
        runs, layout = self._state
        if generation != self.generation or sum(r.packed is not None for r in runs) > MAX_PACKED:
            self._state = self._full(conn)
            # A full load frees ~100 MB of float blobs and temporaries per 100k thoughts; glibc
            # keeps them mapped (198 MB resident for a 96 MB index) until trimmed (114 MB).
            resources.return_freed_memory()
        else:
            self._state = self._append(conn, runs, layout)
        self.generation, self.max_id = generation, max_id

    def _full(self, conn: apsw.Connection) -> tuple[list[Run], Layout]:
        chunked = self.read_chunks and vector_scan.chunks_readable(conn)
        dim = vector_scan.chunk_dim(conn) if chunked else vector_scan.vector_dim(conn)
        if dim is None:
            return [], _empty_layout()
        loaded = load_codes(conn, dim) if self.read_codes and vector_codes.coded(conn) else None
        if loaded is None:
            loaded = load_chunks(conn, dim) if chunked else load_rows(conn, 0, sequences_of_thoughts(conn, dim)[2])
        assert loaded.sums is not None
        assert loaded.seq_ids is not None
        whole_ids, whole_seqs = concat(loaded.whole_keys), concat(loaded.whole_seqs)
        # Each thought's sequence, in id order (the order of the layout's thoughts).
        by_id = np.argsort(whole_ids, kind="stable")
        norms = np.linalg.norm(loaded.sums, axis=1).astype(np.float32)
        return merge_open(loaded.runs), _layout(concat(loaded.keys), whole_seqs[by_id], loaded.seq_ids, norms)

    def _append(self, conn: apsw.Connection, runs: list[Run], layout: Layout) -> tuple[list[Run], Layout]:
        loaded = load_rows(conn, self.max_id, Loaded())
        if not loaded.runs:
            return runs, layout
        new_ids, new_sums = sequence_sums(loaded)
        norms = self._grown_norms(runs, layout, new_ids, new_sums)
        seq_ids = distinct(np.concatenate([layout.seq_ids, new_ids]))
        all_norms = np.zeros(len(seq_ids), dtype=np.float32)
        all_norms[np.searchsorted(seq_ids, layout.seq_ids)] = layout.seq_norms
        all_norms[np.searchsorted(seq_ids, new_ids)] = norms
        new_keys = concat(loaded.keys)
        old_count = len(layout.slots)
        order = (
            None
            if layout.order is None
            else np.concatenate([layout.order, np.arange(old_count, old_count + len(new_keys))])
        )
        thought_seqs = np.concatenate([layout.seq_ids[layout.seq_of], concat(loaded.whole_seqs)])
        starts = np.concatenate([layout.starts, old_count + np.flatnonzero((new_keys % VECTOR_SLOTS) == 0)])
        slots = np.concatenate([layout.slots, (new_keys % VECTOR_SLOTS).astype(np.uint8)])
        thought_ids = np.concatenate([layout.thought_ids, new_keys[(new_keys % VECTOR_SLOTS) == 0] // VECTOR_SLOTS])
        seq_of = np.searchsorted(seq_ids, thought_seqs).astype(np.int32)
        passages = Passages.of(starts, len(slots))
        grown = Layout(order, starts, thought_ids, slots, seq_ids, seq_of, all_norms, passages)
        return merge_open([*runs, *loaded.runs]), grown

    def _grown_norms(self, runs: list[Run], layout: Layout, ids: IntArray, sums: FloatArray) -> FloatArray:
        """Norms of each touched sequence's sum after adding `sums`: |S + D|² = |S|² + 2 S·D + |D|².

        S·D is the sum of D's cosines with S's whole vectors, which the index itself gives: the
        touched sequences' added sums are scored as queries, a few at a time.
        """
        squared = np.einsum("sd,sd->s", sums, sums).astype(np.float64)
        at = np.minimum(np.searchsorted(layout.seq_ids, ids), max(len(layout.seq_ids) - 1, 0))
        existed = layout.seq_ids[at] == ids if len(layout.seq_ids) else np.zeros(len(ids), dtype=bool)
        rows = np.flatnonzero(existed)
        for start in range(0, len(rows), 8):
            part = rows[start : start + 8]
            norms = np.linalg.norm(sums[part], axis=1, keepdims=True)
            queries = Queries.of(sums[part] / np.maximum(norms, 1e-12))
            whole = self._product(runs, layout, queries)[:, layout.starts]
            for j, row in enumerate(part):
                mine = layout.seq_of == at[row]
                cross = float(whole[j, mine].sum()) * float(norms[j, 0])
                old = float(layout.seq_norms[at[row]])
                squared[row] += old * old + 2 * cross
        grown: FloatArray = np.sqrt(np.maximum(squared, 0.0)).astype(np.float32)
        return grown

    def _product(self, runs: list[Run], layout: Layout, queries: Queries) -> FloatArray:
        sims = product(runs, queries, self.helper) if runs else np.zeros((1, 0), np.float32)
        return sims if layout.order is None else sims[:, layout.order]

    def score(self, query: FloatArray) -> Scores:
        """Whole, best-passage and sequence cosines of every thought for one query vector."""
        return self.score_many(np.asarray(query, dtype=np.float32)[None, :])[0]

    def score_many(self, queries: FloatArray) -> list[Scores]:
        """`score` of each row of `queries` (k x dim), all of them in one pass over the codes.

        The pass is bound by reading the codes, not by the multiply: four phrasings cost about
        1.3 times one. A big store's pass is split between two threads (`dense_runs.product`).
        """
        runs, layout = self._state
        qs = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        if not runs or not len(layout.starts):
            empty_i, empty_f = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
            return [Scores(empty_i, empty_f, empty_f, empty_f, empty_f, empty_i, layout.slots) for _ in qs]
        sims = self._product(runs, layout, Queries.of(qs)).astype(np.float32, copy=False)
        norms = np.maximum(layout.seq_norms, np.float32(1e-9))

        def per_thought(row: FloatArray) -> Scores:
            whole = row[layout.starts]
            per_seq = np.bincount(layout.seq_of, weights=whole, minlength=len(layout.seq_ids)) / norms
            # Cast per sequence, then gather: the same float32s as casting the gathered float64s.
            sequence = per_seq.astype(np.float32)[layout.seq_of]
            best = layout.passages.best(row)
            return Scores(layout.thought_ids, whole, best, sequence, row, layout.starts, layout.slots)

        # One phrasing at a time (1-D gathers ran 4x faster than 2-D ones). numpy's gathers and
        # bincount leave the GIL, so a big store's later phrasings go to the helper meanwhile.
        rows = list(sims)
        split = len(rows) // 2 if len(layout.starts) >= helping.HELPED_THOUGHTS else 0
        later = helping.on_helper(self.helper if split else None, lambda: [per_thought(r) for r in rows[split:]])
        return [per_thought(r) for r in rows[:split]] + later()
