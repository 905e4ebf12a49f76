"""Vectors after commit: embedding queued thoughts and the reindex job (the in-memory index is `dense.py`).

Writes only queue a thought (a trigger in migration 0002_search); this module turns the queue
into vectors in batches, either from a background task after commits, at query time for what is
still missing (Lambda), or from `thoughtline reindex`; a store embedded by another model is
queued again whole first (`model_identity.py`). It imports the model only through the
`Embedder` protocol, so importing it never loads onnxruntime.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import apsw
import numpy as np

from thoughtline.domain.vector_keys import PASSAGE_MIN_CHARS as PASSAGE_MIN_CHARS
from thoughtline.domain.vector_keys import VECTOR_SLOTS, chunk_texts
from thoughtline.library import model_identity
from thoughtline.storage import vectors as vector_store
from thoughtline.storage.db import write_transaction

if TYPE_CHECKING:
    from thoughtline.library.embed import Embedder

BATCH = 64


def embed_pending(
    embedder: Embedder, pending: Sequence[vector_store.PendingThought], passage_min_chars: int = PASSAGE_MIN_CHARS
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


def collect_pending(conn: apsw.Connection, limit: int = BATCH) -> list[vector_store.PendingThought]:
    """Read up to `limit` queued thoughts (a read connection is enough)."""
    ids = vector_store.pending_vector_ids(conn, limit)
    return vector_store.pending_thoughts(conn, ids) if ids else []


def backfill(
    conn: apsw.Connection,
    embedder: Embedder,
    *,
    batch: int = BATCH,
    passage_min_chars: int = PASSAGE_MIN_CHARS,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Embed and store every queued thought on one read-write connection; returns how many.

    A store whose vectors another model made is first queued again whole (`adopt_model`). Each
    batch commits on its own, so an interrupted run keeps what it finished. For the CLI,
    benchmarks and tests; a running server reads on a read connection, embeds outside any
    transaction, and hands `store_vectors` to its writer instead.
    """
    adopt_model(conn, embedder)
    done = 0
    while True:
        pending = collect_pending(conn, batch)
        if not pending:
            return done
        rows = embed_pending(embedder, pending, passage_min_chars)
        with write_transaction(conn):
            stored = vector_store.store_vectors(conn, rows, made_by=embedder.model_id)
        # A thought deleted meanwhile is dequeued by its delete trigger, so the loop still ends.
        done += stored
        if progress is not None:
            progress(len(pending))


def adopt_model(conn: apsw.Connection, embedder: Embedder) -> int | None:
    """Queue every thought again if another model made the store's vectors; returns how many (None: same model).

    One write transaction: the old vectors are deleted, every thought queued and the new id
    recorded together, or (on any failure) none of it.
    """
    current = embedder.model_id
    if model_identity.store_model(conn) == current:
        return None  # the common case: a read, no write
    with write_transaction(conn):
        queued = model_identity.adopt(conn, current)
    return queued


def reindex(conn: apsw.Connection, embedder: Embedder, *, show_progress: bool = True) -> int:
    """Rebuild the keyword index and every vector of a store, with a progress bar.

    For `thoughtline reindex`: after a model or tokenizer change, or to repair an index.
    Returns the number of thoughts embedded.
    """
    from tqdm import tqdm

    # Immediate, not deferred: a transaction that reads first and then writes gets SQLITE_BUSY at
    # once, without waiting, when a running server committed in between.
    with write_transaction(conn):
        total = vector_store.reset_index(conn, embedder.model_id)
    with tqdm(total=total, unit="thought", desc="embedding", disable=not show_progress) as bar:
        return backfill(conn, embedder, progress=bar.update)
