"""Train the search ranker and abstention model on the DEV split of the reasoning set only.

Both are linear models fitted in plain numpy: the ranker pairwise (each answer against every other
pool candidate of its question, logistic loss, L2), the abstention model pointwise (never-stored
questions against answerable ones). Cross-validation by topic inside dev picks nothing by itself;
it prints the estimate. The weights are written to the package as plain numbers.
Test and LoCoMo are never read here.

    python -m bench.train_ranker [--write] [--l2 1.0]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from bench.embed_cache import cached_embedder, model_tag
from bench.eval_reasoning import DATA, build
from thoughtline.library import ranker
from thoughtline.library.dense import DenseIndex
from thoughtline.library.embed import Embedder
from thoughtline.library.pipeline import gather
from thoughtline.library.retrieval import Tuning
from thoughtline.storage.db import connect
from thoughtline.storage.search import SearchFilters

WEIGHTS = Path(__file__).resolve().parents[1] / "service" / "thoughtline" / "library" / "ranker_weights.json"
F = NDArray[np.float64]


@dataclass
class Example:
    """One dev question's pool: features, which rows answer it, its query features, its topic."""

    qid: str
    kind: str
    topic: str
    x: F
    y: NDArray[np.bool_]
    q: F
    answerable: bool


def collect(models: ranker.Models, workdir: Path, embedder: Embedder) -> list[Example]:
    """Pools of every dev question, with the shipped seq weight."""
    data = json.loads((DATA / "dev.json").read_text())
    built = build(data, workdir, embedder)
    topic_of = {t["id"]: s["topics"][0] for s in data["sequences"] for t in s["thoughts"]}
    by_qid = {q["id"]: q for q in data["questions"]}
    conn = connect(built.path, "wal", readonly=True)
    index = DenseIndex()
    out: list[Example] = []
    for q in built.questions:
        pool = gather(conn, embedder, q.text, SearchFilters(), Tuning(), index, "hybrid", models)
        y = np.array([tid in q.answers for tid in pool.ids])
        raw = by_qid[q.qid]
        topic = topic_of[raw["answers"][0]] if raw["answers"] else f"absent:{q.qid}"
        out.append(Example(q.qid, q.kind, topic, pool.features, y, pool.query_features, bool(q.answers)))
    conn.close()
    return out


def collect_ablated(models: ranker.Models, workdir: Path, embedder: Embedder) -> list[Example]:
    """Topic ablation: each dev topic's answerable questions, asked of dev without that topic.

    Dev holds only 29 never-stored questions; these add one in-domain negative per answerable
    question, about a topic that is now absent while its neighbours (the near-miss distractors
    that share its words) stay. Each is grouped under its own topic for cross-validation.
    """
    data = json.loads((DATA / "dev.json").read_text())
    topic_of = {t["id"]: s["topics"][0] for s in data["sequences"] for t in s["thoughts"]}
    out: list[Example] = []
    for topic in sorted({s["topics"][0] for s in data["sequences"]}):
        kept = [s for s in data["sequences"] if topic not in s["topics"]]
        kept_ids = {t["id"] for s in kept for t in s["thoughts"]}
        asked = [
            q
            for q in data["questions"]
            if q["answers"] and topic_of[q["answers"][0]] == topic and not set(q["answers"]) & kept_ids
        ]
        if not asked:
            continue
        split = {**data, "split": f"dev-without-{topic}", "sequences": kept, "questions": []}
        built = build(split, workdir, embedder)
        conn = connect(built.path, "wal", readonly=True)
        index = DenseIndex()
        for q in asked:
            pool = gather(conn, embedder, q["query"], SearchFilters(), Tuning(), index, "hybrid", models)
            none = np.zeros(len(pool.ids), dtype=np.bool_)
            qid = f"{q['id']}-ablated"
            out.append(Example(qid, "ablated", topic, pool.features, none, pool.query_features, False))
        conn.close()
    return out


def fit_pairwise(examples: Sequence[Example], l2: float, steps: int = 400) -> ranker.Linear:
    """Logistic loss on (answer - other) feature differences, standardised features, gradient descent."""
    xs = np.vstack([e.x for e in examples if e.answerable])
    mean, scale = xs.mean(axis=0), xs.std(axis=0)
    scale[scale < 1e-9] = 1.0
    diffs = []
    for e in examples:
        if not e.answerable or not e.y.any() or e.y.all():
            continue
        z = (e.x - mean) / scale
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
    return ranker.Linear(mean, scale, w, 0.0)


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
    return ranker.Linear(mean, scale, w, b)


