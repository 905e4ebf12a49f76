"""The calibration grid for thread proposals: both flows replayed in memory, on train and dev only.

Uses the same rules as the service (`library.proposals`: `sequence_vector`, `thread_vector`,
`best_thread`) on one model's vectors of the labelled texts, so a grid of thresholds, margins and
blends costs one embedding pass. A blend fixes every similarity a flow sees, so each is computed
once per blend and the threshold / margin grid only re-decides. Several splits are pooled (their
counts summed); each blend's best point is also shown per split. Also compares a sequence vector
from its thoughts' vectors with one from every passage vector (each thought cut into passages).

    python -m bench.thread_sweep [--splits train,dev] [--model PATH] [--passages]
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.embed_cache import cached_embedder, model_tag
from thoughtline.domain.vector_keys import VECTOR_SLOTS, chunk_texts
from thoughtline.library.embed import Embedder
from thoughtline.library.proposals import TUNING, Tuning, Vector, best_thread, sequence_vector, thread_vector, unit

if TYPE_CHECKING:
    from bench.eval_threads import LabelledSet, Score

# Fine-tuned models move cosine levels, so the grid is wider than the shipped model needs.
THRESHOLDS = [round(0.20 + 0.01 * i, 2) for i in range(61)]
MARGINS = [0.0, 0.01, 0.02, 0.03, 0.04, 0.06, 0.08, 0.10, 0.12, 0.14, 0.16]
BLENDS = [0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 8.0, 16.0, float("inf")]
MIN_PRECISION = 0.9

# One matching of one sequence: its id, cosine per thread (index into sorted topics), the threads
# it already belongs to at that moment (never proposed to them).
Match = tuple[str, dict[int, float], frozenset[str]]


def _vectors(data: LabelledSet, embedder: Embedder, passages: bool) -> dict[str, Vector]:
    owners: list[str] = []
    texts: list[str] = []
    for seq in data.sequences:
        for t in seq["thoughts"]:
            parts = chunk_texts(t["thought"], VECTOR_SLOTS, 0) if passages else [" ".join(t["thought"].split())]
            owners += [seq["id"]] * len(parts)
            texts += parts
    matrix = embedder.embed(texts)
    out: dict[str, Vector] = {}
    for seq in data.sequences:
        rows = matrix[[i for i, o in enumerate(owners) if o == seq["id"]]]
        v = sequence_vector(rows)
        if v is not None:
            out[seq["id"]] = v
    return out


def _descriptions(data: LabelledSet, embedder: Embedder) -> dict[str, Vector | None]:
    names = sorted(data.threads)
    matrix = embedder.embed([data.threads[t].get("description") or "" for t in names])
    return {t: unit(matrix[i]) if data.threads[t].get("description") else None for i, t in enumerate(names)}


def _threads(
    data: LabelledSet,
    desc: Mapping[str, Vector | None],
    seqv: Mapping[str, Vector],
    members: Mapping[str, set[str]],
    k: float,
) -> dict[str, Vector]:
    out: dict[str, Vector] = {}
    for topic in data.threads:
        # k = 0 is the members' centroid alone, k = inf the description alone (n / (n + k)).
        v = thread_vector(desc[topic], [seqv[s] for s in sorted(members[topic]) if s in seqv], k)
        if v is not None:
            out[topic] = v
    return out


def _sims(thread_vectors: Mapping[str, Vector], order: Sequence[str], v: Vector) -> dict[int, float]:
    return {i: float(v @ thread_vectors[t]) for i, t in enumerate(order) if t in thread_vectors}


def _member_of(members: Mapping[str, set[str]], seq_id: str) -> frozenset[str]:
    return frozenset(t for t, m in members.items() if seq_id in m)


def completes(seq: Mapping[str, Any]) -> bool:
    """Whether writing the sequence completes it, as the write path decides (not the `status` label).

    A thought with `nextThoughtNeeded: false` completes its sequence; 72 train sequences labelled
    active or abandoned end that way, and the real flow matches them.
    """
    return any(t["nextThoughtNeeded"] is False for t in seq["thoughts"])


def matches_a(
    data: LabelledSet, desc: Mapping[str, Vector | None], seqv: Mapping[str, Vector], k: float
) -> list[Match]:
    """Threads first: seeds join at their first thought, each completed sequence is matched then."""
    order = sorted(data.threads)
    members: dict[str, set[str]] = {t: set() for t in data.threads}
    seed_of = {s: t for t, seeds in data.seeds.items() for s in seeds}
    out: list[Match] = []
    for seq in data.sequences:
        if seq["id"] in seed_of:
            members[seed_of[seq["id"]]].add(seq["id"])
        if not completes(seq) or seq["id"] not in seqv:
            continue
        sims = _sims(_threads(data, desc, seqv, members, k), order, seqv[seq["id"]])
        out.append((seq["id"], sims, _member_of(members, seq["id"])))
    return out


def matches_b(
    data: LabelledSet, desc: Mapping[str, Vector | None], seqv: Mapping[str, Vector], k: float
) -> list[Match]:
    """Sequences first: every stored sequence against threads holding their two pinned seeds."""
    order = sorted(data.threads)
    members = {t: set(s) for t, s in data.seeds.items()}
    vectors = _threads(data, desc, seqv, members, k)
    return [
        (s["id"], _sims(vectors, order, seqv[s["id"]]), _member_of(members, s["id"]))
        for s in data.sequences
        if s["id"] in seqv
    ]


def decide(data: LabelledSet, matches: Sequence[Match], tuning: Tuning) -> list[tuple[str, str]]:
    """The (thread topic, sequence id) pairs proposed under `tuning`."""
    order = sorted(data.threads)
    out: list[tuple[str, str]] = []
    for seq_id, sims, member_of in matches:
        chosen = best_thread(sims, tuning)
        if chosen is not None and order[chosen[0]] not in member_of:
            out.append((order[chosen[0]], seq_id))
    return out


def pooled(scores: Sequence[Score]) -> Score:
    """One score with the counts of several splits summed."""
    from bench.eval_threads import Score

    out = Score()
    for s in scores:
        out.positives += s.positives
        out.true_positive += s.true_positive
        out.false_positive += s.false_positive
        out.traps += s.traps
        out.trap_pairs += s.trap_pairs
    return out


@dataclass
class Replay:
    """One split's matchings under one blend, ready to be decided at any threshold and margin."""

    data: LabelledSet
    a: list[Match]
    b: list[Match]

    def scores(self, tuning: Tuning) -> tuple[Score, Score]:
        from bench.eval_threads import score

        seeds = {t: set(s) for t, s in self.data.seeds.items()}
        return score(self.data, decide(self.data, self.a, tuning), seeds), score(
            self.data, decide(self.data, self.b, tuning), seeds
        )


