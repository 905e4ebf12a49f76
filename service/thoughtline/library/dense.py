"""The semantic side of search: every vector of a store in memory as int8 codes, scored per thought and per sequence.

One pass over a store's codes scores every phrasing of a query at once (`score_many`), after
which every thought has three numbers: the cosine of its whole text, of its best passage, and of
its sequence's mean vector. Reasoning steps lean on their sequence ("it" and "the table" in step 4
mean what step 1 named), so the sequence's vector is evidence for each of its thoughts (issue 8).

Codes take a byte per dimension with one scale per vector (issue 19: float32 made a 100k-thought
store's index 384 MB); cosines move by about 5e-4 against float32. The sequence cosine needs no
mean vectors: q·mean(S)/|mean(S)| is the sum of the sequence's whole-thought cosines over the
norm of their sum, so the index keeps one norm per sequence. Importing this module never loads
the model or onnxruntime.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import apsw
import numpy as np
from numpy.typing import NDArray

from thoughtline import resources
from thoughtline.domain.vector_keys import VECTOR_SLOTS
from thoughtline.library.int8_product import (
    CodeArray,
    FloatArray,
    PackedCodes,
    Queries,
    columns_of,
    dot_codes,
    quantize,
    quantize_into,
)
from thoughtline.storage import search as search_store
from thoughtline.storage import vector_scan

IntArray = NDArray[np.int64]
# A run of at least this many codes is packed for onnxruntime (numpy's float product over codes
# costs ~1 µs a vector; the packed one ~40 ns). Appends collect in open runs until then.
SEAL = 4096
# A full load packs this many vectors at a time, which bounds its transient copy (~24 MB).
PACK_RUN = 65536
MAX_OPEN = 8
# Appends add small packed runs; beyond this many the next refresh loads the store afresh.
MAX_PACKED = 64
BATCH = 8192
# Per-vector bytes beyond its codes (scale, slot, column sum); what `estimated_bytes` assumes.
OVERHEAD_PER_VECTOR = 12


@dataclass(frozen=True)
class Run:
    """A run of vectors' codes: open (numpy, row-major) until packed for onnxruntime."""

    scales: FloatArray
    codes: CodeArray | None = None  # n x dim while open
    packed: PackedCodes | None = None

    @property
    def size(self) -> int:
        return len(self.scales)

    @property
    def nbytes(self) -> int:
        if self.packed is not None:
            return self.packed.nbytes
        return int(self.scales.nbytes) + (int(self.codes.nbytes) if self.codes is not None else 0)

    def dot(self, queries: Queries) -> FloatArray:
        if self.packed is not None:
            return self.packed.dot(queries)
        assert self.codes is not None
        return dot_codes(self.codes, self.scales, queries)


def _pack(runs: Sequence[Run]) -> Run:
    codes = np.vstack([r.codes for r in runs if r.codes is not None])
    scales = np.concatenate([r.scales for r in runs])
    return Run(scales, packed=PackedCodes(columns_of(codes), scales))


def _merge_open(runs: list[Run]) -> list[Run]:
    """Packs a long enough tail of open runs, and merges open runs beyond MAX_OPEN."""
    first_open = next((i for i, r in enumerate(runs) if r.packed is None), len(runs))
    sealed, tail = runs[:first_open], runs[first_open:]
    if sum(r.size for r in tail) >= SEAL:
        return [*sealed, _pack(tail)]
    if len(tail) > MAX_OPEN:
        merged = Run(
            np.concatenate([r.scales for r in tail]), codes=np.vstack([r.codes for r in tail if r.codes is not None])
        )
        return [*sealed, merged]
    return runs


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

    @property
    def nbytes(self) -> int:
        arrays = (self.starts, self.thought_ids, self.slots, self.seq_ids, self.seq_of, self.seq_norms)
        return sum(int(a.nbytes) for a in arrays) + (int(self.order.nbytes) if self.order is not None else 0)

    @property
    def keys(self) -> IntArray:
        """Every vector's key, in key order."""
        counts = np.diff(np.append(self.starts, len(self.slots)))
        return np.repeat(self.thought_ids, counts) * VECTOR_SLOTS + self.slots.astype(np.int64)


def _empty_layout() -> Layout:
    i = np.zeros(0, dtype=np.int64)
    return Layout(None, i, i, np.zeros(0, np.uint8), i, np.zeros(0, np.int32), np.zeros(0, np.float32))


