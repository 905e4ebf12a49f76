"""Embedders for the model-identity tests: the real MiniLM under another id, and vectors to compare.

"Another model" is the real MiniLM with its 384 dimensions reversed, under its own id: its
vectors are unit length and self-consistent, but a cosine between one of them and a real MiniLM
query means nothing, exactly as between two different models. The model that takes over is the
real MiniLM behind a recorder, so the tests see which thought bodies were embedded again.
"""

from __future__ import annotations

from collections.abc import Sequence

import apsw
import numpy as np

from tests.golden.harness import LibraryHarness
from thoughtline.domain.vector_keys import PASSAGE_MIN_CHARS, VECTOR_SLOTS, chunk_texts
from thoughtline.identity import OWNER_KEY
from thoughtline.library.embed import MiniLMEmbedder, Vectors
from thoughtline.storage import vectors as vector_store

NOTE = "Note "


class Wrapping:
    """The `Embedder` properties of a test wrapper, taken from the real embedder it wraps."""

    def __init__(self, inner: MiniLMEmbedder) -> None:
        self._inner = inner

    @property
    def dim(self) -> int:
        """The wrapped embedder's dimension."""
        return self._inner.dim

    @property
    def query_prefix(self) -> str:
        """The wrapped embedder's query instruction."""
        return self._inner.query_prefix

    @property
    def model_id(self) -> str:
        """The wrapped embedder's model id."""
        return self._inner.model_id


class Recorder(Wrapping):
    """Wraps an embedder under a chosen id; records every text it embeds; can reverse dimensions."""

    def __init__(self, inner: MiniLMEmbedder, model_id: str | None = None, *, reversed_dims: bool = False) -> None:
        super().__init__(inner)
        self._id = model_id
        self._reversed = reversed_dims
        self.texts: list[str] = []

    @property
    def model_id(self) -> str:
        """The chosen id, or the wrapped embedder's own."""
        return self._id or self._inner.model_id

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed for real (reversed when asked) and record the texts."""
        self.texts.extend(texts)
        out = self._inner.embed(texts)
        return np.ascontiguousarray(out[:, ::-1]) if self._reversed else out


def other_model(embedder: MiniLMEmbedder) -> Recorder:
    return Recorder(embedder, "reversed-minilm", reversed_dims=True)


def note(i: int) -> str:
    return f"{NOTE}{i}: the ingest worker number {i} reported codeword{i} before it stopped."


def stored(conn: apsw.Connection) -> dict[int, bytes]:
    return dict(vector_store.vectors_after(conn, -1))


def expected_vectors(conn: apsw.Connection, embedder: MiniLMEmbedder) -> dict[int, bytes]:
    """What the real MiniLM makes of every thought under the current passage rule."""
    out: dict[int, bytes] = {}
    for tid, body in conn.execute("SELECT id, body FROM thoughts"):
        passages = chunk_texts(str(body), VECTOR_SLOTS, PASSAGE_MIN_CHARS)
        for slot, row in enumerate(embedder.embed(passages)):
            out[int(tid) * VECTOR_SLOTS + slot] = row.tobytes()
    return out


def same_vectors(got: dict[int, bytes], want: dict[int, bytes]) -> bool:
    if got.keys() != want.keys():
        return False
    return all(
        np.allclose(np.frombuffer(got[k], np.float32), np.frombuffer(want[k], np.float32), atol=1e-5) for k in want
    )


async def write_notes(h: LibraryHarness, count: int) -> None:
    for i in range(count):
        await h.write_sequence([note(i)])


async def embed_all(h: LibraryHarness) -> None:
    opened = await h.router.get(OWNER_KEY)
    while await h.library.backfill(opened, limit=64):
        pass


def finds(out: dict[str, object], i: int) -> bool:
    results = out["results"]
    assert isinstance(results, list)
    return any(str(r["snippet"]).startswith(f"{NOTE}{i}:") for r in results)
