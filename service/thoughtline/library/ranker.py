"""The learned parts of search: candidate features, the linear ranker and the abstention model.

Both models are plain numbers (`ranker_weights.json`, written by `bench/train_ranker.py` from the
reasoning set's train and dev splits, never test) evaluated in numpy: no training library at run time. Features
are cheap and computed per query over the candidate pool (keyword top 50, vector top 50 and their
neighbours); every one is defined by `candidate_features` or `query_features` below.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np
from numpy.typing import NDArray

Matrix = NDArray[np.float64]

CANDIDATE_FEATURES = (
    "kw_z",  # BM25 (body, context, title, phrase bonus) z-scored over the keyword side; side minimum if missed
    "kw_rr",  # 1 / keyword rank (0 if not a keyword candidate)
    "sem",  # mean of whole-thought and best-passage cosine
    "sem_gap",  # sem minus the pool's best sem
    "seq_cos",  # cosine of the sequence's mean vector
    "dense_rr",  # 1 / vector rank of sem + seq weight x seq_cos (0 if not a vector candidate)
    "coverage",  # IDF-weighted share of the query's terms in the thought's own text
    "all_terms",  # 1 when every query term is in the thought's own text
    "phrase",  # 1 when two adjacent query words are adjacent in the thought
    "log_len",  # log of the thought's length in characters
    "neighbour_sem",  # best sem of the steps just before and after it
    "seq_best",  # best sem of another pool thought in the same sequence
)
QUERY_FEATURES = (
    "top_sem",  # best sem in the pool
    "top_best",  # best single-vector cosine (whole thought or passage) in the pool
    "top_margin",  # best sem minus the mean sem of the vector top 50
    "top_seq",  # best sequence cosine
    "best_coverage",  # best IDF-weighted term coverage among the top 5
    "all_terms_hit",  # 1 when some thought holds every query term
    "agree",  # 1 when the keyword and vector sides share a top-5 candidate
    "idf_mass",  # log(1 + summed IDF of query terms found in the store) / 10
    "unseen",  # share of the query's terms that no stored thought holds
    "top_rank",  # the ranker's best score in the pool
    "rank_margin",  # the ranker's best score minus its fifth best
    "seq_coverage",  # best IDF-weighted share of the query's terms held anywhere in a top-3 sequence
)


@dataclass(frozen=True)
class Linear:
    """A standardised linear model: score = ((x - mean) / scale) · coef + bias."""

    mean: NDArray[np.float64]
    scale: NDArray[np.float64]
    coef: NDArray[np.float64]
    bias: float

    def score(self, x: Matrix) -> NDArray[np.float64]:
        """One score per row of `x`."""
        out: NDArray[np.float64] = ((x - self.mean) / self.scale) @ self.coef + self.bias
        return out

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Linear:
        """A model from its JSON form."""
        return cls(
            np.asarray(raw["mean"], dtype=np.float64),
            np.asarray(raw["scale"], dtype=np.float64),
            np.asarray(raw["coef"], dtype=np.float64),
            float(raw["bias"]),
        )

    def to_json(self) -> dict[str, Any]:
        """The JSON form (for the training script)."""
        return {
            "mean": [round(float(v), 6) for v in self.mean],
            "scale": [round(float(v), 6) for v in self.scale],
            "coef": [round(float(v), 6) for v in self.coef],
            "bias": round(self.bias, 6),
        }


@dataclass(frozen=True)
class Models:
    """The shipped ranker, abstention model and its threshold."""

    ranker: Linear | None
    abstain: Linear | None
    abstain_above: float
    seq_weight: float


def load_models(raw: Mapping[str, Any] | None = None) -> Models:
    """The shipped weights (or `raw`, for training and tests); missing parts fall back to hand rules."""
    if raw is None:
        path = resources.files("thoughtline") / "library" / "ranker_weights.json"
        raw = json.loads(path.read_text())
    ranker = raw.get("ranker")
    abstain = raw.get("abstain")
    return Models(
        ranker=None if ranker is None else Linear.from_json(ranker),
        abstain=None if abstain is None else Linear.from_json(abstain),
        abstain_above=float(raw.get("abstain_above", 0.5)),
        seq_weight=float(raw.get("seq_weight", 0.5)),
    )


def zscores(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """Standardise to mean 0, deviation 1; no spread maps to 0."""
    if values.size < 2:
        return np.zeros_like(values)
    spread = float(values.std())
    if spread <= 0:
        return np.zeros_like(values)
    out: NDArray[np.float64] = (values - values.mean()) / spread
    return out


@dataclass(frozen=True)
class Evidence:
    """Per-candidate inputs of the features, one entry per pool thought, in pool order."""

    keyword: Sequence[float | None]  # BM25 score, None when not a keyword candidate
    keyword_rank: Sequence[int | None]
    sem: Sequence[float]
    seq_cos: Sequence[float]
    dense_rank: Sequence[int | None]
    coverage: Sequence[float]
    phrase: Sequence[bool]
    length: Sequence[int]
    neighbour_sem: Sequence[float]
    seq_best: Sequence[float]


def candidate_features(ev: Evidence) -> Matrix:
    """The feature matrix (pool x CANDIDATE_FEATURES) of one query's pool."""
    n = len(ev.sem)
    kw_known = np.array([v for v in ev.keyword if v is not None], dtype=np.float64)
    kz = zscores(kw_known)
    floor = (float(kz.min()) if float(kz.max()) > float(kz.min()) else float(kz.min()) - 1.0) if kz.size else 0.0
    kw_z = np.full(n, floor)
    it = iter(kz)
    for i, v in enumerate(ev.keyword):
        if v is not None:
            kw_z[i] = next(it)
    sem = np.asarray(ev.sem, dtype=np.float64)
    top = float(sem.max()) if n else 0.0
    cols = [
        kw_z,
        np.array([0.0 if r is None else 1.0 / (r + 1) for r in ev.keyword_rank]),
        sem,
        sem - top,
        np.asarray(ev.seq_cos, dtype=np.float64),
        np.array([0.0 if r is None else 1.0 / (r + 1) for r in ev.dense_rank]),
        np.asarray(ev.coverage, dtype=np.float64),
        np.array([1.0 if c >= 0.999 else 0.0 for c in ev.coverage]),
        np.array([1.0 if p else 0.0 for p in ev.phrase]),
        np.log1p(np.asarray(ev.length, dtype=np.float64)),
        np.asarray(ev.neighbour_sem, dtype=np.float64),
        np.asarray(ev.seq_best, dtype=np.float64),
    ]
    return np.column_stack(cols) if n else np.zeros((0, len(CANDIDATE_FEATURES)))