def _layout(keys: IntArray, thought_seqs: IntArray, seq_ids: IntArray, seq_norms: FloatArray) -> Layout:
    """The layout of vectors with `keys` in column order; `thought_seqs` maps each thought in key order."""
    order = None if bool(np.all(keys[1:] > keys[:-1])) else np.argsort(keys, kind="stable")
    ordered = keys if order is None else keys[order]
    starts = np.flatnonzero((ordered % VECTOR_SLOTS) == 0)
    seq_of = np.searchsorted(seq_ids, thought_seqs).astype(np.int32)
    slots = (ordered % VECTOR_SLOTS).astype(np.uint8)
    return Layout(order, starts, ordered[starts] // VECTOR_SLOTS, slots, seq_ids, seq_of, seq_norms)


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
class _Loaded:
    """What one full load or append read: runs of codes, keys in column order, whole vectors' sums."""

    runs: list[Run] = field(default_factory=list)
    keys: list[IntArray] = field(default_factory=list)
    whole_keys: list[IntArray] = field(default_factory=list)  # thought ids of whole vectors
    whole_seqs: list[IntArray] = field(default_factory=list)
    whole_vectors: list[FloatArray] = field(default_factory=list)  # kept only by appends
    sums: FloatArray | None = None  # full loads: per sequence of `seq_ids`, summed as read
    seq_ids: IntArray | None = None


def _accumulate(sums: FloatArray, rows: NDArray[np.intp], vectors: FloatArray) -> None:
    """sums[rows[i]] += vectors[i], by runs: a store's whole vectors come mostly a sequence at a time
    (np.add.at row by row cost ~10x more)."""
    if not len(rows):
        return
    runs = np.flatnonzero(np.concatenate(([True], rows[1:] != rows[:-1])))
    np.add.at(sums, rows[runs], np.add.reduceat(vectors, runs, axis=0))


def _add_whole(out: _Loaded, keys: IntArray, seqs: IntArray, vectors: FloatArray) -> None:
    whole = (keys % VECTOR_SLOTS) == 0
    out.whole_keys.append(keys[whole] // VECTOR_SLOTS)
    out.whole_seqs.append(seqs[whole])
    if out.sums is not None and out.seq_ids is not None:
        _accumulate(out.sums, np.searchsorted(out.seq_ids, seqs[whole]), vectors[whole])
    else:
        out.whole_vectors.append(vectors[whole])


def _sequences_of_thoughts(conn: apsw.Connection, dim: int) -> tuple[IntArray, IntArray, _Loaded]:
    """Every thought's id and sequence, and an empty load that sums whole vectors per sequence."""
    pairs = np.asarray(vector_scan.thought_sequences(conn), dtype=np.int64).reshape(-1, 2)
    thought_ids, thought_seqs = pairs[:, 0], pairs[:, 1]
    seq_ids = np.unique(thought_seqs)
    return thought_ids, thought_seqs, _Loaded(sums=np.zeros((len(seq_ids), dim), dtype=np.float32), seq_ids=seq_ids)


def _packed(codes: CodeArray, scales: FloatArray) -> Run:
    return Run(scales, packed=PackedCodes(columns_of(codes), scales))


class _RunBuffer:
    """Codes of a full load as they are read, packed for onnxruntime every PACK_RUN vectors.

    Packing runs on one worker thread while the next run is read and coded: onnxruntime and the
    transpose leave the GIL, so on two idle cores a 100k-thought load overlaps the two halves.
    """

    def __init__(self, dim: int, pool: ThreadPoolExecutor) -> None:
        self.dim, self.pool = dim, pool
        self.codes = np.empty((PACK_RUN, dim), dtype=np.int8)
        self.scales: list[FloatArray] = []
        self.used = 0
        self.runs: list[Future[Run]] = []

    def add(self, vectors: FloatArray) -> None:
        if self.used + len(vectors) > PACK_RUN:
            self.seal()
        self.scales.append(quantize_into(vectors, self.codes[self.used : self.used + len(vectors)]))
        self.used += len(vectors)

    def seal(self) -> None:
        if self.used:
            self.runs.append(self.pool.submit(_packed, self.codes[: self.used], np.concatenate(self.scales)))
            self.codes = np.empty((PACK_RUN, self.dim), dtype=np.int8)
            self.scales, self.used = [], 0

    def finish(self) -> list[Run]:
        if not self.runs and 0 < self.used < SEAL:
            # A small store stays in numpy: no onnxruntime session for a few thousand vectors.
            return [Run(np.concatenate(self.scales), codes=self.codes[: self.used].copy())]
        self.seal()
        return [run.result() for run in self.runs]


def _load_chunks(conn: apsw.Connection, dim: int) -> _Loaded:
    """Every vector, read from vec0's chunk tables and coded as it comes (never all floats at once)."""
    thought_ids, thought_seqs, out = _sequences_of_thoughts(conn, dim)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="index-pack") as pool:
        buffer = _RunBuffer(dim, pool)
        for chunk in vector_scan.vector_chunks(conn):
            if len(chunk.vectors) != 4 * dim * chunk.size:
                raise ValueError(f"vec0 chunk of {chunk.size} vectors is not of {dim} floats")
            bits = np.unpackbits(np.frombuffer(chunk.validity, dtype=np.uint8), bitorder="little")[: chunk.size]
            valid = bits.astype(bool)
            keys = np.frombuffer(chunk.keys, dtype=np.int64)
            vectors = np.frombuffer(chunk.vectors, dtype=np.float32).reshape(chunk.size, dim)
            if not valid.all():
                keys, vectors = keys[valid], vectors[valid]
            # A vector whose thought is gone (not possible inside one snapshot: a trigger deletes
            # both) would have no sequence; it is dropped rather than guessed.
            owner = keys // VECTOR_SLOTS
            at = np.minimum(np.searchsorted(thought_ids, owner), max(len(thought_ids) - 1, 0))
            known = thought_ids[at] == owner if len(thought_ids) else np.zeros(len(keys), dtype=bool)
            if not known.all():
                keys, vectors, at = keys[known], vectors[known], at[known]
            if not len(keys):
                continue
            out.keys.append(keys.copy())
            _add_whole(out, keys, thought_seqs[at], vectors)
            buffer.add(vectors)
        out.runs = buffer.finish()
    return out


def _load_rows(conn: apsw.Connection, after_key: int, out: _Loaded) -> _Loaded:
    """Vectors above `after_key` through the vec0 table (appends, and stores of another layout)."""
    for rows in vector_scan.vectors_with_sequence_batches(conn, after_key, BATCH):
        keys = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        seqs = np.fromiter((r[2] for r in rows), dtype=np.int64, count=len(rows))
        vectors = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
        out.keys.append(keys)
        _add_whole(out, keys, seqs, vectors)
        codes, scales = quantize(vectors)
        # Full batches are packed as they come (a full load through this path never holds two
        # copies of every code); a short last batch stays open for `_merge_open`.
        out.runs.append(_packed(codes, scales) if len(rows) >= SEAL and after_key == 0 else Run(scales, codes=codes))
    return out


def _sequence_sums(loaded: _Loaded) -> tuple[IntArray, FloatArray]:
    """Sequence ids and the sums of their whole vectors, from what a row read kept."""
    seqs = np.concatenate(loaded.whole_seqs) if loaded.whole_seqs else np.zeros(0, dtype=np.int64)
    ids, inverse = np.unique(seqs, return_inverse=True)
    dim = loaded.whole_vectors[0].shape[1] if loaded.whole_vectors else 0
    sums = np.zeros((len(ids), dim), dtype=np.float32)
    if len(seqs):
        np.add.at(sums, inverse, np.vstack(loaded.whole_vectors))
    return ids, sums


def _concat(parts: list[IntArray]) -> IntArray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


@dataclass
class DenseIndex:
    """All of a store's vectors as runs of int8 codes; appends load incrementally, anything else reloads.

    The index compares `search_state` on every query (cheap), so it never serves stale vectors.
    Readers take `_state` (runs and layout) once per query; refresh swaps it whole.
    """

    _state: tuple[list[Run], Layout] = field(default_factory=lambda: ([], _empty_layout()))
    # False reads every vector through the vec0 table, as a store of an unknown layout is read.
    read_chunks: bool = True
    # Called after a refresh changed what the index holds (the library keeps its memory budget).
    on_loaded: Callable[[], None] | None = None
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
        generation, max_id = search_store.vector_state(conn)
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
        dim = vector_scan.vector_dim(conn)
        if dim is None:
            return [], _empty_layout()
        if self.read_chunks and vector_scan.chunks_readable(conn):
            loaded = _load_chunks(conn, dim)
        else:
            loaded = _load_rows(conn, 0, _sequences_of_thoughts(conn, dim)[2])
        assert loaded.sums is not None
        assert loaded.seq_ids is not None
        whole_ids, whole_seqs = _concat(loaded.whole_keys), _concat(loaded.whole_seqs)
        # Each thought's sequence, in id order (the order of the layout's thoughts).
        by_id = np.argsort(whole_ids, kind="stable")
        norms = np.linalg.norm(loaded.sums, axis=1).astype(np.float32)
        return _merge_open(loaded.runs), _layout(_concat(loaded.keys), whole_seqs[by_id], loaded.seq_ids, norms)

    def _append(self, conn: apsw.Connection, runs: list[Run], layout: Layout) -> tuple[list[Run], Layout]:
        loaded = _load_rows(conn, self.max_id, _Loaded())
        if not loaded.runs:
            return runs, layout
        new_ids, new_sums = _sequence_sums(loaded)
        norms = self._grown_norms(runs, layout, new_ids, new_sums)
        seq_ids = np.union1d(layout.seq_ids, new_ids)
        all_norms = np.zeros(len(seq_ids), dtype=np.float32)
        all_norms[np.searchsorted(seq_ids, layout.seq_ids)] = layout.seq_norms
        all_norms[np.searchsorted(seq_ids, new_ids)] = norms
        new_keys = _concat(loaded.keys)
        old_count = len(layout.slots)
        order = (
            None
            if layout.order is None
            else np.concatenate([layout.order, np.arange(old_count, old_count + len(new_keys))])
        )
        thought_seqs = np.concatenate([layout.seq_ids[layout.seq_of], _concat(loaded.whole_seqs)])
        starts = np.concatenate([layout.starts, old_count + np.flatnonzero((new_keys % VECTOR_SLOTS) == 0)])
        slots = np.concatenate([layout.slots, (new_keys % VECTOR_SLOTS).astype(np.uint8)])
        thought_ids = np.concatenate([layout.thought_ids, new_keys[(new_keys % VECTOR_SLOTS) == 0] // VECTOR_SLOTS])
        seq_of = np.searchsorted(seq_ids, thought_seqs).astype(np.int32)
        grown = Layout(order, starts, thought_ids, slots, seq_ids, seq_of, all_norms)
        return _merge_open([*runs, *loaded.runs]), grown

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

    @staticmethod
    def _product(runs: list[Run], layout: Layout, queries: Queries) -> FloatArray:
        sims = np.concatenate([r.dot(queries) for r in runs], axis=1) if runs else np.zeros((1, 0), np.float32)
        return sims if layout.order is None else sims[:, layout.order]

    def score(self, query: FloatArray) -> Scores:
        """Whole, best-passage and sequence cosines of every thought for one query vector."""
        return self.score_many(np.asarray(query, dtype=np.float32)[None, :])[0]

    def score_many(self, queries: FloatArray) -> list[Scores]:
        """`score` of each row of `queries` (k x dim), all of them in one pass over the codes.

        The pass is bound by reading the codes, not by the multiply: four phrasings cost about
        1.3 times one.
        """
        runs, layout = self._state
        qs = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        if not runs or not len(layout.starts):
            empty_i, empty_f = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
            return [Scores(empty_i, empty_f, empty_f, empty_f, empty_f, empty_i, layout.slots) for _ in qs]
        sims = self._product(runs, layout, Queries.of(qs)).astype(np.float32, copy=False)
        whole = sims[:, layout.starts]
        best = np.maximum.reduceat(sims, layout.starts, axis=1)
        norms = np.maximum(layout.seq_norms, np.float32(1e-9))
        out = []
        for j in range(len(qs)):
            per_seq = np.bincount(layout.seq_of, weights=whole[j], minlength=len(layout.seq_ids)) / norms
            row = np.ascontiguousarray(sims[j])
            sequence = per_seq[layout.seq_of].astype(np.float32)
            out.append(Scores(layout.thought_ids, whole[j], best[j], sequence, row, layout.starts, layout.slots))
        return out
