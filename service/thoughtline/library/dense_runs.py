"""Reading a store's vectors into runs of int8 codes: vec0's chunks for a full load, rows for appends.

A full load reads vec0's chunk tables (`storage/vector_scan.py`), codes each chunk as it comes
and packs every PACK_RUN vectors for onnxruntime on a worker thread, so all the floats are never
in memory at once. Appends (and stores of an unknown vec0 layout) read rows of the virtual table.
Both sum each sequence's whole-thought vectors on the way, for the sequence norms (`dense.py`).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import apsw
import numpy as np
from numpy.typing import NDArray

from thoughtline.domain.vector_keys import VECTOR_SLOTS
from thoughtline.library.helping import on_helper
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
from thoughtline.storage import vector_codes, vector_scan

IntArray = NDArray[np.int64]
# A run of at least this many codes is packed for onnxruntime (numpy's float product over codes
# costs ~1 µs a vector; the packed one ~40 ns). Appends collect in open runs until then.
SEAL = 4096
# A full load packs this many vectors at a time, which bounds its transient copy (~24 MB).
PACK_RUN = 65536
MAX_OPEN = 8
BATCH = 8192


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

    def dot(self, queries: Queries, out: FloatArray | None = None) -> FloatArray:
        if self.packed is not None:
            return self.packed.dot(queries, out)
        assert self.codes is not None
        sims = dot_codes(self.codes, self.scales, queries)
        if out is None:
            return sims
        out[...] = sims
        return out


def product(runs: Sequence[Run], queries: Queries, helper: Executor | None = None) -> FloatArray:
    """k x n cosines of the coded queries with every run's vectors, runs side by side.

    With a `helper` (the library's one product thread) and two or more packed runs the later half
    goes to the helper while the caller does the first half: onnxruntime leaves the GIL, so on two
    cores a 100k-thought store's product takes about half the wall time for the same CPU. A caller
    whose half is done before the helper took the other (busy with another search's) does it
    itself.
    """
    sizes = [r.size for r in runs]
    out = np.empty((len(queries.scales), sum(sizes)), dtype=np.float32)
    bounds = np.concatenate(([0], np.cumsum(sizes))).tolist()

    def fill(indexes: range) -> None:
        for i in indexes:
            runs[i].dot(queries, out[:, bounds[i] : bounds[i + 1]])

    packed = sum(r.packed is not None for r in runs)
    if helper is None or packed < 2:
        fill(range(len(runs)))
        return out
    half = next(i for i, at in enumerate(bounds) if at >= bounds[-1] / 2)
    later = on_helper(helper, fill, range(half, len(runs)))
    fill(range(half))
    later()
    return out


def _pack(runs: Sequence[Run]) -> Run:
    return _packed(np.vstack([r.codes for r in runs if r.codes is not None]), np.concatenate([r.scales for r in runs]))


def merge_open(runs: list[Run]) -> list[Run]:
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


@dataclass
class Loaded:
    """What one full load or append read: runs of codes, keys in column order, whole vectors' sums."""

    runs: list[Run] = field(default_factory=list)
    keys: list[IntArray] = field(default_factory=list)
    whole_keys: list[IntArray] = field(default_factory=list)  # thought ids of whole vectors
    whole_seqs: list[IntArray] = field(default_factory=list)
    whole_vectors: list[FloatArray] = field(default_factory=list)  # kept only by appends
    sums: FloatArray | None = None  # full loads: per sequence of `seq_ids`, summed as read
    seq_ids: IntArray | None = None


def distinct(values: IntArray) -> IntArray:
    """The sorted distinct values (np.unique imports numpy.ma on first use: 75-110 ms of a first search)."""
    ordered = np.sort(values)
    out: IntArray = ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))] if len(ordered) else ordered
    return out


def _accumulate(sums: FloatArray, rows: NDArray[np.intp], vectors: FloatArray) -> None:
    """sums[rows[i]] += vectors[i], by runs: a store's whole vectors come mostly a sequence at a time
    (np.add.at row by row cost ~10x more)."""
    if not len(rows):
        return
    runs = np.flatnonzero(np.concatenate(([True], rows[1:] != rows[:-1])))
    np.add.at(sums, rows[runs], np.add.reduceat(vectors, runs, axis=0))