def fit_abstain(x: F, y: NDArray[np.bool_], l2: float, keep: NDArray[np.bool_]) -> ranker.Linear:
    """`fit_logistic` over the `keep` columns only; the others get weight 0 in the shipped model."""
    part = fit_logistic(x[:, keep], y, l2)
    mean, scale, coef = np.zeros(x.shape[1]), np.ones(x.shape[1]), np.zeros(x.shape[1])
    mean[keep], scale[keep], coef[keep] = part.mean, part.scale, part.coef
    return ranker.Linear(mean, scale, coef, part.bias)


def curve(doubts: F, kinds: Sequence[str]) -> None:
    """Held-out abstention at thresholds set by how many answerable dev questions may abstain."""
    kind = np.array(kinds)
    answerable = np.sort(doubts[~np.isin(kind, ["absent", "absent_near", "ablated"])])[::-1]
    never = np.isin(kind, ["absent", "absent_near"])
    print("cv curve: answerable allowed -> answerable, absent, near, all never-stored, topic-ablated")
    for allowed in (0, 1, 2, 3, 5, 8):
        threshold = answerable[min(allowed, len(answerable) - 1)]
        shares = [
            float(np.mean(doubts[m] > threshold)) if m.any() else float("nan")
            for m in (kind == "absent", kind == "absent_near", never, kind == "ablated")
        ]
        print(f"  {allowed}: {np.mean(answerable > threshold):.3f}", " ".join(f"{v:.3f}" for v in shares))


def metrics(model: ranker.Linear, examples: Sequence[Example]) -> dict[str, float]:
    """recall@5 and MRR of a ranker over the pools (answers missing from a pool count as misses)."""
    r5, rr = [], []
    for e in examples:
        if not e.answerable:
            continue
        order = np.argsort(-model.score(e.x), kind="stable")
        hits = e.y[order]
        r5.append(hits[:5].sum() / max(1, e.y.sum()) if e.y.any() else 0.0)
        first = np.flatnonzero(hits)
        rr.append(1.0 / (first[0] + 1) if first.size else 0.0)
    return {"recall@5": round(float(np.mean(r5)), 4), "mrr": round(float(np.mean(rr)), 4)}


def folds(examples: Sequence[Example], k: int = 5) -> list[tuple[list[Example], list[Example]]]:
    """Topic-grouped folds (a topic's questions are all in or all out)."""
    topics = sorted({e.topic for e in examples})
    rng = np.random.default_rng(8)
    rng.shuffle(topics)
    part = {t: i % k for i, t in enumerate(topics)}
    return [
        ([e for e in examples if part[e.topic] != i], [e for e in examples if part[e.topic] == i]) for i in range(k)
    ]


_TOP_RANK = ranker.QUERY_FEATURES.index("top_rank")
_RANK_MARGIN = ranker.QUERY_FEATURES.index("rank_margin")


def with_ranker(examples: Sequence[Example], model: ranker.Linear) -> list[Example]:
    """The examples with their query features' ranker columns recomputed under `model`.

    (`seq_coverage` keeps the top sequences of the pool's collection-time ranking: close enough.)
    """
    out = []
    for e in examples:
        scores = model.score(e.x)
        q = e.q.copy()
        q[_TOP_RANK] = float(scores.max())
        q[_RANK_MARGIN] = float(scores.max() - np.sort(scores)[-min(5, scores.size)])
        out.append(Example(e.qid, e.kind, e.topic, e.x, e.y, q, e.answerable))
    return out


def _doubt(model: ranker.Linear, examples: Sequence[Example]) -> F:
    out: F = 1 / (1 + np.exp(-model.score(np.vstack([e.q for e in examples]))))
    return out


def abstention_threshold(doubts_answerable: F, target: float = 0.01, margin: float = 0.02) -> float:
    """The lowest threshold under which at most `target` of answerable questions abstain, plus a margin."""
    ordered = np.sort(doubts_answerable)[::-1]
    allowed = int(np.floor(target * len(ordered)))
    return float(min(0.99, ordered[allowed] + margin)) if len(ordered) else 0.5


