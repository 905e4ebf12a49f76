"""Proposal rules: thread and sequence vectors and words, and which (thread, sequence) pairs to propose.

Pure functions over numpy vectors and term counts (SPEC §5.3 "3. Proposals"); the store work
around them is in `library/matching.py` and its SQL in `storage/proposals.py` and
`storage/threads.py` (the term statistics). Each thread judges each sequence on its own: a
sequence that fits two threads is proposed to both. The numbers in `Tuning` were calibrated on
the dev split of `bench/data/reasoning/` for the shipped MiniLM, train as the check, never test
(`python -m bench.thread_sweep --splits dev`), and are explained in docs/threads.md, "Proposals".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

Vector = NDArray[np.float32]
# A sparse TF-IDF vector of unit length: index term -> weight.
Terms = dict[str, float]


@dataclass(frozen=True)
class Tuning:
    """The calibrated knobs of matching.

    `threshold`: the least similarity a proposed pair has. `words`: the share of the TF-IDF
    cosine in that similarity, the rest being the embeddings' part. `best_thought`: the share,
    within the embeddings' part, of the cosine of the sequence's closest thought (its evidence),
    the rest being the cosine of the sequence's mean vector. `blend_k`: a thread with n confirmed
    members weighs their centroid n / (n + blend_k) against its description (for its vector and
    its words alike).

    `best_thought` ships at 0 (the mean vector alone): 0.5 at threshold 0.38 widened dev's steady
    band but lost precision on the held-out test split, so it stays a measured option only.
    """

    threshold: float = 0.39
    words: float = 0.5
    blend_k: float = 1.0
    best_thought: float = 0.0


TUNING = Tuning()

# A sequence with fewer distinct words than this is never proposed: one shared word would decide its
# TF-IDF cosine ("threads" against a thread "with many members"), and a line or two says little
# about a topic. The labelled sets' shortest sequences hold 32 (dev) and 70 (train) distinct terms,
# so the floor never binds on them; the calibration is unchanged.
MIN_TERMS = 8


def enough_words(words: Terms) -> bool:
    """Whether a sequence says enough (`MIN_TERMS` distinct words) to be proposed to any thread."""
    return len(words) >= MIN_TERMS


@dataclass(frozen=True)
class Pick:
    """A thread a sequence is proposed to, with its similarity and best-matching thought."""

    thread: int
    similarity: float
    evidence_thought: int


@dataclass(frozen=True)
class ThreadProfile:
    """What a sequence is judged against: a thread's vector and its words (either may be missing)."""

    vector: Vector | None
    terms: Terms


def unit(vector: NDArray[np.float32]) -> Vector | None:
    """`vector` scaled to unit length, or None for a zero vector."""
    norm = float(np.linalg.norm(vector))
    if norm < 1e-9:
        return None
    scaled: Vector = (vector / norm).astype(np.float32)
    return scaled


def sequence_vector(thought_vectors: NDArray[np.float32]) -> Vector | None:
    """A sequence's vector: the normalised mean of its thoughts' vectors (None when it has none)."""
    if thought_vectors.shape[0] == 0:
        return None
    return unit(thought_vectors.mean(axis=0))


def member_weight(members: int, blend_k: float) -> float:
    """The share of the member centroid in a thread's vector: n / (n + k), growing with n."""
    if members <= 0:
        return 0.0
    return members / (members + blend_k)


def thread_vector(description: Vector | None, member_vectors: Sequence[Vector], blend_k: float) -> Vector | None:
    """The description's embedding blended with the centroid of the confirmed members.

    A thread without a description is its members' centroid; without either it has no vector
    and is never matched.
    """
    centroid = unit(np.mean(np.stack(member_vectors), axis=0)) if member_vectors else None
    if centroid is None:
        return description
    if description is None:
        return centroid
    w = member_weight(len(member_vectors), blend_k)
    return unit((1.0 - w) * description + w * centroid)


def _unit_terms(weights: Mapping[str, float]) -> Terms:
    norm = math.sqrt(sum(w * w for w in weights.values()))
    if norm < 1e-12:
        return {}
    return {t: w / norm for t, w in weights.items() if w > 0.0}


