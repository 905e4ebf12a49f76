"""The learned parts of search: candidate features, the linear rankers and the abstention models.

The models are plain numbers (`ranker_weights.json`, written by `bench/train_ranker.py` from the
reasoning set's train and dev splits, never test) evaluated in numpy: no training library at run
time. There are two sets: one for a question alone, one for a question sent with alternatives
(other phrasings), each a ranker, an abstention model and its threshold. Features are cheap,
computed per query over the candidate pool, and always read by name (a `Table`), so a model
names the columns it was fitted on; every one is defined below.
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
Column = NDArray[np.float64]

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
# With alternatives: the same evidence taken across every phrasing (question and alternatives).
ALTERNATIVE_FEATURES = (
    "alt_sem_max",  # best sem over the alternatives
    "all_sem_mean",  # mean sem over every phrasing
    "alt_seq_max",  # best sequence cosine over the alternatives
    "alt_kw_z",  # BM25 of the alternatives' words (and phrases), z-scored like kw_z
    "alt_coverage",  # IDF-weighted share of the alternatives' terms in the thought's own text
    "fused_rr",  # 1 / rank by the mean over phrasings of sem + seq weight x seq_cos
    "alt_neighbour_sem",  # best all_sem_mean of the steps just before and after it
    "alt_seq_best",  # best all_sem_mean of another pool thought in the same sequence
)
ALTERNATIVE_QUERY_FEATURES = (
    "alt_top_mean",  # best all_sem_mean in the pool
    "alt_top_max",  # best alt_sem_max in the pool
    "alt_top_best",  # best single-vector cosine of any phrasing in the pool
    "alt_best_coverage",  # best alt_coverage among the top 5
    "alt_unseen",  # share of the alternatives' terms no stored thought holds
    "alt_agree",  # 1 when the alternatives' keyword side and the fused vector side share a top-5 candidate
)


@dataclass(frozen=True)
class Table:
    """Feature columns by name: rows are pool thoughts (or the one query)."""

    names: tuple[str, ...]
    matrix: Matrix

    @classmethod
    def of(cls, columns: Mapping[str, Sequence[float] | Column], rows: int) -> Table:
        """A table from named columns of equal length `rows`."""
        names = tuple(columns)
        if rows == 0 or not names:
            return cls(names, np.zeros((rows, len(names))))
        return cls(names, np.column_stack([np.asarray(columns[n], dtype=np.float64) for n in names]))

    @property
    def rows(self) -> int:
        """How many rows the table has."""
        return int(self.matrix.shape[0])

    def column(self, name: str) -> Column:
        """One column by name."""
        out: Column = self.matrix[:, self.names.index(name)]
        return out

    def select(self, names: Sequence[str]) -> Matrix:
        """The named columns, in that order (a model's inputs)."""
        out: Matrix = self.matrix[:, [self.names.index(n) for n in names]]
        return out

    def with_column(self, name: str, values: Column) -> Table:
        """A copy with one column replaced."""
        matrix = self.matrix.copy()
        matrix[:, self.names.index(name)] = values
        return Table(self.names, matrix)


@dataclass(frozen=True)
class Linear:
    """A standardised linear model over named features: score = ((x - mean) / scale) · coef + bias."""

    features: tuple[str, ...]
    mean: NDArray[np.float64]
    scale: NDArray[np.float64]
    coef: NDArray[np.float64]
    bias: float

    def score(self, table: Table) -> NDArray[np.float64]:
        """One score per row of `table`, reading the model's own columns by name."""
        return self.score_matrix(table.select(self.features))

    def score_matrix(self, x: Matrix) -> NDArray[np.float64]:
        """One score per row of `x`, whose columns are `features` in order (training)."""
        out: NDArray[np.float64] = ((x - self.mean) / self.scale) @ self.coef + self.bias
        return out

    @classmethod
    def from_json(cls, raw: Mapping[str, Any], features: Sequence[str] | None = None) -> Linear:
        """A model from its JSON form (`features`: the names, for files that keep them beside the model)."""
        return cls(
            tuple(raw.get("features", features or ())),
            np.asarray(raw["mean"], dtype=np.float64),
            np.asarray(raw["scale"], dtype=np.float64),
            np.asarray(raw["coef"], dtype=np.float64),
            float(raw["bias"]),
        )

    def to_json(self) -> dict[str, Any]:
        """The JSON form (for the training script)."""
        return {
            "features": list(self.features),
            "mean": [round(float(v), 6) for v in self.mean],
            "scale": [round(float(v), 6) for v in self.scale],
            "coef": [round(float(v), 6) for v in self.coef],
            "bias": round(self.bias, 6),
        }


@dataclass(frozen=True)
class Models:
    """One ranker, abstention model and threshold (for a question alone, or with alternatives)."""

    ranker: Linear | None
    abstain: Linear | None
    abstain_above: float
    seq_weight: float


@dataclass(frozen=True)
class ModelSet:
    """The shipped models: `question` for a question alone, `alternatives` for one sent with them."""

    question: Models
    alternatives: Models

    def pick(self, has_alternatives: bool) -> Models:
        """The models for a query with or without alternatives."""
        return self.alternatives if has_alternatives else self.question


def _models(raw: Mapping[str, Any], seq_weight: float) -> Models:
    ranker = raw.get("ranker")
    abstain = raw.get("abstain")
    return Models(
        ranker=None if ranker is None else Linear.from_json(ranker, raw.get("features")),
        abstain=None if abstain is None else Linear.from_json(abstain, raw.get("query_features")),
        abstain_above=float(raw.get("abstain_above", 0.5)),
        seq_weight=seq_weight,
    )


def load_models(raw: Mapping[str, Any] | None = None) -> ModelSet:
    """The shipped weights (or `raw`, for training and tests); missing parts fall back to hand rules.

    `raw` holds a "question" and an "alternatives" section; a file with only one flat set (before
    alternatives) serves both.
    """
    if raw is None:
        path = resources.files("thoughtline") / "library" / "ranker_weights.json"
        raw = json.loads(path.read_text())
    seq_weight = float(raw.get("seq_weight", 0.5))
    question = _models(raw.get("question", raw), seq_weight)
    alternatives = _models(raw["alternatives"], seq_weight) if "alternatives" in raw else question
    return ModelSet(question, alternatives)


def zscores(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """Standardise to mean 0, deviation 1; no spread maps to 0."""
    if values.size < 2:
        return np.zeros_like(values)
    spread = float(values.std())
    if spread <= 0:
        return np.zeros_like(values)
    out: NDArray[np.float64] = (values - values.mean()) / spread
    return out


def keyword_z(keyword: Sequence[float | None]) -> Column:
    """BM25 scores z-scored over the candidates that have one; the others get the side's minimum
    (or one below it when every score is equal, so a lone keyword hit still stands out)."""
    n = len(keyword)
    kz = zscores(np.array([v for v in keyword if v is not None], dtype=np.float64))
    floor = (float(kz.min()) if float(kz.max()) > float(kz.min()) else float(kz.min()) - 1.0) if kz.size else 0.0
    out = np.full(n, floor)
    it = iter(kz)
    for i, v in enumerate(keyword):
        if v is not None:
            out[i] = next(it)
    return out


def _reciprocal(ranks: Sequence[int | None]) -> Column:
    return np.array([0.0 if r is None else 1.0 / (r + 1) for r in ranks], dtype=np.float64)


@dataclass(frozen=True)
class Evidence:
    """Per-candidate inputs of the question's features, one entry per pool thought, in pool order."""

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


@dataclass(frozen=True)
class AlternativeEvidence:
    """Per-candidate inputs of the features taken across phrasings (see ALTERNATIVE_FEATURES)."""

    alt_sem_max: Sequence[float]
    all_sem_mean: Sequence[float]
    alt_seq_max: Sequence[float]
    keyword: Sequence[float | None]  # BM25 of the alternatives' words
    coverage: Sequence[float]
    fused_rank: Sequence[int | None]
    neighbour_sem: Sequence[float]
    seq_best: Sequence[float]


def candidate_features(ev: Evidence, alt: AlternativeEvidence | None = None) -> Table:
    """The feature table of one query's pool: CANDIDATE_FEATURES, plus ALTERNATIVE_FEATURES with `alt`."""
    n = len(ev.sem)
    sem = np.asarray(ev.sem, dtype=np.float64)
    top = float(sem.max()) if n else 0.0
    cols: dict[str, Sequence[float] | Column] = {
        "kw_z": keyword_z(ev.keyword),
        "kw_rr": _reciprocal(ev.keyword_rank),
        "sem": sem,
        "sem_gap": sem - top,
        "seq_cos": ev.seq_cos,
        "dense_rr": _reciprocal(ev.dense_rank),
        "coverage": ev.coverage,
        "all_terms": [1.0 if c >= 0.999 else 0.0 for c in ev.coverage],
        "phrase": [1.0 if p else 0.0 for p in ev.phrase],
        "log_len": np.log1p(np.asarray(ev.length, dtype=np.float64)),
        "neighbour_sem": ev.neighbour_sem,
        "seq_best": ev.seq_best,
    }
    if alt is not None:
        cols.update(
            {
                "alt_sem_max": alt.alt_sem_max,
                "all_sem_mean": alt.all_sem_mean,
                "alt_seq_max": alt.alt_seq_max,
                "alt_kw_z": keyword_z(alt.keyword),
                "alt_coverage": alt.coverage,
                "fused_rr": _reciprocal(alt.fused_rank),
                "alt_neighbour_sem": alt.neighbour_sem,
                "alt_seq_best": alt.seq_best,
            }
        )
    return Table.of(cols, n)


@dataclass(frozen=True)
class QueryEvidence:
    """The inputs of the question's query features (see QUERY_FEATURES)."""

    sem: Sequence[float]
    best: Sequence[float]
    dense_top: Sequence[float]
    seq_cos: Sequence[float]
    top5_coverage: Sequence[float]
    all_terms_hit: bool
    agree: bool
    idf_found: float
    unseen: float
    ranked: NDArray[np.float64]
    sequence_coverage: float


@dataclass(frozen=True)
class AlternativeQueryEvidence:
    """The inputs of ALTERNATIVE_QUERY_FEATURES."""

    all_sem_mean: Sequence[float]
    alt_sem_max: Sequence[float]
    best: Sequence[float]
    top5_coverage: Sequence[float]
    unseen: float
    agree: bool


def query_features(ev: QueryEvidence, alt: AlternativeQueryEvidence | None = None) -> Table:
    """The abstention model's inputs for one query: a one-row table (see QUERY_FEATURES)."""
    top = max(ev.sem, default=0.0)
    mean = sum(ev.dense_top) / len(ev.dense_top) if ev.dense_top else 0.0
    ranked = ev.ranked
    cols: dict[str, list[float]] = {
        "top_sem": [top],
        "top_best": [max(ev.best, default=0.0)],
        "top_margin": [top - mean],
        "top_seq": [max(ev.seq_cos, default=0.0)],
        "best_coverage": [max(ev.top5_coverage, default=0.0)],
        "all_terms_hit": [1.0 if ev.all_terms_hit else 0.0],
        "agree": [1.0 if ev.agree else 0.0],
        "idf_mass": [math.log1p(ev.idf_found) / 10],
        "unseen": [ev.unseen],
        "top_rank": [float(ranked.max()) if ranked.size else 0.0],
        "rank_margin": [float(ranked.max() - np.sort(ranked)[-min(5, ranked.size)]) if ranked.size else 0.0],
        "seq_coverage": [ev.sequence_coverage],
    }
    if alt is not None:
        cols.update(
            {
                "alt_top_mean": [max(alt.all_sem_mean, default=0.0)],
                "alt_top_max": [max(alt.alt_sem_max, default=0.0)],
                "alt_top_best": [max(alt.best, default=0.0)],
                "alt_best_coverage": [max(alt.top5_coverage, default=0.0)],
                "alt_unseen": [alt.unseen],
                "alt_agree": [1.0 if alt.agree else 0.0],
            }
        )
    return Table.of(cols, 1)


# The abstention model was calibrated on a store of ~560 thoughts. In a smaller store most words
# are unseen, IDF is flat and the pool is a handful of thoughts, so the vocabulary and
# pool-relative features say little: they are pulled towards the calibration mean in proportion
# to how much smaller the store is. Cosine levels and term coverage keep their full weight.
CALIBRATION_STORE = 500
VOCABULARY_FEATURES = (
    *("idf_mass", "unseen", "top_margin", "top_rank", "rank_margin", "agree"),
    *("alt_unseen", "alt_agree"),
)


def shrink_vocabulary(features: Table, model: Linear, thoughts: int) -> Table:
    """`features` with the vocabulary columns shrunk towards `model`'s mean in small stores."""
    trust = min(1.0, thoughts / CALIBRATION_STORE)
    if trust >= 1.0:
        return features
    out = features
    for name in VOCABULARY_FEATURES:
        if name in model.features and name in features.names:
            mean = float(model.mean[model.features.index(name)])
            out = out.with_column(name, trust * out.column(name) + (1 - trust) * mean)
    return out


def idf(document_frequency: int, total: int) -> float:
    """BM25's inverse document frequency (never negative)."""
    return math.log(1.0 + (total - document_frequency + 0.5) / (document_frequency + 0.5))
