"""The calibration grid for thread proposals: both flows replayed in memory, on train and dev only.

Uses the service's own rules (`library.proposals`: `sequence_vector`, `thread_vector`,
`term_vector`, `thread_terms`, `embedding_part`, `similarity`) on one model's vectors of the
labelled texts and on their index terms (`storage.threads.terms`, the keyword index's tokenizer),
so a grid costs one embedding pass. Document frequencies are counted as the store would hold them
at each matching: over every thought written so far (flow A grows them sequence by sequence). A
blend fixes the three cosines of every pair a flow meets (the mean vector's, the closest
thought's, the words'), so each is computed once per blend and the threshold / words /
best-thought grid only re-decides. The chosen point is the one whose worst recall (every split
and flow, and the threshold moved ±0.02) is best while precision stays ≥ 0.9 and no trap is
proposed at all three thresholds. This module reads `bench.eval_threads` (the labels and the
scoring); nothing there imports it.

    python -m bench.thread_sweep [--splits train,dev] [--model PATH]
        [--threshold T --words W --blend-k K --best-thought B]
    python -m bench.thread_sweep --curve --splits dev,test   # report the curve at the shipped point
    python -m bench.thread_sweep --curve --splits dev,train --words 0.6 --threshold 0.31 --background 0.25
        # measured, not shipped: each similarity less a share of the sequence's mean over its other threads
    python -m bench.thread_sweep --curve --splits dev,train --threshold 0.36 --first-thought 0.2 --halves 0.5
        # measured, not shipped: shares of the embedding part taken from the first thought's cosine and
        # the closer half's (`--last-thought`, `--name-share`: see `Parts`)
"""

from __future__ import annotations

import argparse
import itertools
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw
import numpy as np
from numpy.typing import NDArray

from bench.embed_cache import cached_embedder, model_tag
from bench.eval_threads import LabelledSet, Score, load, score
from thoughtline.library.embed import Embedder
from thoughtline.library.proposals import (
    TUNING,
    Terms,
    Tuning,
    Vector,
    embedding_part,
    sequence_vector,
    similarity,
    term_cosine,
    term_vector,
    thread_terms,
    thread_vector,
    unit,
)
from thoughtline.storage.threads import terms

