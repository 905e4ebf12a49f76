"""Int8 codes of unit vectors and their product with queries: numpy for a few, onnxruntime for many.

A store's vectors are kept as int8 codes with one float scale per vector (a quarter of float32).
numpy has no fast integer product, so a large run of codes is handed once to onnxruntime as the
constant operand of a one-node `MatMulInteger` graph: the runtime packs it for its SIMD kernel
when the session is made and keeps only the packed copy, and each query then costs one pass over
one byte per dimension. The graph is written here as a few protobuf fields (the `onnx` package
is not a dependency). Importing this module never starts onnxruntime.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from thoughtline.domain.int8_codes import CODE_LEVELS as CODE_LEVELS
from thoughtline.domain.int8_codes import quantize as quantize
from thoughtline.domain.int8_codes import quantize_into as quantize_into

if TYPE_CHECKING:
    import onnxruntime

FloatArray = NDArray[np.float32]
CodeArray = NDArray[np.int8]

# Queries are coded with 7 bits (-63..63, shifted by 64 into 1..127): the AVX2 kernel multiplies
# unsigned query bytes by signed code bytes and adds pairs in 16 bits, which overflows for query
# bytes above 127 (a full 8-bit query gave wrong sums). 127 * 127 * 2 stays below 2^15.
QUERY_LEVELS = 63
QUERY_ZERO = 64
# ORT's DataType numbers and the opset of MatMulInteger.
_UINT8, _INT8, _INT32 = 2, 3, 6
_OPSET = 13


def columns_of(codes: CodeArray) -> CodeArray:
    """The codes transposed (dim x n), the layout the packed product takes.

    In blocks of 256 rows: numpy's one-shot transpose of a 65k x 384 int8 array ran 3x slower
    than block by block (the blocks' columns stay in cache).
    """
    out = np.empty((codes.shape[1], codes.shape[0]), dtype=np.int8)
    for start in range(0, codes.shape[0], 256):
        out[:, start : start + 256] = codes[start : start + 256].T
    return out


@dataclass(frozen=True)
class Queries:
    """Query vectors coded for the product: 7-bit codes shifted to bytes, and their scales."""

    codes: NDArray[np.int8]  # k x dim, -63..63
    shifted: NDArray[np.uint8]  # k x dim, codes + 64 (the packed product's left operand)
    scales: FloatArray  # k

    @classmethod
    def of(cls, queries: FloatArray) -> Queries:
        qs = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        top = np.maximum(np.abs(qs).max(axis=1), np.float32(1e-12)) if qs.size else np.ones(len(qs), np.float32)
        codes = np.rint(qs * (np.float32(QUERY_LEVELS) / top)[:, None]).astype(np.int8)
        shifted = np.ascontiguousarray((codes.astype(np.int16) + QUERY_ZERO).astype(np.uint8))
        return cls(codes, shifted, (top / np.float32(QUERY_LEVELS)).astype(np.float32))


def dot_codes(codes: CodeArray, scales: FloatArray, queries: Queries) -> FloatArray:
    """k x n dot products of coded queries with row-major codes (n x dim), in numpy (small runs).

    Integer sums of at most dim * 127 * 63 are exact in float32, so this equals the packed product.
    """
    if not codes.size:
        return np.zeros((len(queries.scales), 0), dtype=np.float32)
    sums = queries.codes.astype(np.float32) @ codes.astype(np.float32).T
    return scaled(sums, queries.scales, scales)


def scaled(
    sums: NDArray[np.int32] | FloatArray, row_scales: FloatArray, col_scales: FloatArray, out: FloatArray | None = None
) -> FloatArray:
    """float32(sums) x row scale x column scale, in place in `out` (k x n; a new array without it).

    In place and in this order: the same float32 products as `sums.astype(f32) * r * c`, without
    two temporaries of k x n.
    """
    if out is None:
        out = np.empty(sums.shape, dtype=np.float32)
    out[...] = sums
    out *= row_scales[:, None]
    out *= col_scales[None, :]
    return out


class PackedCodes:
    """A large run of codes handed to onnxruntime once; holds no numpy copy of them afterwards."""

    def __init__(self, columns: CodeArray, scales: FloatArray) -> None:
        import onnxruntime as ort

        dim, n = columns.shape
        options = ort.SessionOptions()
        # One thread: search runs in the store's reader threads, beside the embedder's own pool.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        # The packed codes are one allocation of known size; an arena would round it up.
        options.enable_cpu_mem_arena = False
        options.add_external_initializers(["B"], [ort.OrtValue.ortvalue_from_numpy(columns)])
        self._session: onnxruntime.InferenceSession = ort.InferenceSession(
            _model(dim, n), options, providers=["CPUExecutionProvider"]
        )
        self._zero = np.array(QUERY_ZERO, dtype=np.uint8)
        self.scales = scales
        self.size: int = n
        self.dim: int = dim

    @property
    def nbytes(self) -> int:
        """Resident bytes: the packed codes (one byte each, plus a column sum) and the scales."""
        return self.size * (self.dim + 4) + int(self.scales.nbytes)

    def dot(self, queries: Queries, out: FloatArray | None = None) -> FloatArray:
        """k x n dot products of the coded queries with every coded vector (into `out` when given)."""
        feeds: dict[str, Any] = {"A": queries.shifted, "azp": self._zero}
        sums: NDArray[np.int32] = self._session.run(None, feeds)[0]
        return scaled(sums, queries.scales, self.scales, out)


# --- the one-node graph, as protobuf bytes (field numbers from onnx.proto) ---


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _int(field: int, value: int) -> bytes:
    return _varint(field << 3) + _varint(value)


def _bytes(field: int, payload: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def _str(field: int, text: str) -> bytes:
    return _bytes(field, text.encode())


def _value_info(name: str, elem_type: int, shape: list[int | str] | None) -> bytes:
    tensor = _int(1, elem_type)
    if shape is not None:
        dims = b"".join(_bytes(1, _int(1, d) if isinstance(d, int) else _str(2, d)) for d in shape)
        tensor += _bytes(2, dims)
    return _str(1, name) + _bytes(2, _bytes(1, tensor))  # ValueInfoProto{name, type{tensor_type}}


def _model(dim: int, n: int) -> bytes:
    """Y[k, n] = (A[k, dim] - azp) · B[dim, n] with B a constant supplied at session creation."""
    node = _str(1, "A") + _str(1, "B") + _str(1, "azp") + _str(2, "Y") + _str(4, "MatMulInteger")
    # B has no data of its own: `add_external_initializers` supplies it, so it is declared external.
    location = _bytes(13, _str(1, "location") + _str(2, "supplied"))
    initializer = _int(1, dim) + _int(1, n) + _int(2, _INT8) + _str(8, "B") + location + _int(14, 1)
    graph = (
        _bytes(1, node)
        + _str(2, "int8_product")
        + _bytes(5, initializer)
        + _bytes(11, _value_info("A", _UINT8, ["k", dim]))
        + _bytes(11, _value_info("azp", _UINT8, []))
        + _bytes(12, _value_info("Y", _INT32, ["k", n]))
    )
    return _int(1, 8) + _bytes(7, graph) + _bytes(8, _str(1, "") + _int(2, _OPSET))