def _fmt(a: Score, b: Score) -> str:
    def side(name: str, s: Score) -> str:
        return f"{name} P {s.precision:.3f} R {s.recall:.3f} traps {s.traps}"

    return f"{side('A', a)} · {side('B', b)}"


def _qualifies(a: Score, b: Score) -> bool:
    return min(a.precision, b.precision) >= MIN_PRECISION and a.traps == 0 and b.traps == 0


def best_point(replays: Sequence[Replay], k: float, per_split: bool) -> tuple[Tuning, Score, Score] | None:
    """The grid point with the best worse-flow recall at precision ≥ 0.9 in both flows and no trap.

    Pooled over the splits, or (`per_split`) holding in every split, recall the worst split and flow.
    Ties keep the lowest threshold, then the lowest margin (the rule the shipped point came from).
    """
    best: tuple[float, Tuning, Score, Score] | None = None
    for threshold in THRESHOLDS:
        for margin in MARGINS:
            tuning = Tuning(threshold, margin, k)
            each = [r.scores(tuning) for r in replays]
            a, b = pooled([s[0] for s in each]), pooled([s[1] for s in each])
            if per_split:
                if not all(_qualifies(x, y) for x, y in each):
                    continue
                worst = min(min(x.recall, y.recall) for x, y in each)
            else:
                if not _qualifies(a, b):
                    continue
                worst = min(a.recall, b.recall)
            if best is None or worst > best[0]:
                best = (worst, tuning, a, b)
    return None if best is None else best[1:]


