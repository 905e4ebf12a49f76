"""The int8 codes of every stored vector, one row per thought: what the in-memory index opens from.

Issue 19: opening a 100k-thought store read 384 MB of float vectors and coded them before its
first search. Each thought's vectors are now also kept as codes (`domain/int8_codes.py`: a byte
per dimension, one float32 scale per vector), written in the same transaction as the floats, so
an index reads a quarter of the bytes and codes nothing. The floats stay the source of truth
(vec0 keeps them for exact reads and for re-coding); the codes follow them: `store_vectors`
writes both, the triggers below delete both, and migration 0013 codes a store's existing
vectors once. numpy is imported only when there are vectors to code.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import apsw

from thoughtline.domain.vector_keys import VECTOR_SLOTS
from thoughtline.storage import vector_scan

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

# `codes` holds the thought's vectors' codes in slot order (slots x dim int8), `scales` one
# float32 per vector; a thought's slots are 0..n-1 (`store_vectors` writes them so). The thought's
# sequence (which never changes) is copied in, so opening an index reads this table alone.
CODES = """
CREATE TABLE vector_codes (
    thought_id  INTEGER PRIMARY KEY,
    sequence_id INTEGER NOT NULL,
    codes       BLOB NOT NULL,
    scales      BLOB NOT NULL
);
-- Fires for cascaded deletes too; the floats' own triggers delete the vectors beside these.
CREATE TRIGGER thoughts_codes_delete AFTER DELETE ON thoughts BEGIN
    DELETE FROM vector_codes WHERE thought_id = old.id;
END;
CREATE TRIGGER thoughts_codes_update AFTER UPDATE OF body ON thoughts BEGIN
    DELETE FROM vector_codes WHERE thought_id = old.id;
END;
"""
_INSERT = (
    "INSERT OR REPLACE INTO vector_codes(thought_id, sequence_id, codes, scales) "
    "SELECT id, sequence_id, ?2, ?3 FROM thoughts WHERE id = ?1"
)
# Rows per insert batch of the migration, and per read of `code_batches`.
BATCH = 8192


def _coded(rows: Sequence[tuple[int, Sequence[bytes]]]) -> list[tuple[int, bytes, bytes]]:
    """(thought id, codes, scales) of each thought's float32 blobs, coded in one numpy pass."""
    import numpy as np

    from thoughtline.domain.int8_codes import quantize

    counts = [len(blobs) for _, blobs in rows]
    joined = b"".join(itertools.chain.from_iterable(blobs for _, blobs in rows))
    floats = np.frombuffer(joined, dtype=np.float32).reshape(sum(counts), -1)
    codes, scales = quantize(floats)
    out, at = [], 0
    for (tid, _), n in zip(rows, counts, strict=True):
        out.append((tid, codes[at : at + n].tobytes(), scales[at : at + n].tobytes()))
        at += n
    return out


def write_codes(conn: apsw.Connection, rows: Sequence[tuple[int, Sequence[bytes]]]) -> None:
    """Code and store the vectors of each (thought id, float32 blob per slot); replaces earlier codes."""
    kept = [(tid, blobs) for tid, blobs in rows if blobs]
    # A store opened before its migrations ran (only tests and tools do) has no table yet.
    if kept and coded(conn):
        conn.executemany(_INSERT, _coded(kept))


def drop_all(conn: apsw.Connection) -> None:
    """Delete every code (with every vector, when the store changes model)."""
    conn.execute("DELETE FROM vector_codes")


def coded(conn: apsw.Connection) -> bool:
    """Whether the store keeps codes (migration 0013 ran): a store opened read-only may predate it."""
    rows = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'vector_codes'").fetchall()
    return bool(rows)


def code_batches(conn: apsw.Connection, batch: int = BATCH) -> Iterator[list[tuple[int, int, bytes, bytes]]]:
    """Every thought's (id, sequence row id, codes, scales) in id order, `batch` rows at a time."""
    cursor = conn.execute("SELECT thought_id, sequence_id, codes, scales FROM vector_codes ORDER BY thought_id")
    while True:
        rows: list[Any] = list(itertools.islice(cursor, batch))
        if not rows:
            return
        yield rows


def chunk_arrays(chunk: vector_scan.Chunk, dim: int) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
    """A vec0 chunk's valid keys and their float32 vectors (a view of the chunk's buffer)."""
    import numpy as np

    if len(chunk.vectors) != 4 * dim * chunk.size:
        raise ValueError(f"vec0 chunk of {chunk.size} vectors is not of {dim} floats")
    bits = np.unpackbits(np.frombuffer(chunk.validity, dtype=np.uint8), bitorder="little")[: chunk.size]
    valid = bits.astype(bool)
    keys = np.frombuffer(chunk.keys, dtype=np.int64)
    vectors = np.frombuffer(chunk.vectors, dtype=np.float32).reshape(chunk.size, dim)
    if not valid.all():
        keys, vectors = keys[valid], vectors[valid]
    return keys, vectors


def _stored_vectors(conn: apsw.Connection) -> Iterator[tuple[NDArray[np.int64], NDArray[np.float32]]]:
    """Every stored vector as (keys, float32 vectors), a chunk or batch at a time, in no particular order."""
    import numpy as np

    dim = vector_scan.chunk_dim(conn) if vector_scan.chunks_readable(conn) else None
    if dim is not None:
        for chunk in vector_scan.vector_chunks(conn):
            yield chunk_arrays(chunk, dim)
        return
    cursor = conn.execute("SELECT vector_key, embedding FROM thought_vectors")
    while rows := list(itertools.islice(cursor, BATCH)):
        keys = np.array([int(r[0]) for r in rows], dtype=np.int64)
        yield keys, np.frombuffer(b"".join(bytes(r[1]) for r in rows), dtype=np.float32).reshape(len(rows), -1)


def code_existing(conn: apsw.Connection) -> None:
    """Migration 0013: the table, its triggers, and the codes of every vector already stored.

    Runs once per store, in the migration's transaction, off the event loop (stores open in a
    worker thread): about a second at 100k thoughts, holding the codes (a quarter of the floats)
    and never all the floats. A thought whose slots are not 0..n-1 (not written by
    `store_vectors`) gets no codes; the index then reads that store's floats instead.
    """
    conn.execute(CODES)
    if not vector_scan.vector_count(conn):
        return  # a new store, or one never embedded: numpy is not imported
    import numpy as np

    from thoughtline.domain.int8_codes import quantize

    key_parts, code_parts, scale_parts = [], [], []
    for keys, vectors in _stored_vectors(conn):
        codes, scales = quantize(vectors)
        key_parts.append(keys.copy())
        code_parts.append(codes)
        scale_parts.append(scales)
    keys = np.concatenate(key_parts)
    all_codes, all_scales = np.concatenate(code_parts), np.concatenate(scale_parts)
    del code_parts
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    owners, slots = keys // VECTOR_SLOTS, keys % VECTOR_SLOTS
    starts = np.flatnonzero(np.concatenate(([True], owners[1:] != owners[:-1])))
    ends = np.append(starts[1:], len(keys))
    position = np.arange(len(keys)) - np.repeat(starts, ends - starts)
    whole = np.logical_and.reduceat(slots == position, starts)
    for first in range(0, len(starts), BATCH):
        rows = []
        for i in range(first, min(first + BATCH, len(starts))):
            if whole[i]:
                at = order[starts[i] : ends[i]]
                rows.append((int(owners[starts[i]]), all_codes[at].tobytes(), all_scales[at].tobytes()))
        conn.executemany(_INSERT, rows)
