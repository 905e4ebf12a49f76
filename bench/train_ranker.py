"""Train the search ranker and abstention model on the reasoning set's train and dev splits.

Both are linear models fitted in plain numpy: the ranker pairwise (each answer against every other
pool candidate of its question, logistic loss, L2), the abstention model pointwise (never-stored
questions against answerable ones). Cross-validation is topic-grouped over dev: each dev fold is
scored by models fitted on the other splits plus the other dev folds, so `--splits dev` and
`--splits train,dev` are compared on the same held-out dev questions. It picks nothing by
itself; it prints the estimates. The weights are written to the package as plain numbers.
Test and LoCoMo are never read here. `--alternatives` fits the second model set, for questions
sent with alternatives (the agent-written ones of bench/data/agent-queries), over the
question's features and those taken across phrasings; `--write` replaces only that set's section
of the weights file.

    python -m bench.train_ranker [--splits train,dev] [--alternatives] [--ablation] [--write]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from bench.embed_cache import cached_embedder, model_tag
from bench.ranker_data import Example, Setup, collect, collect_ablated
from thoughtline.library import ranker

WEIGHTS = Path(__file__).resolve().parents[1] / "service" / "thoughtline" / "library" / "ranker_weights.json"
F = NDArray[np.float64]


def fit_pairwise(
    examples: Sequence[Example], l2: float, steps: int = 400, names: Sequence[str] = ranker.CANDIDATE_FEATURES
) -> ranker.Linear:
    """Logistic loss on (answer - other) feature differences, standardised features, gradient descent."""
    xs = np.vstack([e.x.select(names) for e in examples if e.answerable])
    mean, scale = xs.mean(axis=0), xs.std(axis=0)
    scale[scale < 1e-9] = 1.0
    diffs = []
    for e in examples:
        if not e.answerable or not e.y.any() or e.y.all():
            continue
        z = (e.x.select(names) - mean) / scale
        pos, neg = z[e.y], z[~e.y]
        d = (pos[:, None, :] - neg[None, :, :]).reshape(-1, z.shape[1])
        # Each question weighs the same, however many pairs its pool makes.
        diffs.append((d, 1.0 / len(d)))
    w = np.zeros(xs.shape[1])
    n_q = len(diffs)
    lr = 0.5
    for _ in range(steps):
        grad = l2 * w / n_q
        for d, weight in diffs:
            p = 1.0 / (1.0 + np.exp(d @ w))
            grad -= weight * (d * p[:, None]).sum(axis=0) / n_q
        w -= lr * grad
    return ranker.Linear(tuple(names), mean, scale, w, 0.0)


def fit_logistic(x: F, y: NDArray[np.bool_], l2: float, steps: int = 2000) -> ranker.Linear:
    """Pointwise logistic regression (class-balanced), standardised features."""
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = (x - mean) / scale
    t = y.astype(np.float64)
    weight = np.where(y, 0.5 / max(y.sum(), 1), 0.5 / max((~y).sum(), 1))
    w, b = np.zeros(z.shape[1]), 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(z @ w + b)))
        g = weight * (p - t)
        w -= 0.5 * (z.T @ g + l2 * w / len(t))
        b -= 0.5 * float(g.sum())
    return ranker.Linear((), mean, scale, w, b)


def fit_abstain(x: F, y: NDArray[np.bool_], l2: float, keep: NDArray[np.bool_], names: Sequence[str]) -> ranker.Linear:
    """`fit_logistic` over the `keep` columns of `x` (columns `names`); the others get weight 0."""
    part = fit_logistic(x[:, keep], y, l2)
    mean, scale, coef = np.zeros(x.shape[1]), np.ones(x.shape[1]), np.zeros(x.shape[1])
    mean[keep], scale[keep], coef[keep] = part.mean, part.scale, part.coef
    return ranker.Linear(tuple(names), mean, scale, coef, part.bias)


ALLOWED = (0.0, 0.01, 0.02, 0.05)


def curve(doubts: F, kinds: Sequence[str]) -> list[dict[str, float]]:
    """Held-out abstention at thresholds set by the share of answerable dev questions allowed to abstain."""
    kind = np.array(kinds)
    answerable = np.sort(doubts[~np.isin(kind, ["absent", "absent_near", "ablated"])])[::-1]
    never = np.isin(kind, ["absent", "absent_near"])
    rows = []
    print("cv curve: answerable allowed -> answerable, absent, near, all never-stored, topic-ablated")
    for allowed in ALLOWED:
        threshold = answerable[min(int(np.floor(allowed * len(answerable))), len(answerable) - 1)]
        shares = [
            float(np.mean(doubts[m] > threshold)) if m.any() else float("nan")
            for m in (kind == "absent", kind == "absent_near", never, kind == "ablated")
        ]
        row = dict(zip(("absent", "near", "never", "ablated"), shares, strict=True))
        rows.append({"allowed": allowed, "answerable": float(np.mean(answerable > threshold)), **row})
        print(f"  ≤{allowed:.2f}: {rows[-1]['answerable']:.3f}", " ".join(f"{v:.3f}" for v in shares))
    return rows


def found(e: Example, top: NDArray[np.bool_]) -> float:
    """recall of one question as `bench.eval_reasoning.found` scores it: a multi question the share of its
    answers in `top`, any other question whether one of them is there (pools missing them score 0)."""
    if not e.y.any():
        return 0.0
    return float(top.sum() / e.y.sum()) if e.kind == "multi" else float(top.any())


def metrics(model: ranker.Linear, examples: Sequence[Example]) -> dict[str, float]:
    """recall@5 and MRR of a ranker over the pools (answers missing from a pool count as misses)."""
    r5, rr = [], []
    for e in examples:
        if not e.answerable:
            continue
        order = np.argsort(-model.score(e.x), kind="stable")
        hits = e.y[order]
        r5.append(found(e, hits[:5]))
        first = np.flatnonzero(hits)
        rr.append(1.0 / (first[0] + 1) if first.size else 0.0)
    return {"recall@5": round(float(np.mean(r5)), 4), "mrr": round(float(np.mean(rr)), 4)}


def folds(examples: Sequence[Example], k: int = 5, seed: int = 8) -> list[tuple[list[Example], list[Example]]]:
    """Grouped folds: dev by topic, train by writer part (a part holds its topics' traps and never-stored
    questions); a split with neither is always trained on.

    Dev's folds depend on dev's topics alone, so runs with and without train hold out the same
    dev questions.
    """
    topics = sorted({e.topic for e in examples if e.split == "dev"})
    rng = np.random.default_rng(seed)
    rng.shuffle(topics)
    fold = {("dev", t): i % k for i, t in enumerate(topics)}
    parts = sorted({e.part for e in examples if e.split != "dev" and e.part})
    rng.shuffle(parts)
    fold.update({("part", p): i % k for i, p in enumerate(parts)})

    def of(e: Example) -> int:
        return fold[("dev", e.topic)] if e.split == "dev" else fold.get(("part", e.part), -1)

    return [([e for e in examples if of(e) != i], [e for e in examples if of(e) == i]) for i in range(k)]


def with_ranker(examples: Sequence[Example], model: ranker.Linear) -> list[Example]:
    """The examples with their query features' ranker columns recomputed under `model`.

    (`seq_coverage` keeps the top sequences of the pool's collection-time ranking: close enough.)
    """
    out = []
    for e in examples:
        scores = model.score(e.x)
        top = float(scores.max()) if scores.size else 0.0
        margin = float(scores.max() - np.sort(scores)[-min(5, scores.size)]) if scores.size else 0.0
        q = e.q.with_column("top_rank", np.array([top])).with_column("rank_margin", np.array([margin]))
        out.append(e.with_query(q))
    return out


def _doubt(model: ranker.Linear, examples: Sequence[Example]) -> F:
    table = ranker.Table(examples[0].q.names, np.vstack([e.q.matrix for e in examples]))
    out: F = 1 / (1 + np.exp(-model.score(table)))
    return out


def abstention_threshold(doubts_answerable: F, target: float = 0.01, margin: float = 0.02) -> float:
    """The lowest threshold under which at most `target` of answerable questions abstain, plus a margin."""
    ordered = np.sort(doubts_answerable)[::-1]
    allowed = int(np.floor(target * len(ordered)))
    return float(min(0.99, ordered[allowed] + margin)) if len(ordered) else 0.5


def abstain_set(examples: Sequence[Example], args: argparse.Namespace) -> tuple[F, NDArray[np.bool_]]:
    """The abstention model's training rows: answerable against never-stored questions of the chosen splits."""
    negatives = {"absent", "absent_near", *(("ablated",) if args.ablated_negatives else ())}
    splits = {s for s in args.abstain_splits.split(",") if s}
    fit_on = [e for e in examples if (e.answerable or e.kind in negatives) and (not splits or e.split in splits)]
    names = query_names(args)
    return np.vstack([e.q.select(names) for e in fit_on]), np.array([not e.answerable for e in fit_on])


def candidate_names(args: argparse.Namespace) -> tuple[str, ...]:
    """The ranker's features: the question's, and with alternatives those taken across phrasings."""
    return (*ranker.CANDIDATE_FEATURES, *(ranker.ALTERNATIVE_FEATURES if args.alternatives else ()))


def query_names(args: argparse.Namespace) -> tuple[str, ...]:
    """The abstention model's features, likewise."""
    return (*ranker.QUERY_FEATURES, *(ranker.ALTERNATIVE_QUERY_FEATURES if args.alternatives else ()))


@dataclass
class HeldOut:
    """One split's held-out results: ranking metrics, abstention curve, answerable questions' doubts."""

    rank: dict[str, float]
    curve: list[dict[str, float]]
    doubts: list[tuple[str, bool, float]]  # (question kind, answerable, held-out doubt)

    @property
    def answerable_doubts(self) -> list[float]:
        """Held-out doubts of the answerable questions (the threshold is set on these)."""
        return [d for _, answerable, d in self.doubts if answerable]

    def at(self, threshold: float) -> dict[str, float]:
        """Share of each kind of question that abstains at `threshold`."""
        groups = {"answerable": [d for _, a, d in self.doubts if a]}
        for kind in ("absent", "absent_near", "ablated"):
            groups[kind] = [d for k, _, d in self.doubts if k == kind]
        groups["never"] = groups["absent"] + groups["absent_near"]
        return {k: round(float(np.mean(np.array(v) > threshold)), 3) for k, v in groups.items() if v}


def cross_validate(
    examples: Sequence[Example], args: argparse.Namespace, keep: NDArray[np.bool_], seed: int = 8
) -> dict[str, HeldOut]:
    """Each split's held-out results (splits without groups are never held out)."""
    held_rank: dict[str, list[Example]] = {}
    scored: dict[str, list[F]] = {}
    doubts: dict[str, list[tuple[str, bool, float]]] = {}
    for train, held in folds(examples, seed=seed):
        fold_ranker = fit_pairwise([e for e in train if e.answerable], args.l2, args.steps, candidate_names(args))
        for e in held:
            if e.answerable:
                held_rank.setdefault(e.split, []).append(e)
                scored.setdefault(e.split, []).append(fold_ranker.score(e.x))
        train, held = with_ranker(train, fold_ranker), with_ranker(held, fold_ranker)
        model = fit_abstain(*abstain_set(train, args), args.abstain_l2, keep, query_names(args))
        for e, d in zip(held, _doubt(model, held).tolist(), strict=True):
            doubts.setdefault(e.split, []).append((e.kind, e.answerable, d))
    out = {}
    for split in sorted(doubts):
        print(f"{split} held out, fold seed {seed}:")
        kinds = [k for k, _, _ in doubts[split]]
        values = np.array([d for _, _, d in doubts[split]])
        rank = ranking(held_rank.get(split, []), scored.get(split, []))
        print("  ranker:", rank)
        out[split] = HeldOut(rank, curve(values, kinds), doubts[split])
    return out


def ranking(examples: Sequence[Example], scores: Sequence[F]) -> dict[str, float]:
    """recall@5 and MRR over every held-out answerable question (pooled over folds)."""
    r5, rr = [], []
    for e, s in zip(examples, scores, strict=True):
        hits = e.y[np.argsort(-s, kind="stable")]
        r5.append(found(e, hits[:5]))
        first = np.flatnonzero(hits)
        rr.append(1.0 / (first[0] + 1) if first.size else 0.0)
    return {"recall@5": round(float(np.mean(r5)), 4), "mrr": round(float(np.mean(rr)), 4), "n": len(r5)}


def main(argv: Sequence[str] | None = None) -> None:
    """Fit on the given splits, print dev held-out estimates, optionally write the weights."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", default="dev", help="splits to train on (names or part-file globs); needs dev")
    parser.add_argument("--l2", type=float, default=1.0)
    parser.add_argument("--abstain-l2", type=float, default=16.0)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument(
        "--abstain-target", type=float, default=0.01, help="share of answerable dev questions allowed to abstain"
    )
    parser.add_argument("--abstain-margin", type=float, default=0.02)
    parser.add_argument("--abstain-drop", default="", help="comma-separated query features the abstention ignores")
    parser.add_argument(
        "--ablation", action="store_true", help="also collect topic-ablation near misses (dev's are held out only)"
    )
    parser.add_argument(
        "--ablated-negatives", action="store_true", help="train the abstention on the training folds' ablated questions"
    )
    parser.add_argument("--shards", type=int, default=1, help="cut each split but dev into this many stores")
    parser.add_argument("--abstain-splits", default="", help="splits the abstention model is fitted on (default: all)")
    parser.add_argument(
        "--threshold-splits", default="dev", help="splits whose held-out answerable doubts set the threshold"
    )
    parser.add_argument("--fold-seeds", default="8", help="comma-separated seeds of the dev fold assignment")
    parser.add_argument("--alternatives", action="store_true", help="fit the set for questions sent with alternatives")
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--model", type=Path, help="an ONNX embedding model other than the shipped one")
    parser.add_argument("--pooling", choices=("mean", "cls"), default="mean", help="how --model pools tokens")
    parser.add_argument("--query-prefix", default="", help="an instruction put before each query (BGE's)")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "thoughtline-eval-stores")
    args = parser.parse_args(argv)
    specs = [s.strip() for s in args.splits.split(",") if s.strip()]
    if any("test" in Path(s).name for s in specs):
        raise SystemExit("the test split is never trained on: drop it from --splits")
    if "dev" not in specs:
        raise SystemExit("--splits must include dev: cross-validation holds out dev topics")
    # Stores hold vectors, so each model gets stores of its own.
    args.workdir = args.workdir / model_tag(args.model, args.pooling)
    current = json.loads(WEIGHTS.read_text())
    section = "alternatives" if args.alternatives else "question"
    # Pools are gathered under the shipped ranker of this set (its top sequences feed
    # `seq_coverage`, as at run time; the question's when the set has none yet), without the
    # abstention model (whose small-store shrinkage would alter features).
    if "question" not in current:
        current = {"seq_weight": current.get("seq_weight", 0.5), "question": _legacy_section(current)}
    shipped = current.get(section, current["question"])
    seq_weight = current.get("seq_weight", 0.5)
    models = ranker.load_models({"seq_weight": seq_weight, section: {"ranker": shipped["ranker"]}})
    embedder = cached_embedder(args.model, args.pooling, args.query_prefix)
    setup = Setup(models, args.workdir, embedder, args.alternatives, args.shards)
    examples = [e for spec in specs for e in collect(spec, setup)]
    if args.ablation:
        examples += [e for spec in specs for e in collect_ablated(spec, setup)]
    counts = {s: sum(e.split == s for e in examples) for s in sorted({e.split for e in examples})}
    print("questions per split (with ablated):", counts)
    dropped = {name for name in args.abstain_drop.split(",") if name}
    keep = np.array([name not in dropped for name in query_names(args)])
    held_out_doubts: list[float] = []
    for seed in [int(v) for v in args.fold_seeds.split(",")]:
        held = cross_validate(examples, args, keep, seed)
        doubts = [d for s in args.threshold_splits.split(",") for d in held[s].answerable_doubts]
        cut = abstention_threshold(np.array(doubts), args.abstain_target, args.abstain_margin)
        for split, h in held.items():
            print(f"  {split} held out at this seed's threshold {cut:.3f}:", h.at(cut))
        held_out_doubts = held_out_doubts or doubts
    real = [e for e in examples if e.kind != "ablated"]
    full = fit_pairwise([e for e in real if e.answerable], args.l2, args.steps, candidate_names(args))
    print("fit ranker, in sample:", {s: metrics(full, [e for e in real if e.split == s]) for s in counts})
    examples = with_ranker(examples, full)
    print("ranker coefficients:", dict(zip(full.features, np.round(full.coef, 3).tolist(), strict=True)))
    abstain = fit_abstain(*abstain_set(examples, args), args.abstain_l2, keep, query_names(args))
    threshold = abstention_threshold(np.array(held_out_doubts), args.abstain_target, args.abstain_margin)
    print("abstain coefficients:", dict(zip(abstain.features, np.round(abstain.coef, 3).tolist(), strict=True)))
    dev = [e for e in examples if e.split == "dev" and e.kind != "ablated"]
    doubt = _doubt(abstain, dev)
    never = np.array([not e.answerable for e in dev])
    shares = (
        f"never-stored {np.mean(doubt[never] > threshold):.3f}, answerable {np.mean(doubt[~never] > threshold):.3f}"
    )
    print(f"abstain threshold {threshold:.3f} (from {args.threshold_splits} held-out doubts): dev in sample, {shares}")
    if args.write:
        written = {
            "_comment": f"Written by bench/train_ranker.py (bench/data/reasoning): ranker on {' + '.join(counts)}, "
            f"abstention on {args.abstain_splits.replace(',', ' + ') or ' + '.join(counts)}, threshold from "
            f"{args.threshold_splits} held-out doubts; embedder {model_tag(args.model, args.pooling)}"
            + ("; questions sent with the agent-written alternatives." if args.alternatives else "; questions alone."),
            "ranker": full.to_json(),
            "abstain": abstain.to_json(),
            "abstain_above": round(threshold, 4),
        }
        other = "question" if args.alternatives else "alternatives"
        out = {"seq_weight": seq_weight, section: written}
        if other in current:
            out[other] = current[other]
        WEIGHTS.write_text(json.dumps(out, indent=1) + "\n")
        print("wrote", WEIGHTS, "section", section)


def _legacy_section(current: dict[str, Any]) -> dict[str, Any]:
    """A weights file from before alternatives: its one flat set, with feature names inside each model."""
    return {
        "_comment": current.get("_comment", ""),
        "ranker": {"features": current["features"], **current["ranker"]},
        "abstain": {"features": current["query_features"], **current["abstain"]},
        "abstain_above": current["abstain_above"],
    }


if __name__ == "__main__":
    main()