THRESHOLDS = [round(0.15 + 0.01 * i, 2) for i in range(61)]
WORDS = [0.0, 0.2, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
BLENDS = [0.5, 1.0, 2.0, 4.0]
BEST = [0.0, 0.25, 0.5, 0.75, 1.0]
MIN_PRECISION = 0.9
# The chosen point must hold with the threshold moved this far either way.
STEADY = 0.02

# One matching of one sequence: its id, per thread topic the embeddings' cosines (the mean
# vector's, the closest thought's, and the measured-only first thought's, last thought's and closer
# half's: see `Parts`) and the words' cosine, and the threads it already belongs to at that moment
# (never proposed to them).
Match = tuple[str, dict[str, tuple[float, float, float, float, float]], dict[str, float], frozenset[str]]


@dataclass(frozen=True)
class Parts:
    """Measured, not shipped: more shares of the embedding part, each taken from the mean vector's.

    `first` / `last`: the cosine of the sequence's first thought (it usually states the task and
    names the project) / its last (its conclusion). `halves`: the larger cosine of the normalised
    means of the sequence's first and second halves (a sequence of two threads often moves from
    one to the other). `name_share`: the thread's description vector becomes
    unit(description + name_share · embed(name)). All 0 is the shipped rule.
    """

    first: float = 0.0
    last: float = 0.0
    halves: float = 0.0
    name_share: float = 0.0


NO_PARTS = Parts()


def halves_cosine(thought_vectors: NDArray[np.float32], thread: Vector) -> float:
    """The larger cosine, to `thread`, of the means of the first ceil(n/2) thoughts and of the rest."""
    h = (thought_vectors.shape[0] + 1) // 2
    parts = [unit(thought_vectors[:h].mean(axis=0))]
    if thought_vectors.shape[0] > h:
        parts.append(unit(thought_vectors[h:].mean(axis=0)))
    return max(float(p @ thread) for p in parts if p is not None)


@dataclass(frozen=True)
class Corpus:
    """One split as a store sees it: sequence vectors, description vectors, and index terms."""

    vectors: dict[str, Vector]
    thought_vectors: dict[str, NDArray[np.float32]]  # sequence id -> its thoughts' vectors, in order
    descriptions: dict[str, Vector | None]
    counts: dict[str, Counter[str]]  # sequence id -> term counts over its thoughts
    thought_terms: dict[str, list[frozenset[str]]]  # sequence id -> each thought's distinct terms
    description_counts: dict[str, Counter[str]]


def corpus(data: LabelledSet, embedder: Embedder, name_share: float = 0.0) -> Corpus:
    """Embed and tokenize one split (the tokenizer is the store's, on an in-memory connection).

    `name_share` > 0 (measured, not shipped) adds that share of the thread name's embedding to
    each description vector.
    """
    conn = apsw.Connection(":memory:")
    owners: list[str] = []
    texts: list[str] = []
    counts: dict[str, Counter[str]] = {}
    per_thought: dict[str, list[frozenset[str]]] = {}
    for seq in data.sequences:
        counts[seq["id"]] = Counter()
        per_thought[seq["id"]] = []
        for t in seq["thoughts"]:
            owners.append(seq["id"])
            texts.append(" ".join(t["thought"].split()))
            cut = terms(conn, t["thought"])
            counts[seq["id"]].update(cut)
            per_thought[seq["id"]].append(frozenset(cut))
    matrix = embedder.embed(texts)
    vectors: dict[str, Vector] = {}
    thought_vectors: dict[str, NDArray[np.float32]] = {}
    for seq in data.sequences:
        thought_vectors[seq["id"]] = matrix[[i for i, o in enumerate(owners) if o == seq["id"]]]
        v = sequence_vector(thought_vectors[seq["id"]])
        if v is not None:
            vectors[seq["id"]] = v
    topics = sorted(data.threads)
    described = [data.threads[t].get("description") or "" for t in topics]
    dm = embedder.embed(described)
    descriptions = {t: unit(dm[i]) if described[i] else None for i, t in enumerate(topics)}
    if name_share:
        nm = embedder.embed([data.threads[t].get("name") or "" for t in topics])
        for i, t in enumerate(topics):
            named, described_vector = unit(nm[i]), descriptions[t]
            if named is not None and described_vector is not None:
                descriptions[t] = unit(described_vector + name_share * named)
    description_counts = {t: Counter(terms(conn, described[i])) for i, t in enumerate(topics)}
    conn.close()
    return Corpus(vectors, thought_vectors, descriptions, counts, per_thought, description_counts)


class Statistics:
    """Document frequencies over the thoughts written so far, as the keyword index counts them."""

    def __init__(self) -> None:
        self.documents = 0
        self.frequency: Counter[str] = Counter()

    def add(self, thought_terms: Sequence[frozenset[str]]) -> None:
        """Count one written sequence's thoughts."""
        self.documents += len(thought_terms)
        for distinct in thought_terms:
            self.frequency.update(distinct)


def _cosines(
    data: LabelledSet, c: Corpus, stats: Statistics, members: Mapping[str, set[str]], k: float, seq_id: str
) -> tuple[dict[str, tuple[float, float, float, float, float]], dict[str, float]]:
    """One sequence's cosines against every thread, with the statistics and members of that moment."""
    seq_words = term_vector(c.counts[seq_id], stats.frequency, stats.documents)
    dense: dict[str, tuple[float, float, float, float, float]] = {}
    sparse: dict[str, float] = {}
    for topic in sorted(data.threads):
        ids = [s for s in sorted(members[topic]) if s in c.vectors]
        v = thread_vector(c.descriptions[topic], [c.vectors[s] for s in ids], k)
        if v is None:
            continue
        described = term_vector(c.description_counts[topic], stats.frequency, stats.documents)
        member_words: list[Terms] = [term_vector(c.counts[s], stats.frequency, stats.documents) for s in ids]
        # The service's embedding part at the two ends of `best_thought`: the mean's and the closest thought's.
        mean = embedding_part(c.vectors[seq_id], c.thought_vectors[seq_id], v, Tuning(0.0, 0.0, k, 0.0))
        best = embedding_part(c.vectors[seq_id], c.thought_vectors[seq_id], v, Tuning(0.0, 0.0, k, 1.0))
        each = c.thought_vectors[seq_id] @ v
        dense[topic] = (mean, best, float(each[0]), float(each[-1]), halves_cosine(c.thought_vectors[seq_id], v))
        sparse[topic] = term_cosine(seq_words, thread_terms(described, member_words, k))
    return dense, sparse


def _member_of(members: Mapping[str, set[str]], seq_id: str) -> frozenset[str]:
    return frozenset(t for t, m in members.items() if seq_id in m)


def completes(seq: Mapping[str, Any]) -> bool:
    """Whether writing the sequence completes it, as the write path decides (not the `status` label).

    A thought with `nextThoughtNeeded: false` completes its sequence; 72 train sequences labelled
    active or abandoned end that way, and the real flow matches them.
    """
    return any(t["nextThoughtNeeded"] is False for t in seq["thoughts"])


def matches_a(data: LabelledSet, c: Corpus, k: float) -> list[Match]:
    """Threads first: seeds join at their first thought, each completed sequence is matched then."""
    members: dict[str, set[str]] = {t: set() for t in data.threads}
    seed_of = {s: t for t, seeds in data.seeds.items() for s in seeds}
    stats = Statistics()
    out: list[Match] = []
    for seq in data.sequences:
        stats.add(c.thought_terms[seq["id"]])
        if seq["id"] in seed_of:
            members[seed_of[seq["id"]]].add(seq["id"])
        if not completes(seq) or seq["id"] not in c.vectors:
            continue
        dense, sparse = _cosines(data, c, stats, members, k, seq["id"])
        out.append((seq["id"], dense, sparse, _member_of(members, seq["id"])))
    return out


def matches_b(data: LabelledSet, c: Corpus, k: float) -> list[Match]:
    """Sequences first: every stored sequence against threads holding their two pinned seeds."""
    members = {t: set(s) for t, s in data.seeds.items()}
    stats = Statistics()
    for seq in data.sequences:
        stats.add(c.thought_terms[seq["id"]])
    out: list[Match] = []
    for seq in data.sequences:
        if seq["id"] in c.vectors:
            dense, sparse = _cosines(data, c, stats, members, k, seq["id"])
            out.append((seq["id"], dense, sparse, _member_of(members, seq["id"])))
    return out


@dataclass(frozen=True)
class Background:
    """Measured, not shipped: the sequence's own background subtracted from each thread's similarity.

    `share` λ of the sequence's mean similarity to the other active threads (member or not),
    shrunk towards `prior` with `weight` pseudo-threads, so a store with one thread is judged
    against `prior` instead of nothing: `similarity - λ · (Σ others + weight · prior) / (n + weight)`.
    `share` 0 is the shipped rule.
    """

    share: float = 0.0
    prior: float = 0.177  # dev's mean similarity over all flow-B pairs at words 0.6
    weight: float = 3.0


NO_BACKGROUND = Background()


def decide(
    matches: Sequence[Match], tuning: Tuning, background: Background = NO_BACKGROUND, parts: Parts = NO_PARTS
) -> list[tuple[str, str]]:
    """The (thread topic, sequence id) pairs proposed under `tuning`: each thread judges on its own."""
    out: list[tuple[str, str]] = []
    m = tuning.best_thought
    for seq_id, dense, sparse, member_of in matches:
        sims: dict[str, float] = {}
        for topic in sorted(dense):
            mean, best, first, last, halves = dense[topic]
            # = embedding_part under `tuning` (linear in m) when `parts` is all 0
            vector_part = (
                (1.0 - m - parts.first - parts.last - parts.halves) * mean
                + m * best
                + parts.first * first
                + parts.last * last
                + parts.halves * halves
            )
            sims[topic] = similarity(vector_part, sparse[topic], tuning)
        total = sum(sims.values())
        for topic, sim in sims.items():
            if background.share:
                others = len(sims) - 1
                mass = (total - sim) + background.weight * background.prior
                count = others + background.weight
                sim -= background.share * (mass / count if count > 0 else 0.0)
            if topic not in member_of and sim >= tuning.threshold:
                out.append((topic, seq_id))
    return out


@dataclass
class Replay:
    """One split's matchings under one blend, ready to be decided at any threshold and words share."""

    data: LabelledSet
    a: list[Match]
    b: list[Match]
    background: Background = NO_BACKGROUND
    parts: Parts = NO_PARTS

    def scores(self, tuning: Tuning) -> tuple[Score, Score]:
        """Flow A's and flow B's scores under `tuning`."""
        seeds = {t: set(s) for t, s in self.data.seeds.items()}
        return (
            score(self.data, decide(self.a, tuning, self.background, self.parts), seeds),
            score(self.data, decide(self.b, tuning, self.background, self.parts), seeds),
        )


def _fmt(a: Score, b: Score) -> str:
    def side(name: str, s: Score) -> str:
        return f"{name} P {s.precision:.3f} R {s.recall:.3f} traps {s.traps}"

    return f"{side('A', a)} · {side('B', b)}"


def _worst(replays: Sequence[Replay], tuning: Tuning) -> float | None:
    """The worst recall over every split and flow, or None when a precision falls below 0.9 or a trap is proposed."""
    worst = 1.0
    for r in replays:
        for s in r.scores(tuning):
            if s.precision < MIN_PRECISION or s.traps:
                return None
            worst = min(worst, s.recall)
    return worst


def best_point(replays: Sequence[Replay], k: float, words: float, best: float = 0.0) -> tuple[Tuning, float] | None:
    """The threshold whose worst recall, over every split and flow at it and at ±0.02, is best.

    Every split and flow must keep precision ≥ 0.9 and propose no trap at all three thresholds.
    Ties keep the lowest threshold.
    """
    found: tuple[Tuning, float] | None = None
    for threshold in THRESHOLDS:
        around = [Tuning(round(threshold + d, 2), words, k, best) for d in (-STEADY, 0.0, STEADY)]
        each = [_worst(replays, t) for t in around]
        if any(w is None for w in each):
            continue
        worst = min(w for w in each if w is not None)
        if found is None or worst > found[1]:
            found = (around[1], worst)
    return found


def replays(
    sets: Sequence[LabelledSet],
    corpora: Mapping[str, Corpus],
    k: float,
    background: Background = NO_BACKGROUND,
    parts: Parts = NO_PARTS,
) -> list[Replay]:
    """Each split's matchings under blend `k`."""
    return [
        Replay(d, matches_a(d, corpora[d.split], k), matches_b(d, corpora[d.split], k), background, parts) for d in sets
    ]


def run_sweep(
    sets: Sequence[LabelledSet],
    embedder: Embedder,
    current: Tuning,
    background: Background = NO_BACKGROUND,
    parts: Parts = NO_PARTS,
) -> None:
    """Print, per blend, words share and best-thought share, the steadiest point, then the curve at `current`."""
    corpora = {d.split: corpus(d, embedder, parts.name_share) for d in sets}
    for k in BLENDS:
        rs = replays(sets, corpora, k, background, parts)
        for words, best in itertools.product(WORDS, BEST):
            at = f"blend_k {k} words {words} best_thought {best}"
            found = best_point(rs, k, words, best)
            if found is None:
                print(f"sweep {at}: no threshold holds the rule")
                continue
            tuning, worst = found
            print(f"sweep {at}: threshold {tuning.threshold} (worst recall ±0.02 {worst:.3f})")
            for r in rs:
                print(f"    {r.data.split}: {_fmt(*r.scores(tuning))}")
    curve(sets, corpora, current, background, parts)


def curve(
    sets: Sequence[LabelledSet],
    corpora: Mapping[str, Corpus],
    tuning: Tuning,
    background: Background = NO_BACKGROUND,
    parts: Parts = NO_PARTS,
) -> None:
    """Each split's scores at `tuning` and at thresholds from -0.04 to +0.04 around it, by 0.01."""
    rs = replays(sets, corpora, tuning.blend_k, background, parts)
    for step in range(-4, 5):
        t = Tuning(round(tuning.threshold + 0.01 * step, 2), tuning.words, tuning.blend_k, tuning.best_thought)
        for r in rs:
            print(
                f"around blend_k {t.blend_k} words {t.words} best_thought {t.best_thought}, threshold {t.threshold}, "
                f"{r.data.split}: {_fmt(*r.scores(t))}"
            )


def splits_arg(text: str, tuning: bool) -> list[str]:
    """The splits of a run; a calibration grid refuses test (it is never tuned on)."""
    splits = [s.strip() for s in text.split(",") if s.strip()]
    if tuning and "test" in splits:
        raise SystemExit("the sweep is calibration: run it on train and dev only, never on test (--curve reports)")
    return splits


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--splits", default="train,dev")
    parser.add_argument("--model", type=Path, help="an ONNX embedding model other than the shipped one")
    parser.add_argument("--pooling", choices=("mean", "cls"), default="mean", help="how --model pools tokens")
    parser.add_argument("--threshold", type=float, default=TUNING.threshold, help="the point to show around")
    parser.add_argument("--words", type=float, default=TUNING.words)
    parser.add_argument("--blend-k", type=float, default=TUNING.blend_k)
    parser.add_argument("--best-thought", type=float, default=TUNING.best_thought)
    parser.add_argument(
        "--background",
        type=float,
        default=0.0,
        help="measured, not shipped: subtract this share of the sequence's mean similarity to its other threads",
    )
    parser.add_argument("--background-prior", type=float, default=Background.prior)
    parser.add_argument("--background-weight", type=float, default=Background.weight)
    parser.add_argument("--first-thought", type=float, default=0.0, help="measured, not shipped: see Parts")
    parser.add_argument("--last-thought", type=float, default=0.0, help="measured, not shipped: see Parts")
    parser.add_argument("--halves", type=float, default=0.0, help="measured, not shipped: see Parts")
    parser.add_argument("--name-share", type=float, default=0.0, help="measured, not shipped: see Parts")
    parser.add_argument(
        "--curve", action="store_true", help="no grid: only the curve around the point (a report; test allowed)"
    )
    args = parser.parse_args(argv)
    embedder = cached_embedder(args.model, args.pooling)
    print(f"model {model_tag(args.model, args.pooling)}; shipped tuning {TUNING}")
    sets = [load(s) for s in splits_arg(args.splits, tuning=not args.curve)]
    point = Tuning(args.threshold, args.words, args.blend_k, args.best_thought)
    background = Background(args.background, args.background_prior, args.background_weight)
    if background.share:
        print(f"background {background}")
    parts = Parts(args.first_thought, args.last_thought, args.halves, args.name_share)
    if parts != NO_PARTS:
        print(f"parts {parts}")
    if args.curve:
        curve(sets, {d.split: corpus(d, embedder, parts.name_share) for d in sets}, point, background, parts)
    else:
        run_sweep(sets, embedder, point, background, parts)


if __name__ == "__main__":
    main()
