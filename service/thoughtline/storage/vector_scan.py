"""Bulk reads of every stored vector, for the in-memory index: the only SQL over vec0's own tables.

A full scan of the `thought_vectors` virtual table costs sqlite-vec one lookup per row (about
5 s of CPU for 250k vectors on a busy machine). vec0 keeps its rows in chunk tables it created:
each chunk row holds the keys of up to `size` vectors, a validity bitmap and, in a second table,
their float32 vectors as one blob. Reading those blobs is a few hundred plain row reads. The
layout is checked on every read (table and column names, blob lengths); a store whose layout
differs is read through the virtual table instead, so an unknown sqlite-vec never yields
wrong vectors.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import apsw

from thoughtline.domain.vector_keys import VECTOR_SLOTS

_CHUNKS = "thought_vectors_chunks"
_VECTORS = "thought_vectors_vector_chunks00"
_EXPECTED = {_CHUNKS: ["chunk_id", "size", "validity", "rowids"], _VECTORS: ["rowid", "vectors"]}


@dataclass(frozen=True)
class Chunk:
    """Up to `size` vectors as vec0 stores them: keys (int64), a validity bitmap (bit i = slot i), float32s."""

    size: int
    validity: bytes
    keys: bytes
    vectors: bytes


def _columns(conn: apsw.Connection, table: str) -> list[str]:
    return [str(r[1]) for r in conn.execute("SELECT * FROM pragma_table_info(?)", (table,))]


def chunks_readable(conn: apsw.Connection) -> bool:
    """Whether vec0's chunk tables have the layout `vector_chunks` reads."""
    return all(_columns(conn, table) == cols for table, cols in _EXPECTED.items())


def vector_chunks(conn: apsw.Connection) -> Iterator[Chunk]:
    """Every vec0 chunk with at least one vector, in storage order (not key order).

    Raises `ValueError` on a chunk whose blobs do not have the lengths its size implies; callers
    check `chunks_readable` first and read through the virtual table when it is False.
    """
    # Two plain scans: joining the chunk tables made SQLite sort the 1.5 MB blobs (10x slower).
    meta = {
        int(r[0]): (int(r[1]), bytes(r[2]), bytes(r[3]))
        for r in conn.execute(f"SELECT chunk_id, size, validity, rowids FROM {_CHUNKS}")
    }
    for chunk_id, vectors in conn.execute(f"SELECT rowid, vectors FROM {_VECTORS}"):
        size, validity, keys = meta.get(int(chunk_id), (0, b"", b""))
        if not size or not any(validity):
            continue
        if len(validity) * 8 < size or len(keys) != 8 * size or len(vectors) % (4 * size):
            raise ValueError(f"vec0 chunk {chunk_id} of {size} vectors has blobs of unexpected length")
        yield Chunk(size, validity, keys, bytes(vectors))


def thought_sequences(conn: apsw.Connection) -> list[tuple[int, int]]:
    """(thought id, sequence row id) of every thought, in id order."""
    # Both columns are INTEGER NOT NULL; fetchall skips a Python loop over 100k rows.
    rows: list[Any] = conn.execute("SELECT id, sequence_id FROM thoughts ORDER BY id").fetchall()
    return rows


def vectors_with_sequence_batches(
    conn: apsw.Connection, after_key: int, batch: int
) -> Iterator[list[tuple[int, bytes, int]]]:
    """(vector key, vector, sequence row id) above `after_key` in key order, `batch` rows at a time."""
    cursor = conn.execute(
        "SELECT v.vector_key, v.embedding, t.sequence_id FROM thought_vectors v "
        f"JOIN thoughts t ON t.id = v.vector_key / {VECTOR_SLOTS} WHERE v.vector_key > ? ORDER BY v.vector_key",
        (after_key,),
    )
    rows: list[tuple[int, bytes, int]] = []
    for key, vector, sequence in cursor:
        rows.append((int(key), bytes(vector), int(sequence)))
        if len(rows) >= batch:
            yield rows
            rows = []
    if rows:
        yield rows


def vector_dim(conn: apsw.Connection) -> int | None:
    """Floats per stored vector (None when none is stored)."""
    rows: list[Any] = conn.execute("SELECT length(embedding) FROM thought_vectors LIMIT 1").fetchall()
    return int(rows[0][0]) // 4 if rows else None
