"""Hybrid retrieval's public face: `hybrid_search`, over one read connection.

The work happens in `pipeline.py`, imported on the first search (it needs numpy and the shipped
weights), so importing this module at server start stays light. Runs on one read connection (a
snapshot); vectors still missing are the caller's to embed first (see `vectors.py`), so a search
never writes.

The pipeline: keyword candidates (BM25 over the thought, its neighbours and its title, plus a
phrase bonus) and vector candidates (whole-thought, best-sentence and sequence cosines, for every
phrasing the caller sent) form a pool; the learned ranker orders the pool; the abstention model
decides whether anything in it is relevant at all (issues 8 and 17, docs/retrieval.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import apsw

from thoughtline.library.query import Query, build_query
from thoughtline.library.search_types import Hit, Outcome, Scope, Tuning
from thoughtline.storage.search import SearchFilters

if TYPE_CHECKING:
    from thoughtline.library.dense import DenseIndex
    from thoughtline.library.embed import Embedder
    from thoughtline.library.ranker import ModelSet

__all__ = ["Hit", "Outcome", "Scope", "Tuning", "hybrid_search", "search_query"]


def search_query(conn: apsw.Connection, query: Query, scope: Scope, *, limit: int = 10, by: str = "thought") -> Outcome:
    """Rank the store's thoughts for a built `Query` (its vectors None: keyword only).

    `by="sequence"` keeps each sequence's best thought only.
    """
    # numpy and the models load on the first search, never at start (cold starts stay light).
    from thoughtline.library import pipeline

    return pipeline.run(conn, query, scope, limit=limit, by=by)


def hybrid_search(
    conn: apsw.Connection,
    embedder: Embedder | None,
    question: str,
    *,
    alternatives: Sequence[str] = (),
    limit: int = 10,
    filters: SearchFilters | None = None,
    tuning: Tuning | None = None,
    index: DenseIndex | None = None,
    by: str = "thought",
    models: ModelSet | None = None,
) -> Outcome:
    """Build the query (one embedding call for every phrasing) and rank the store for it.

    Without an embedder the search is keyword-only. Pass the store's long-lived `index`; without
    one the vectors are loaded for this call alone.
    """
    # The index's helper thread (the library's) embeds while the keyword side runs.
    query = build_query(question, alternatives, embedder, index.helper if index is not None else None)
    scope = Scope(filters or SearchFilters(), tuning or Tuning(), index, models)
    return search_query(conn, query, scope, limit=limit, by=by)
