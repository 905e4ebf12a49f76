"""The vector side's evidence for every phrasing of one query, per thought.

`score_phrasings` turns the dense index's scores of each phrasing (the question first, then its
alternatives; one matrix product for all of them) into per-thought numbers: each phrasing's
`sem` (mean of whole-thought and best-passage cosine), sequence cosine and best single-vector
cosine, and what is taken across phrasings (the alternatives' best, the mean over all). The
candidate side reads `top` (one phrasing) and `top_fused` (the mean over phrasings).
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
    """Dense evidence of every phrasing over every thought (rows in `scores[0].thought_ids` order)."""

    scores: Sequence[Scores]
    sem_all: Floats  # phrasings x thoughts: (whole + best) / 2
    combined: Floats  # phrasings x thoughts: sem + seq weight x sequence cosine
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
        return Phrasings(self.scores, self.sem_all, self.combined, self.scores[0].lookup(ids))

    def has(self, tid: int) -> bool:
        """Whether the thought has vectors (and was looked up)."""
        return tid in self.rows

    def sem(self, phrasing: int, tid: int) -> float:
        """One phrasing's sem of a thought (0 without vectors)."""
        row = self.rows.get(tid)
        s = self.scores[phrasing]
        return 0.0 if row is None else float(s.whole[row] + s.best[row]) / 2

    def seq(self, phrasing: int, tid: int) -> float:
        """One phrasing's cosine of the thought's sequence (0 without vectors)."""
        row = self.rows.get(tid)
        return 0.0 if row is None else float(self.scores[phrasing].sequence[row])

    def best(self, phrasing: int, tid: int) -> float:
        """One phrasing's best single-vector cosine of a thought."""
        return float(self.scores[phrasing].best[self.rows[tid]])

    def best_any(self, tid: int) -> float:
        """The best single-vector cosine of any phrasing."""
        row = self.rows[tid]
        return max(float(s.best[row]) for s in self.scores)

    def sem_mean(self, tid: int) -> float:
        """The mean sem over every phrasing (0 without vectors)."""
        row = self.rows.get(tid)
        return 0.0 if row is None else float(self.sem_all[:, row].mean())

    def sem_max_alternative(self, tid: int) -> float:
        """The best sem of the alternatives (the question's own without any)."""
        row = self.rows.get(tid)
        if row is None:
            return 0.0
        return float(self.sem_all[1:, row].max()) if len(self.scores) > 1 else float(self.sem_all[0, row])

    def seq_max_alternative(self, tid: int) -> float:
        """The best sequence cosine of the alternatives."""
        row = self.rows.get(tid)
        if row is None:
            return 0.0
        return max(float(s.sequence[row]) for s in (self.scores[1:] or self.scores))

    def best_slot(self, tid: int) -> int:
        """Which of the thought's vectors matched best, over the phrasing whose best match is highest."""
        row = self.rows[tid]
        phrasing = max(range(len(self.scores)), key=lambda p: float(self.scores[p].best[row]))
        return self.scores[phrasing].best_slot(row)


def score_phrasings(scores: Sequence[Scores], seq_weight: float) -> Phrasings:
    """The per-phrasing evidence arrays from the index's scores of each phrasing."""
    sem = np.vstack([(s.whole + s.best) / 2 for s in scores]).astype(np.float32)
    combined = np.vstack([(s.whole + s.best) / 2 + seq_weight * s.sequence for s in scores]).astype(np.float32)
    return Phrasings(scores, sem, combined)
