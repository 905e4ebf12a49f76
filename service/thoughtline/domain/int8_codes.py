"""How a float vector becomes int8 codes: a byte per dimension and one float scale per vector.

The rule is shared by the store, which keeps every vector's codes beside its floats (so opening
a store reads a quarter of the bytes and codes nothing, issue 19), and the in-memory index,
which codes what it reads from older stores the same way. Pure numpy; imported only where
vectors are handled, never at start or on the write path of a thought.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float32]
CodeArray = NDArray[np.int8]

CODE_LEVELS = 127


def quantize_into(vectors: FloatArray, out: CodeArray, scratch: FloatArray | None = None) -> FloatArray:
    """Code `vectors` (n x dim) into `out` (n x dim, e.g. a view of a run's buffer); returns the scales.

    The rounding writes straight into place, through `scratch` (n x dim float32, reused across
    calls) when given: a separate cast and concatenation cost two more copies, and fresh
    temporaries page faults on every call.
    """
    work = scratch if scratch is not None and scratch.shape == vectors.shape else np.empty_like(vectors)
    top = np.abs(vectors, out=work).max(axis=1) if vectors.size else np.zeros(len(vectors), dtype=np.float32)
    top = np.maximum(top, np.float32(1e-12))
    np.multiply(vectors, (np.float32(CODE_LEVELS) / top)[:, None], out=work)
    np.rint(work, out=out, casting="unsafe")  # rounds in float, then casts into place
    scales: FloatArray = (top / np.float32(CODE_LEVELS)).astype(np.float32)
    return scales


def quantize(vectors: FloatArray) -> tuple[CodeArray, FloatArray]:
    """Int8 codes (n x dim) and per-vector scales of float vectors: vector ≈ codes * scale."""
    codes = np.empty(vectors.shape, dtype=np.int8)
    return codes, quantize_into(vectors, codes)
