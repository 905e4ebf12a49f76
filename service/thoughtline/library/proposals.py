"""Proposal rules: thread and sequence vectors, and which (thread, sequence) pairs to propose.

Pure functions over numpy vectors (SPEC §5.3 "3. Proposals"); the store work around them is in
`library/matching.py` and its SQL in `storage/proposals.py`. The numbers in `Tuning` were
calibrated on the train and dev splits of `bench/data/reasoning/` for the fine-tuned MiniLM
(candidate.onnx, sha256 db9135cbae16…; `python -m bench.thread_sweep --splits train,dev --model PATH`) and are
explained in docs/threads.md, "Proposals".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

Vector = NDArray[np.float32]


@dataclass(frozen=True)
class Tuning:
    """The calibrated knobs of matching.

    `threshold`: the least cosine similarity a proposed pair has. `margin`: how far the best
    thread must lead the runner-up thread for that sequence. `blend_k`: a thread with n confirmed
    members weighs their centroid n / (n + blend_k) against its description's embedding.
    """

    threshold: float = 0.54
    margin: float = 0.08
    blend_k: float = 1.0


TUNING = Tuning()


@dataclass(frozen=True)
class Pick:
    """The thread a sequence is proposed to, with its similarity and best-matching thought."""

    thread: int
    similarity: float
    evidence_thought: int


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


def best_thread(similarities: Mapping[int, float], tuning: Tuning) -> tuple[int, float] | None:
    """The thread a sequence should be proposed to, if any: (thread, similarity).

    The best thread qualifies when it reaches the threshold and leads the runner-up by the
    margin; a sequence close to two threads is proposed to neither (a near miss looks like that).
    With one thread there is no runner-up and the threshold alone decides.
    """
    if not similarities:
        return None
    ranked = sorted(similarities.items(), key=lambda item: (-item[1], item[0]))
    thread, best = ranked[0]
    runner_up = ranked[1][1] if len(ranked) > 1 else -1.0
    if best < tuning.threshold or best - runner_up < tuning.margin:
        return None
    return thread, best


def pick(
    thread_vectors: Mapping[int, Vector],
    thought_ids: Sequence[int],
    thought_vectors: NDArray[np.float32],
    tuning: Tuning,
) -> Pick | None:
    """Match one sequence (its thoughts' ids and vectors) against every active thread's vector."""
    seq = sequence_vector(thought_vectors)
    if seq is None or not thread_vectors:
        return None
    sims = {t: float(seq @ v) for t, v in thread_vectors.items()}
    chosen = best_thread(sims, tuning)
    if chosen is None:
        return None
    thread, similarity = chosen
    evidence = int(np.argmax(thought_vectors @ thread_vectors[thread]))
    return Pick(thread, round(similarity, 4), thought_ids[evidence])