def _add_whole(out: Loaded, keys: IntArray, seqs: IntArray, vectors: FloatArray) -> None:
    whole = (keys % VECTOR_SLOTS) == 0
    out.whole_keys.append(keys[whole] // VECTOR_SLOTS)
    out.whole_seqs.append(seqs[whole])
    if out.sums is not None and out.seq_ids is not None:
        _accumulate(out.sums, np.searchsorted(out.seq_ids, seqs[whole]), vectors[whole])
    else:
        out.whole_vectors.append(vectors[whole])


def sequences_of_thoughts(conn: apsw.Connection, dim: int) -> tuple[IntArray, IntArray, Loaded]:
    """Every thought's id and sequence (in id order), and an empty load that sums whole vectors per sequence."""
    rows = vector_scan.thought_sequences(conn)
    # fromiter over the flattened pairs: np.asarray of 100k tuples took 4x as long.
    pairs = np.fromiter(itertools.chain.from_iterable(rows), dtype=np.int64, count=2 * len(rows)).reshape(-1, 2)
    pairs = pairs[np.argsort(pairs[:, 0], kind="stable")]
    thought_ids, thought_seqs = pairs[:, 0], pairs[:, 1]
    seq_ids = distinct(thought_seqs)
    return thought_ids, thought_seqs, Loaded(sums=np.zeros((len(seq_ids), dim), dtype=np.float32), seq_ids=seq_ids)


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
        self.scratch = np.empty((0, dim), dtype=np.float32)

    def add(self, vectors: FloatArray) -> None:
        while len(vectors):
            if self.used == len(self.codes):
                self.seal()
            part = vectors[: len(self.codes) - self.used]
            if self.scratch.shape != part.shape:
                self.scratch = np.empty(part.shape, dtype=np.float32)
            self.scales.append(quantize_into(part, self.codes[self.used : self.used + len(part)], self.scratch))
            self.used += len(part)
            vectors = vectors[len(part) :]

    def add_codes(self, codes: CodeArray, scales: FloatArray) -> None:
        """Take codes already made (a store's own), `scales` one per row."""
        while len(codes):
            if self.used == len(self.codes):
                self.seal()
            take = min(len(codes), len(self.codes) - self.used)
            self.codes[self.used : self.used + take] = codes[:take]
            self.scales.append(scales[:take])
            self.used += take
            codes, scales = codes[take:], scales[take:]

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


def load_chunks(conn: apsw.Connection, dim: int) -> Loaded:
    """Every vector, read from vec0's chunk tables and coded as it comes (never all floats at once)."""
    thought_ids, thought_seqs, out = sequences_of_thoughts(conn, dim)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="index-pack") as pool:
        buffer = _RunBuffer(dim, pool)
        for chunk in vector_scan.vector_chunks(conn):
            keys, vectors = vector_codes.chunk_arrays(chunk, dim)
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


def load_codes(conn: apsw.Connection, dim: int) -> Loaded | None:
    """Every vector's codes as the store keeps them, in key order; None when some vector has none.

    A store coded by migration 0013 and `store_vectors` always has them all; None (read the
    floats instead) is for what those cannot have made, e.g. vectors of another slot layout.
    Sequence sums add the whole vectors' codes times their scales, the vectors the index scores.
    """
    expected, seen = vector_scan.vector_count(conn), 0
    out = Loaded()
    run_seqs: list[IntArray] = []
    run_sums: list[FloatArray] = []
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="index-pack") as pool:
        buffer = _RunBuffer(dim, pool)
        for rows in vector_codes.code_batches(conn):
            tids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            seqs = np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows))
            counts = np.fromiter((len(r[3]) // 4 for r in rows), dtype=np.int64, count=len(rows))
            scales = np.frombuffer(b"".join(r[3] for r in rows), dtype=np.float32)
            codes = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.int8)
            if len(codes) != dim * len(scales):
                buffer.finish()
                return None
            codes = codes.reshape(len(scales), dim)
            firsts = np.cumsum(counts) - counts
            out.keys.append(np.repeat(tids * VECTOR_SLOTS - firsts, counts) + np.arange(len(scales)))
            out.whole_keys.append(tids)
            out.whole_seqs.append(seqs)
            ids, sums = _segment_sums(seqs, codes[firsts], scales[firsts])
            run_seqs.append(ids)
            run_sums.append(sums)
            buffer.add_codes(codes, scales)
            seen += len(scales)
        runs = buffer.finish()
    if seen != expected:
        return None
    all_seqs = concat(run_seqs)
    out.seq_ids = distinct(all_seqs)
    out.sums = np.zeros((len(out.seq_ids), dim), dtype=np.float32)
    if len(all_seqs):
        np.add.at(out.sums, np.searchsorted(out.seq_ids, all_seqs), np.vstack(run_sums))
    out.runs = runs
    return out


def _segment_sums(seqs: IntArray, codes: CodeArray, scales: FloatArray) -> tuple[IntArray, FloatArray]:
    """Sum of scale x codes over each run of equal `seqs` (a store's thoughts come a sequence at a time).

    One small float product per run: casting and scaling the whole batch, then `np.add.reduceat`
    over rows, cost 9x as much.
    """
    starts = np.flatnonzero(np.concatenate(([True], seqs[1:] != seqs[:-1])))
    ends = np.append(starts[1:], len(seqs))
    sums = np.empty((len(starts), codes.shape[1]), dtype=np.float32)
    for row, (a, b) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
        sums[row] = scales[a:b] @ codes[a:b].astype(np.float32)
    return seqs[starts], sums


def load_rows(conn: apsw.Connection, after_key: int, out: Loaded) -> Loaded:
    """Vectors above `after_key` through the vec0 table (appends, and stores of another layout)."""
    for rows in vector_scan.vectors_with_sequence_batches(conn, after_key, BATCH):
        keys = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        seqs = np.fromiter((r[2] for r in rows), dtype=np.int64, count=len(rows))
        vectors = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
        out.keys.append(keys)
        _add_whole(out, keys, seqs, vectors)
        codes, scales = quantize(vectors)
        # Full batches are packed as they come (a full load through this path never holds two
        # copies of every code); a short last batch stays open for `merge_open`.
        out.runs.append(_packed(codes, scales) if len(rows) >= SEAL and after_key == 0 else Run(scales, codes=codes))
    return out


def sequence_sums(loaded: Loaded) -> tuple[IntArray, FloatArray]:
    """Sequence ids and the sums of their whole vectors, from what a row read kept."""
    seqs = np.concatenate(loaded.whole_seqs) if loaded.whole_seqs else np.zeros(0, dtype=np.int64)
    ids = distinct(seqs)
    inverse = np.searchsorted(ids, seqs)
    dim = loaded.whole_vectors[0].shape[1] if loaded.whole_vectors else 0
    sums = np.zeros((len(ids), dim), dtype=np.float32)
    if len(seqs):
        np.add.at(sums, inverse, np.vstack(loaded.whole_vectors))
    return ids, sums


def concat(parts: list[IntArray]) -> IntArray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