def query_features(
    sem: Sequence[float],
    best: Sequence[float],
    dense_top: Sequence[float],
    seq_cos: Sequence[float],
    top5_coverage: Sequence[float],
    all_terms_hit: bool,
    agree: bool,
    idf_found: float,
    unseen: float,
    ranked: NDArray[np.float64],
    sequence_coverage: float,
) -> NDArray[np.float64]:
    """The abstention model's inputs for one query (see QUERY_FEATURES)."""
    top = max(sem, default=0.0)
    mean = sum(dense_top) / len(dense_top) if dense_top else 0.0
    return np.array(
        [
            top,
            max(best, default=0.0),
            top - mean,
            max(seq_cos, default=0.0),
            max(top5_coverage, default=0.0),
            1.0 if all_terms_hit else 0.0,
            1.0 if agree else 0.0,
            math.log1p(idf_found) / 10,
            unseen,
            float(ranked.max()) if ranked.size else 0.0,
            float(ranked.max() - np.sort(ranked)[-min(5, ranked.size)]) if ranked.size else 0.0,
            sequence_coverage,
        ]
    )


# The abstention model was calibrated on a store of ~560 thoughts. In a smaller store most words
# are unseen, IDF is flat and the pool is a handful of thoughts, so the vocabulary and
# pool-relative features say little: they are pulled towards the calibration mean in proportion
# to how much smaller the store is. Cosine levels and term coverage keep their full weight.
CALIBRATION_STORE = 500
VOCABULARY_FEATURES = ("idf_mass", "unseen", "top_margin", "top_rank", "rank_margin", "agree")


def shrink_vocabulary(features: NDArray[np.float64], model: Linear, thoughts: int) -> NDArray[np.float64]:
    """`features` with the vocabulary columns shrunk towards `model`'s mean in small stores."""
    trust = min(1.0, thoughts / CALIBRATION_STORE)
    if trust >= 1.0:
        return features
    out = features.copy()
    for name in VOCABULARY_FEATURES:
        i = QUERY_FEATURES.index(name)
        out[i] = trust * out[i] + (1 - trust) * model.mean[i]
    return out


def idf(document_frequency: int, total: int) -> float:
    """BM25's inverse document frequency (never negative)."""
    return math.log(1.0 + (total - document_frequency + 0.5) / (document_frequency + 0.5))