def term_vector(counts: Mapping[str, int], frequency: Mapping[str, int], documents: int) -> Terms:
    """A text's TF-IDF vector: (1 + ln tf) · (1 + ln((1 + N) / (1 + df))), scaled to unit length.

    `frequency` (df) and `documents` (N) are the store's own: a word every thought uses weighs
    least, a project's names (a client, a service, a place) weigh most. The 1 + keeps every word
    in play, so a young store with a handful of thoughts still compares words.
    """
    weights = {
        term: (1.0 + math.log(tf)) * (1.0 + math.log((1 + documents) / (1 + frequency.get(term, 0))))
        for term, tf in counts.items()
        if tf > 0
    }
    return _unit_terms(weights)


def thread_terms(description: Terms, member_terms: Sequence[Terms], blend_k: float) -> Terms:
    """A thread's words: its description's TF-IDF blended with its members' centroid, as for vectors."""
    members = [m for m in member_terms if m]
    if not members:
        return description
    centroid: dict[str, float] = {}
    for m in members:
        for term, w in m.items():
            centroid[term] = centroid.get(term, 0.0) + w
    centroid = _unit_terms(centroid)
    if not description:
        return centroid
    share = member_weight(len(members), blend_k)
    blended = {t: (1.0 - share) * w for t, w in description.items()}
    for term, w in centroid.items():
        blended[term] = blended.get(term, 0.0) + share * w
    return _unit_terms(blended)


def term_cosine(a: Terms, b: Terms) -> float:
    """The cosine of two unit TF-IDF vectors (0 when either is empty)."""
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    return sum(w * large.get(t, 0.0) for t, w in small.items())


def similarity(vector_cosine: float, words_cosine: float, tuning: Tuning) -> float:
    """How well a sequence fits a thread: the embeddings' part and the TF-IDF cosine, weighed."""
    return (1.0 - tuning.words) * vector_cosine + tuning.words * words_cosine


def embedding_part(sequence: Vector, thought_vectors: NDArray[np.float32], thread: Vector, tuning: Tuning) -> float:
    """The embeddings' part of the similarity: the mean vector's cosine, blended with the closest thought's.

    `best_thought` weighs the closest thought (0 ships, so the part is the mean's cosine and no
    per-thought product is made for pairs never proposed): a member usually has one thought
    squarely about its thread, while a same-domain stranger is near it everywhere and close
    nowhere. On dev that widened the gap the mean alone leaves; on test it did not
    (docs/threads.md, "Calibration").
    """
    mean = float(sequence @ thread)
    if not tuning.best_thought:
        return mean
    return (1.0 - tuning.best_thought) * mean + tuning.best_thought * float(np.max(thought_vectors @ thread))


def closest_thought(thought_vectors: NDArray[np.float32], thread: Vector) -> int:
    """The index of the thought closest to a thread's vector: a proposal's evidence."""
    return int(np.argmax(thought_vectors @ thread))


def picks(
    threads: Mapping[int, ThreadProfile],
    thought_ids: Sequence[int],
    thought_vectors: NDArray[np.float32],
    words: Terms,
    tuning: Tuning,
) -> list[Pick]:
    """Every thread one sequence (its thoughts' ids and vectors, and its words) is proposed to.

    Each thread judges the sequence on its own: every thread whose similarity reaches the
    threshold, in thread order. A thread without a vector is never matched; a sequence without
    one matches nothing. The evidence is the thought closest to the thread's vector (the one
    `best_thought` weighs).
    """
    seq = sequence_vector(thought_vectors)
    if seq is None:
        return []
    out: list[Pick] = []
    for thread, basis in sorted(threads.items()):
        if basis.vector is None:
            continue
        dense = embedding_part(seq, thought_vectors, basis.vector, tuning)
        score = similarity(dense, term_cosine(words, basis.terms), tuning)
        if score >= tuning.threshold:
            evidence = closest_thought(thought_vectors, basis.vector)
            out.append(Pick(thread, round(score, 4), thought_ids[evidence]))
    return out
