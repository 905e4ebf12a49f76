"""Sentence embeddings: the `Embedder` boundary and the local MiniLM implementation.

This module is only ever imported lazily (by search and the vector backfill), never on the
write path or at server start: loading onnxruntime and the model costs ~100 MB and a few
hundred milliseconds, and writes must never wait for it (SPEC §5, issue 5).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from thoughtline.library import model_identity

MINILM_DIM = 384
# all-MiniLM-L6-v2 was trained on 256-token inputs; the vendored tokenizer.json defaults to 128.
MAX_TOKENS = 256
# onnxruntime sizes its activations by batch x longest text; small batches keep peak memory
# flat (one batch of 32 long texts held ~1.5 GB with the arena on, issue 5).
MAX_BATCH = 16
POOLINGS = ("mean", "cls")


def recipe(pooling: str) -> bytes:
    """What vectors depend on besides the model and tokenizer files: how token vectors become one.

    Part of `model_id`, so a change of pooling or window re-embeds every store. Mean pooling gives
    the recipe every store before issue 8's round 4 recorded ("mean-pooled, 256 tokens").
    """
    return f"{pooling}-pooled, {MAX_TOKENS} tokens".encode()


Vectors = NDArray[np.float32]


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension."""

    @property
    def dim(self) -> int:
        """Length of every vector this embedder returns."""
        ...

    @property
    def model_id(self) -> str:
        """A short stable id of the vectors this embedder makes (same id: comparable vectors).

        Computed on first use, never at start or on a write; stores record it (model_identity.py).
        """
        ...

    @property
    def query_prefix(self) -> str:
        """Put before a search query (not a stored text) when embedding it; empty for MiniLM.

        Some retrieval models were trained with an instruction on the query side only.
        """
        ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Return an array of shape (len(texts), dim), each row of unit length."""
        ...


class EmbedderUnavailable(RuntimeError):
    """The model or tokenizer could not be loaded; the message says what to do."""


_MODEL_DIR = ("models", "minilm")


def _tokenizer_path() -> Path:
    return Path(str(resources.files("thoughtline").joinpath(*_MODEL_DIR, "tokenizer.json")))


def shipped_model_path() -> Path:
    """The model file vendored in the package (`models/minilm/model.onnx`)."""
    path = Path(str(resources.files("thoughtline").joinpath(*_MODEL_DIR, "model.onnx")))
    if not path.is_file():
        raise EmbedderUnavailable(
            f"The embedding model file is missing: {path} ships inside Thoughtline's package; "
            "reinstall Thoughtline from its repository (`pip install .`, or `make serve`)."
        )
    return path


def normalise(matrix: NDArray[np.float32]) -> Vectors:
    """Scale every row to unit length (zero rows stay zero)."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    scaled: Vectors = (matrix / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)
    return scaled


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 weights in the ONNX file, float at run time) with mean pooling, run on
    onnxruntime's CPU provider.

    The model file ships inside the package (`models/minilm/model.onnx`, see its NOTICE);
    `model_path` runs another ONNX file with the same inputs, output and vocabulary instead (the
    evaluations measure other packaged models so: `pooling="cls"` and a `query_prefix` for BGE).

    The session is created on first use, so constructing one is free. Thread-safe: ONNX
    sessions allow concurrent `run` calls, and loading is guarded by a lock.
    """

    def __init__(
        self,
        model_path: Path | None = None,
        threads: int = 0,
        batch_size: int = MAX_BATCH,
        pooling: str = "mean",
        query_prefix: str = "",
    ) -> None:
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, not {pooling!r}")
        self._pooling = pooling
        self._query_prefix = query_prefix
        self._model_path = model_path
        self._threads = threads
        self._batch_size = max(1, batch_size)
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._model_id: str | None = None

    @property
    def dim(self) -> int:
        """MiniLM-L6 vectors have 384 dimensions."""
        return MINILM_DIM

    @property
    def query_prefix(self) -> str:
        """The instruction put before queries (none for the shipped MiniLM)."""
        return self._query_prefix

    @property
    def model_id(self) -> str:
        """Short sha256 of the model file, the tokenizer and the pooling recipe; hashed once, on first use."""
        with self._lock:
            if self._model_id is None:
                path = self._model_path or shipped_model_path()
                self._model_id = model_identity.model_id(path, _tokenizer_path(), recipe(self._pooling))
            return self._model_id

    def _load(self) -> tuple[Any, Any]:
        with self._lock:
            if self._session is None:
                import onnxruntime as ort
                from tokenizers import Tokenizer

                tokenizer = Tokenizer.from_file(str(_tokenizer_path()))
                tokenizer.enable_truncation(max_length=MAX_TOKENS)
                tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # noqa: S106  # a vocabulary token, not a secret
                options = ort.SessionOptions()
                # The arena keeps the peak of the largest batch for the life of the process.
                options.enable_cpu_mem_arena = False
                options.log_severity_level = 3
                # Idle worker threads otherwise spin for a while after each run and steal the
                # CPU from the KNN and SQLite work a search does next (2 cores here).
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                # The basic rewrites already fold the int8 weights into float ones. The extended
                # fusions made four short phrasings slower here (16.0 against 13.2 ms of CPU on one
                # thread), made long texts no faster, and change no vector by more than 2e-7.
                options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
                if self._threads:
                    options.intra_op_num_threads = self._threads
                path = self._model_path or shipped_model_path()
                self._session = ort.InferenceSession(
                    str(path), sess_options=options, providers=["CPUExecutionProvider"]
                )
                self._tokenizer = tokenizer
            return self._session, self._tokenizer

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed texts in small batches, longest-first order inside, results in input order."""
        out = np.zeros((len(texts), MINILM_DIM), dtype=np.float32)
        if not texts:
            return out
        session, tokenizer = self._load()
        # Sorting by length keeps each padded batch tight; rows go back to their places below.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self._batch_size):
            chunk = order[start : start + self._batch_size]
            encodings = tokenizer.encode_batch([texts[i] for i in chunk])
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            hidden = session.run(["last_hidden_state"], feeds)[0]
            if self._pooling == "cls":
                pooled = hidden[:, 0, :]
            else:
                weights = mask[:, :, None].astype(np.float32)
                pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            out[chunk] = normalise(pooled.astype(np.float32))
        return out


def serving_embedder() -> MiniLMEmbedder:
    """The shipped model as the server runs it: one ONNX thread per call.

    A search embeds its phrasings on the library's helper thread while the caller reads the
    keyword index (library/query.py). With one ONNX thread the two share the two cores of a small
    host instead of three threads contending for them. At 100k thoughts, with the basic graph
    rewrites of `MiniLMEmbedder`, a search with three alternatives took p95 41-42 ms against 43-52
    (two threads, extended rewrites) in three alternating runs, and ~10% less CPU.
    Calls from several threads still run side by side. Bulk embedding on the command line
    (`thoughtline reindex`) keeps every core.
    """
    return MiniLMEmbedder(threads=1)
