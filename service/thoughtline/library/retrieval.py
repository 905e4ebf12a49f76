"""Hybrid retrieval: one search over a store, from query text to ranked, explained results.

Joins the pure rules of `search.py` to the queries of `storage/search.py` and an `Embedder`.
Runs on one read connection (a snapshot); vectors still missing are the caller's to embed first
(see `vectors.py`), so a search never writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import apsw

from thoughtline.library import search
from thoughtline.storage import search as search_store
from thoughtline.storage.search import ColumnWeights, SearchFilters, ThoughtRecord

if TYPE_CHECKING:
    from thoughtline.library.embed import Embedder
    from thoughtline.library.vectors import VectorIndex


@dataclass(frozen=True)
class Tuning:
    """Retrieval knobs; the defaults are what the LoCoMo and golden-set numbers support."""

    pool: int = 50
    fusion: str = "zscore"  # or "minmax", "rrf" (kept for the evaluation's comparison)
    dense_weight: float = 0.4
    neighbor_weight: float = 0.3
    group_weight: float = 0.5
    # BM25 weight of the neighbours' text and of the sequence title beside the thought's own
    # (weight 1). LoCoMo hybrid recall@5 (all ten): context 0.1 / title 0.5 gives 0.658 against
    # 0.623 without them; context 0.3 gives 0.663 but drops a golden paraphrase out of the top 3
    # (neighbours that borrow its words crowd it), so the golden set caps it at 0.1.
    context_weight: float = 0.1
    title_weight: float = 0.5
    # Raw cosine below which a vector-only match is treated as noise. Calibrated on the golden
    # set: never-stored topics peaked at 0.23, the weakest answerable paraphrase was 0.28.
    abstain_below: float = 0.25
    # Abandoned sequences rank just below an otherwise equal match elsewhere (issue 5).
    abandoned_penalty: float = 1e-3
    # Share of a phrase match's BM25 score (two adjacent query words, adjacent in the thought)
    # added to its keyword score. LoCoMo all ten, hybrid: 0.5 lifts r@5 0.6583 -> 0.6629, hit@5
    # 0.7302 -> 0.7361, MRR 0.5465 -> 0.5516 (chosen on conversations 26 + 30 over 0.25-2; NEAR/10
    # instead of a phrase, or the phrases as plain OR terms of the main query, did worse).
    phrase_weight: float = 0.5


@dataclass(frozen=True)
class Hit:
    """One ranked result: the thought, its fused score and the raw cosine similarity if any."""

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


def hybrid_search(
    conn: apsw.Connection,
    embedder: Embedder | None,
    query: str,
    *,
    limit: int = 10,
    filters: SearchFilters | None = None,
    tuning: Tuning | None = None,
    index: VectorIndex | None = None,
    mode: str = "hybrid",
) -> Outcome:
    """Rank the store's thoughts for `query`.

    `mode` is "hybrid", "keyword" or "vector" (the latter two for the evaluation). Without an
    embedder the search is keyword-only. With `index` the KNN runs on the in-memory matrix.
    """
    filters = filters or SearchFilters()
    tuning = tuning or Tuning()
    terms = search.content_terms(query)

    keyword: dict[int, float] = {}
    if mode in ("hybrid", "keyword"):
        match = search.natural_query(query)
        if match is not None:
            weights = ColumnWeights(context=tuning.context_weight, title=tuning.title_weight)
            keyword = dict(search_store.keyword_candidates(conn, match, filters, tuning.pool, weights))
            phrases = search.phrase_query(query) if tuning.phrase_weight > 0 and keyword else None
            if phrases is not None:
                found = search_store.keyword_candidates(conn, phrases, filters, tuning.pool, weights)
                keyword = search.add_scores(keyword, dict(found), tuning.phrase_weight)

    dense: dict[int, float] = {}
    if mode in ("hybrid", "vector") and embedder is not None:
        vector = embedder.embed([query])[0]
        allowed = search_store.filtered_thought_ids(conn, filters) if filters.active else None
        if index is not None:
            index.refresh(conn)
            pairs = index.search(vector, tuning.pool, allowed)
        else:
            pairs = search_store.vector_candidates(conn, vector.tobytes(), tuning.pool, allowed)
        dense = dict(pairs)

    best_similarity = max(dense.values()) if dense else None
    if mode == "hybrid" and keyword_or_nothing(best_similarity, tuning):
        # An OR query matches on any shared word, so only an all-terms match counts as keyword
        # evidence strong enough to answer without semantic support.
        strong = len(keyword) if embedder is None else _all_terms_hits(conn, terms, filters)
        if search.should_abstain(best_similarity, strong, tuning.abstain_below):
            return Outcome([], True, best_similarity)

    neighbours: list[int] = []
    if mode == "keyword":
        fused = search.minmax(keyword)
    elif mode == "vector":
        fused = dict(dense)
    else:
        # Vector-only candidates below the noise floor would only push real matches down.
        dense_kept = {k: v for k, v in dense.items() if v >= tuning.abstain_below or k in keyword}
        if tuning.neighbor_weight > 0 or tuning.group_weight > 0:
            # Neighbours of candidates join the pool as found by neither side, so a strong step
            # can lift the one next to it (an answer often sits one step after its question).
            neighbours = search_store.neighbour_ids(conn, set(keyword) | set(dense_kept), filters)
        fused = _fuse(keyword, dense_kept, neighbours, tuning)

    records = search_store.load_thoughts(conn, fused)
    if mode == "hybrid" and (tuning.neighbor_weight > 0 or tuning.group_weight > 0):
        place = {tid: (rec.sequence_key, rec.position) for tid, rec in records.items()}
        fused = search.context_boost(fused, place, tuning.neighbor_weight, tuning.group_weight)

    ranked = sorted(
        (tid for tid in fused if tid in records),
        key=lambda tid: (
            -(fused[tid] - (tuning.abandoned_penalty if records[tid].status == "abandoned" else 0.0)),
            -records[tid].created_at,
            tid,
        ),
    )[:limit]
    hits = [
        Hit(
            record=records[tid],
            score=round(fused[tid], 6),
            similarity=None if tid not in dense else round(dense[tid], 6),
            keyword=tid in keyword,
            snippet=search.make_snippet(records[tid].body, terms),
        )
        for tid in ranked
    ]
    return Outcome(hits, False, best_similarity)


def _fuse(keyword: dict[int, float], dense: dict[int, float], extra: list[int], tuning: Tuning) -> dict[int, float]:
    if tuning.fusion == "minmax":
        return search.fuse_weighted(keyword, dense, tuning.dense_weight, extra)
    if tuning.fusion == "rrf":
        ranked = [sorted(side, key=side.__getitem__, reverse=True) for side in (keyword, dense)]
        fused = search.fuse_rrf(ranked)
        return {**dict.fromkeys(extra, 0.0), **fused}
    return search.fuse_zscore(keyword, dense, tuning.dense_weight, extra)


def keyword_or_nothing(best_similarity: float | None, tuning: Tuning) -> bool:
    """True when the semantic side alone is too weak to justify an answer."""
    return best_similarity is None or best_similarity < tuning.abstain_below


def _all_terms_hits(conn: apsw.Connection, terms: list[str], filters: SearchFilters) -> int:
    match = search.fts_escape(" ".join(terms))
    if match is None:
        return 0
    # Only the thought's own text counts: terms spread over its neighbours are no exact match.
    return len(search_store.keyword_candidates(conn, search.in_column("body", match), filters, 1))