def main(argv: Sequence[str] | None = None) -> None:
    """Fit on dev, print the cross-validated estimates, optionally write the weights."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--l2", type=float, default=1.0)
    parser.add_argument("--abstain-l2", type=float, default=16.0)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument(
        "--abstain-target", type=float, default=0.01, help="share of answerable dev questions allowed to abstain"
    )
    parser.add_argument("--abstain-margin", type=float, default=0.02)
    parser.add_argument("--abstain-drop", default="", help="comma-separated query features the abstention ignores")
    parser.add_argument(
        "--ablation", action="store_true", help="also report topic-ablation near misses (held out, never trained on)"
    )
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--model", type=Path, help="an ONNX embedding model other than the shipped one")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "thoughtline-eval-stores")
    args = parser.parse_args(argv)
    # Stores hold vectors, so each model gets stores of its own.
    args.workdir = args.workdir / model_tag(args.model)
    current = json.loads(WEIGHTS.read_text())
    models = ranker.load_models({"seq_weight": current.get("seq_weight", 0.5)})
    embedder = cached_embedder(args.model)
    examples = collect(models, args.workdir, embedder)
    cv_rank: list[dict[str, float]] = []
    cv_abs: list[tuple[float, float]] = []
    # Doubts of answerable questions from the fold that did not see them: in-sample doubts are
    # overconfident, so the shipped threshold is set on these.
    held_out_doubts: list[float] = []
    dropped = {name for name in args.abstain_drop.split(",") if name}
    keep = np.array([name not in dropped for name in ranker.QUERY_FEATURES])
    all_doubts: list[float] = []
    all_kinds: list[str] = []
    ablated = collect_ablated(models, args.workdir, embedder) if args.ablation else []
    for train, held in folds([*examples, *ablated]):
        train = [e for e in train if e.kind != "ablated"]
        fold_ranker = fit_pairwise(train, args.l2, args.steps)
        cv_rank.append(metrics(fold_ranker, held))
        train, held = with_ranker(train, fold_ranker), with_ranker(held, fold_ranker)
        qx = np.vstack([e.q for e in train])
        qy = np.array([not e.answerable for e in train])
        model = fit_abstain(qx, qy, args.abstain_l2, keep)
        doubt = partial(_doubt, model)
        all_doubts.extend(doubt(held).tolist())
        all_kinds.extend(e.kind for e in held)
        threshold = abstention_threshold(
            doubt([e for e in train if e.answerable]), args.abstain_target, args.abstain_margin
        )
        held_abs = [e for e in held if not e.answerable and e.kind != "ablated"]
        held_ans = [e for e in held if e.answerable]
        held_out_doubts.extend(doubt(held_ans).tolist() if held_ans else [])
        cv_abs.append(
            (
                float(np.mean(doubt(held_abs) > threshold)) if held_abs else float("nan"),
                float(np.mean(doubt(held_ans) > threshold)) if held_ans else float("nan"),
            )
        )
    print("cv ranker:", {k: round(float(np.mean([m[k] for m in cv_rank])), 4) for k in cv_rank[0]})
    print("cv abstain (absent, answerable):", np.round(np.nanmean(np.array(cv_abs), axis=0), 4).tolist())
    curve(np.array(all_doubts), all_kinds)
    full = fit_pairwise(examples, args.l2, args.steps)
    print("dev (fit) ranker:", metrics(full, examples))
    examples = with_ranker(examples, full)
    print("ranker coefficients:", dict(zip(ranker.CANDIDATE_FEATURES, np.round(full.coef, 3).tolist(), strict=True)))
    qx = np.vstack([e.q for e in examples])
    qy = np.array([not e.answerable for e in examples])
    abstain = fit_abstain(qx, qy, args.abstain_l2, keep)
    doubts = 1 / (1 + np.exp(-abstain.score(qx)))
    threshold = abstention_threshold(np.array(held_out_doubts), args.abstain_target, args.abstain_margin)
    print("abstain coefficients:", dict(zip(ranker.QUERY_FEATURES, np.round(abstain.coef, 3).tolist(), strict=True)))
    print(f"abstain threshold {threshold:.3f}: dev absent {np.mean(doubts[qy] > threshold):.3f}, "
          f"answerable {np.mean(doubts[~qy] > threshold):.3f}")  # fmt: skip
    if args.write:
        out = {
            "_comment": "Written by bench/train_ranker.py from the dev split of bench/data/reasoning only.",
            "seq_weight": models.seq_weight,
            "features": list(ranker.CANDIDATE_FEATURES),
            "ranker": full.to_json(),
            "query_features": list(ranker.QUERY_FEATURES),
            "abstain": abstain.to_json(),
            "abstain_above": round(threshold, 4),
        }
        WEIGHTS.write_text(json.dumps(out, indent=1) + "\n")
        print("wrote", WEIGHTS)


if __name__ == "__main__":
    main()