def replays(sets: Sequence[LabelledSet], embedder: Embedder, passages: bool, k: float) -> list[Replay]:
    """Each split's matchings under blend `k`."""
    out = []
    for data in sets:
        desc = _descriptions(data, embedder)
        seqv = _vectors(data, embedder, passages)
        out.append(Replay(data, matches_a(data, desc, seqv, k), matches_b(data, desc, seqv, k)))
    return out


def run_sweep(sets: Sequence[LabelledSet], embedder: Embedder, current: Tuning, passages: bool = True) -> None:
    """Print, per sequence-vector kind and blend, the best grid points (pooled, and in every split)."""
    names = "+".join(d.split for d in sets)
    for use_passages in (False, True) if passages else (False,):
        kind = "mean of passage vectors" if use_passages else "mean of thought vectors"
        for k in BLENDS:
            rs = replays(sets, embedder, use_passages, k)
            for per_split in (False, True):
                rule = "every split" if per_split else f"pooled {names}"
                found = best_point(rs, k, per_split)
                if found is None:
                    print(f"sweep {kind}, blend_k {k}, {rule}: no point reaches the rule")
                    continue
                tuning, a, b = found
                print(
                    f"sweep {kind}, blend_k {k}, {rule}: "
                    f"threshold {tuning.threshold} margin {tuning.margin} -> {_fmt(a, b)}"
                )
                for r in rs if len(rs) > 1 else []:
                    print(f"    {r.data.split}: {_fmt(*r.scores(tuning))}")
    around(sets, embedder, current)


def around(sets: Sequence[LabelledSet], embedder: Embedder, tuning: Tuning) -> None:
    """Each split's scores at `tuning` and at thresholds ±0.02 and ±0.04 around it."""
    rs = replays(sets, embedder, False, tuning.blend_k)
    for delta in (-0.04, -0.02, 0.0, 0.02, 0.04):
        t = Tuning(round(tuning.threshold + delta, 2), tuning.margin, tuning.blend_k)
        for r in rs:
            print(
                f"around blend_k {t.blend_k} margin {t.margin}, threshold {t.threshold}, "
                f"{r.data.split}: {_fmt(*r.scores(t))}"
            )


def splits_arg(text: str) -> list[str]:
    """The splits of a calibration run; test is refused (it is never tuned on)."""
    splits = [s.strip() for s in text.split(",") if s.strip()]
    if "test" in splits:
        raise SystemExit("the sweep is calibration: run it on train and dev only, never on test")
    return splits


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    from bench.eval_threads import load

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--splits", default="train,dev")
    parser.add_argument("--model", type=Path, help="an ONNX embedding model other than the shipped one")
    parser.add_argument("--pooling", choices=("mean", "cls"), default="mean", help="how --model pools tokens")
    parser.add_argument("--passages", action="store_true", help="also sweep sequence vectors from passages")
    parser.add_argument("--threshold", type=float, default=TUNING.threshold, help="the point to show around")
    parser.add_argument("--margin", type=float, default=TUNING.margin)
    parser.add_argument("--blend-k", type=float, default=TUNING.blend_k)
    args = parser.parse_args(argv)
    embedder = cached_embedder(args.model, args.pooling)
    print(f"model {model_tag(args.model, args.pooling)}; shipped tuning {TUNING}")
    sets = [load(s) for s in splits_arg(args.splits)]
    run_sweep(sets, embedder, Tuning(args.threshold, args.margin, args.blend_k), args.passages)


if __name__ == "__main__":
    main()
