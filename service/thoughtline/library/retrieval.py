"""Hybrid retrieval's public face: `hybrid_search`, its knobs and its results.

The work happens in `pipeline.py`, imported on the first search (it needs numpy and the shipped
weights), so importing this module at server start stays light. Runs on one read connection (a
snapshot); vectors still missing are the caller's to embed first (see `vectors.py`), so a search
never writes.

The pipeline: keyword candidates (BM25 over the thought, its neighbours and its title, plus a
phrase bonus) and vector candidates (whole-thought, best-sentence and sequence cosines) form a
pool; the learned ranker orders the pool; the abstention model decides whether anything in it is
relevant at all (issue 8, docs/retrieval.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import apsw

from thoughtline.library.search import PASSAGE_MIN_CHARS
from thoughtline.storage.search import SearchFilters, ThoughtRecord

if TYPE_CHECKING:
    from thoughtline.library.dense import DenseIndex
    from thoughtline.library.embed import Embedder
    from thoughtline.library.ranker import Models


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


def hybrid_search(
    conn: apsw.Connection,
    embedder: Embedder | None,
    query: str,
    *,
    limit: int = 10,
    filters: SearchFilters | None = None,
    tuning: Tuning | None = None,
    index: DenseIndex | None = None,
    mode: str = "hybrid",
    by: str = "thought",
    models: Models | None = None,
) -> Outcome:
    """Rank the store's thoughts for `query`.

    `mode` is "hybrid", "keyword" or "vector" (the latter two for the evaluation). Without an
    embedder the search is keyword-only. `by="sequence"` keeps each sequence's best thought only.
    Pass the store's long-lived `index`; without one the vectors are loaded for this call alone.
    """
    # numpy and the models load on the first search, never at start (cold starts stay light).
    from thoughtline.library import pipeline

    return pipeline.run(
        conn, embedder, query, limit=limit, filters=filters, tuning=tuning, index=index, mode=mode, by=by, models=models
    )
