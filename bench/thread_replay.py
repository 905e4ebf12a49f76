"""Both proposal flows replayed in memory on one split, for `bench.thread_sweep`.

A split is embedded and tokenized once (`corpus`); each flow's matchings (`matches_a`,
`matches_b`) then fix, per sequence and thread, the cosines the service's rules give (`library.proposals`),
with document frequencies counted as the store would hold them at each matching. `decide` re-decides
them at any threshold, words share and measured-only variant (`Background`, `Parts`) without
embedding again.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import apsw
import numpy as np
from numpy.typing import NDArray

from bench.eval_threads import LabelledSet, Score, score
from thoughtline.library.embed import Embedder
from thoughtline.library.proposals import (
    MIN_TERMS,
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
    if len(c.counts[seq_id]) < MIN_TERMS:  # never proposed, as `enough_words` rules
        return {}, {}
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
