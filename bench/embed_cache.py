"""An on-disk embedding cache for the evaluations, keyed by a hash of each text.

Tuning loops rebuild stores and re-run queries many times; MiniLM is deterministic, so a text's
vector is computed once and kept in a small SQLite file under the temp directory.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Sequence
from pathlib import Path

import apsw
import numpy as np

from thoughtline.library.embed import Embedder, MiniLMEmbedder, Vectors
from thoughtline.library.model_identity import LEGACY_MODEL_ID

CACHE_DIR = Path(tempfile.gettempdir()) / "thoughtline-eval-cache"
DEFAULT_CACHE = CACHE_DIR / "minilm.sqlite3"


def _key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def model_tag(model: Path | None, pooling: str = "mean") -> str:
    """A name for the vectors a model makes: the shipped model's, or a hash of another model file."""
    if model is None:
        # The vendored file may be replaced: caches of the old shipped model keep their name.
        shipped = MiniLMEmbedder().model_id
        return "minilm" if shipped == LEGACY_MODEL_ID else f"minilm-{shipped}"
    digest = hashlib.sha256(model.read_bytes()).hexdigest()[:12]
    return f"model-{digest}" if pooling == "mean" else f"model-{digest}-{pooling}"


def cached_embedder(model: Path | None = None, pooling: str = "mean", query_prefix: str = "") -> CachedEmbedder:
    """The evaluations' embedder: the shipped MiniLM, or the ONNX file `model`, each with its own cache.

    The cache is keyed by text, so a query prefix needs no cache of its own.
    """
    inner = MiniLMEmbedder(model_path=model, pooling=pooling, query_prefix=query_prefix)
    return CachedEmbedder(inner, CACHE_DIR / f"{model_tag(model, pooling)}.sqlite3")


class CachedEmbedder:
    """Wraps an embedder; vectors already seen come from the cache file, the rest are computed and stored."""

    def __init__(self, inner: Embedder | None = None, path: Path = DEFAULT_CACHE) -> None:
        self._inner = inner or MiniLMEmbedder()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = apsw.Connection(str(path))
        # Several evaluations (other processes) may fill one model's cache at once: wait, never fail.
        self._conn.set_busy_timeout(60_000)
        self._conn.execute("PRAGMA journal_mode = wal")
        self._conn.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")
        self.computed = 0

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
        """The wrapped embedder's model id (the cached vectors are its vectors)."""
        return self._inner.model_id

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Vectors for `texts`, from the cache where possible."""
        keys = [_key(t) for t in texts]
        found: dict[str, bytes] = {}
        unique = sorted(set(keys))
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT key, vector FROM vectors WHERE key IN ({marks})"  # noqa: S608  # only placeholders
            for key, blob in self._conn.execute(sql, chunk):
                found[str(key)] = bytes(blob)
        missing = sorted({k: i for i, k in enumerate(keys) if k not in found}.items(), key=lambda kv: kv[1])
        if missing:
            computed = self._inner.embed([texts[i] for _, i in missing])
            self.computed += len(missing)
            with self._conn:
                for (key, _), row in zip(missing, computed, strict=True):
                    blob = row.astype(np.float32).tobytes()
                    found[key] = blob
                    self._conn.execute("INSERT OR REPLACE INTO vectors VALUES (?, ?)", (key, blob))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, key in enumerate(keys):
            out[row] = np.frombuffer(found[key], dtype=np.float32)
        return out
