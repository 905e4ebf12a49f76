"""The values a search passes between its steps: knobs, the place it runs in, and its results.

Shared by `retrieval.py` (the public face) and `pipeline.py` (the work), so neither imports the
other for them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from thoughtline.domain.vector_keys import PASSAGE_MIN_CHARS
from thoughtline.storage.search import SearchFilters, ThoughtRecord

if TYPE_CHECKING:
    from thoughtline.library.dense import DenseIndex
    from thoughtline.library.ranker import ModelSet


@dataclass(frozen=True)
class Tuning:
    """Retrieval knobs; the defaults are what the dev split of the reasoning set supports."""

    pool: int = 50
    # BM25 weights of the neighbours' text and the sequence title beside the thought's own (1).
    context_weight: float = 0.1
    title_weight: float = 0.5
    # Share of a phrase match's BM25 score added to its keyword score (issue 5, LoCoMo).
    phrase_weight: float = 0.5
    # Abandoned sequences rank just below an otherwise equal match elsewhere (issue 5).
    abandoned_penalty: float = 1e-3
    # Whether an answer may be withheld when nothing looks relevant (the evaluation ranks anyway).
    abstain: bool = True
    # Passage length threshold the vectors were built with (for snippets), see `vectors.py`.
    passage_min_chars: int = PASSAGE_MIN_CHARS


@dataclass(frozen=True)
class Scope:
    """Where and how one search runs: its filters, knobs, the store's vector index and the models.

    Without an `index` the vectors are loaded for this call alone; without `models` the shipped
    ones are used.
    """

    filters: SearchFilters = field(default_factory=SearchFilters)
    tuning: Tuning = field(default_factory=Tuning)
    index: DenseIndex | None = None
    models: ModelSet | None = None


@dataclass(frozen=True)
class Hit:
    """One ranked result: the thought, its score, the raw cosine similarity if any, and a snippet."""

    record: ThoughtRecord
    score: float
    similarity: float | None
    keyword: bool
    snippet: str


@dataclass(frozen=True)
class Outcome:
    """A search's results, or an abstention when nothing stored is relevant enough."""

    hits: list[Hit]
    abstained: bool
    best_similarity: float | None
    # The abstention model's probability that nothing relevant is stored (None: not judged).
    doubt: float | None = None
