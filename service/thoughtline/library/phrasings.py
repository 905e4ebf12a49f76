"""The vector side's evidence for every phrasing of one query, per thought.

`score_phrasings` turns the dense index's scores of each phrasing (the question first, then its
alternatives; one matrix product for all of them) into per-thought arrays: each phrasing's `sem`
(mean of whole-thought and best-passage cosine), sequence cosine and best single-vector cosine,
and what is taken across phrasings (the alternatives' best, the mean over all). Every array is
computed once over the whole store in numpy; the pipeline then reads the pool's rows of it in
bulk (`values`), never one thought at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from thoughtline.library.dense import Scores

Floats = NDArray[np.float32]


@dataclass(frozen=True)
class Phrasings:
    """Dense evidence of every phrasing over every thought (columns in `scores[0].thought_ids` order)."""

    scores: Sequence[Scores]
    sem: Floats  # phrasings x thoughts: (whole + best) / 2
    sequence: Floats  # phrasings x thoughts: cosine of the thought's sequence
    best: Floats  # phrasings x thoughts: best single-vector cosine
    combined: Floats  # phrasings x thoughts: sem + seq weight x sequence cosine
    sem_mean: Floats  # mean sem over every phrasing
    alt_sem_max: Floats  # best sem over the alternatives (the question's own without any)
    alt_seq_max: Floats  # best sequence cosine over the alternatives (likewise)
    best_any: Floats  # best single-vector cosine of any phrasing
    rows: dict[int, int] = field(default_factory=dict)

    def top(self, phrasing: int, k: int, allowed: Sequence[int] | None) -> dict[int, float]:
        """The `k` best thoughts of one phrasing's combined score (only `allowed` ones, when given)."""
        return self._top(self.combined[phrasing], k, allowed)

    def top_fused(self, k: int, allowed: Sequence[int] | None) -> dict[int, float]:
        """The `k` best thoughts by the combined score's mean over every phrasing."""
        return self._top(self.combined.mean(axis=0), k, allowed)

    def _top(self, combined: Floats, k: int, allowed: Sequence[int] | None) -> dict[int, float]:
        ids = self.scores[0].thought_ids
        if allowed is not None:
            combined = np.where(np.isin(ids, np.asarray(allowed, dtype=np.int64)), combined, -np.inf)
        if combined.size == 0:
            return {}
        k = min(k, combined.size)
        top = np.argpartition(-combined, k - 1)[:k]
        return {int(ids[i]): float(combined[i]) for i in top if np.isfinite(combined[i])}

    def restricted(self, ids: Sequence[int]) -> Phrasings:
        """The same evidence, with the rows of `ids` looked up once (thoughts without vectors are left out)."""
        return Phrasings(
            self.scores,
            self.sem,
            self.sequence,
            self.best,
            self.combined,
            self.sem_mean,
            self.alt_sem_max,
            self.alt_seq_max,
            self.best_any,
            self.scores[0].lookup(ids),
        )

    def has(self, tid: int) -> bool:
        """Whether the thought has vectors (and was looked up)."""
        return tid in self.rows

    def values(self, array: Floats, ids: Sequence[int]) -> dict[int, float]:
        """`array`'s value for each looked-up id; 0 for a thought without vectors."""
        at = np.array([self.rows.get(t, -1) for t in ids], dtype=np.int64)
        if not at.size:
            return {}
        if not array.size:  # a store without any vector yet (keyword matches only)
            return dict.fromkeys(ids, 0.0)
        got = np.where(at >= 0, array[np.maximum(at, 0)], 0.0).astype(np.float64)
        return dict(zip(ids, got.tolist(), strict=True))

    def best_slot(self, tid: int) -> int:
        """Which of the thought's vectors matched best, over the phrasing whose best match is highest."""
        row = self.rows[tid]
        return self.scores[int(np.argmax(self.best[:, row]))].best_slot(row)


def score_phrasings(scores: Sequence[Scores], seq_weight: float) -> Phrasings:
    """The per-phrasing evidence arrays from the index's scores of each phrasing."""
    # Float32 throughout (no copies where the arrays already are); `combined` adds to `sem` the
    # same float32s per element as computing (whole + best) / 2 + weight x sequence again.
    sem = np.vstack([(s.whole + s.best) / 2 for s in scores]).astype(np.float32, copy=False)
    sequence = np.vstack([s.sequence for s in scores]).astype(np.float32, copy=False)
    best = np.vstack([s.best for s in scores]).astype(np.float32, copy=False)
    combined = (sem + seq_weight * sequence).astype(np.float32, copy=False)
    alternatives = slice(1, None) if len(scores) > 1 else slice(0, 1)
    return Phrasings(
        scores,
        sem,
        sequence,
        best,
        combined,
        sem.mean(axis=0),
        sem[alternatives].max(axis=0),
        sequence[alternatives].max(axis=0),
        best.max(axis=0),
    )
