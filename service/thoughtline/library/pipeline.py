"""The search pipeline behind `retrieval.hybrid_search`: candidate pool, features, ranking, abstention.

Imported on the first search only (it needs numpy and loads the shipped model weights).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import apsw
import numpy as np

from thoughtline.library import ranker, search
from thoughtline.library.dense import DenseIndex, Scores
from thoughtline.library.retrieval import Hit, Outcome, Tuning
from thoughtline.storage import search as search_store
from thoughtline.storage.search import ColumnWeights, SearchFilters, ThoughtRecord

if TYPE_CHECKING:
    from thoughtline.library.embed import Embedder

MODELS = ranker.load_models()


@dataclass(frozen=True)
class Pool:
    """Everything one query found, before ranking (the training script reads this too)."""

    ids: list[int]
    records: dict[int, ThoughtRecord]
    features: np.ndarray
    query_features: np.ndarray
    keyword: dict[int, float]
    dense: dict[int, float]
    similarity: dict[int, float]
    scores: Scores | None
    terms: list[str]


def run(
    conn: apsw.Connection,
    embedder: Embedder | None,
    query: str,
    *,
    limit: int,
    filters: SearchFilters | None,
    tuning: Tuning | None,
    index: DenseIndex | None,
    mode: str,
    by: str,
    models: ranker.Models | None,
) -> Outcome:
    """`retrieval.hybrid_search`'s work (see there)."""
    tuning = tuning or Tuning()
    models = models or MODELS
    pool = gather(conn, embedder, query, filters or SearchFilters(), tuning, index, mode, models)
    if mode == "keyword" or (mode == "hybrid" and pool.scores is None):
        order = {tid: pool.keyword[tid] for tid in pool.keyword}
    elif mode == "vector":
        order = dict(pool.dense)
    else:
        order = dict(zip(pool.ids, _rank_scores(pool.features, models).tolist(), strict=True))
    doubt = None
    if mode == "hybrid" and pool.scores is not None and models.abstain is not None:
        doubt = 1.0 / (1.0 + math.exp(-float(models.abstain.score(pool.query_features[None, :])[0])))
    elif mode == "hybrid" and pool.scores is not None:
        # Without shipped weights: a weak best cosine and no thought holding every query word.
        doubt = float(pool.query_features[1] < 0.25 and pool.query_features[5] < 1)
    elif mode == "hybrid":
        doubt = 0.0 if pool.keyword else 1.0
    best_similarity = max(pool.similarity.values(), default=None)
    abstained = doubt is not None and doubt > models.abstain_above
    if abstained and tuning.abstain:
        return Outcome([], True, best_similarity, doubt)
    records = pool.records
    ranked = sorted(
        (tid for tid in order if tid in records),
        key=lambda tid: (
            -(order[tid] - (tuning.abandoned_penalty if records[tid].status == "abandoned" else 0.0)),
            -records[tid].created_at,
            tid,
        ),
    )
    if by == "sequence":
        firsts: dict[int, int] = {}
        for tid in ranked:
            firsts.setdefault(records[tid].sequence_key, tid)
        ranked = list(firsts.values())
    hits = [
        Hit(
            record=records[tid],
            score=round(order[tid], 6),
            similarity=None if tid not in pool.similarity else round(pool.similarity[tid], 6),
            keyword=tid in pool.keyword,
            snippet=_snippet(pool, tid, tuning),
        )
        for tid in ranked[:limit]
    ]
    return Outcome(hits, abstained, best_similarity, doubt)


def _rank_scores(f: np.ndarray, models: ranker.Models) -> np.ndarray:
    if models.ranker is not None:
        return models.ranker.score(f)
    # Without shipped weights: z-scored keyword and vector evidence, 0.6 / 0.4 (issue 5's fusion).
    return 0.6 * f[:, 0] + 0.4 * ranker.zscores(f[:, 2] + 0.5 * f[:, 4])


def gather(
    conn: apsw.Connection,
    embedder: Embedder | None,
    query: str,
    filters: SearchFilters,
    tuning: Tuning,
    index: DenseIndex | None,
    mode: str,
    models: ranker.Models,
) -> Pool:
    """Collect the candidate pool of one query with every feature the models read."""
    terms = search.content_terms(query)
    keyword: dict[int, float] = {}
    if mode in ("hybrid", "keyword"):
        keyword = _keyword_side(conn, query, filters, tuning)

    scores: Scores | None = None
    dense: dict[int, float] = {}
    rows: dict[int, int] = {}
    if mode in ("hybrid", "vector") and embedder is not None:
        index = index if index is not None else DenseIndex()
        index.refresh(conn)
        scores = index.score(embedder.embed([embedder.query_prefix + query])[0])
        dense = _dense_side(conn, scores, filters, tuning.pool, models.seq_weight)
    if mode != "hybrid":
        ids = list(keyword) if mode == "keyword" else list(dense)
        records = search_store.load_thoughts(conn, ids)
        sims = _similarities(scores, ids) if scores is not None else {}
        empty = np.zeros((0, len(ranker.CANDIDATE_FEATURES)))
        return Pool(ids, records, empty, np.zeros(0), keyword, dense, sims, scores, terms)

    ids = sorted(set(keyword) | set(dense))
    records = search_store.load_thoughts(conn, ids)
    ids = [t for t in ids if t in records]
    # Neighbours are evidence, not candidates: their cosines come from the index, no rows needed.
    pairs = search_store.neighbour_pairs(conn, ids, filters)
    rows = scores.lookup([*ids, *(n for _, n in pairs)]) if scores is not None else {}

    def sem_of(tid: int) -> float:
        row = rows.get(tid)
        return 0.0 if row is None or scores is None else float(scores.whole[row] + scores.best[row]) / 2

    sem = {tid: sem_of(tid) for tid in ids}
    near: dict[int, float] = {}
    for tid, other in pairs:
        near[tid] = max(near.get(tid, 0.0), sem_of(other))
    seq_cos = {tid: (0.0 if tid not in rows or scores is None else float(scores.sequence[rows[tid]])) for tid in ids}
    coverage, phrased, weights, holders = _body_matches(conn, query, terms, ids)
    by_seq: dict[int, list[float]] = {}
    for t in ids:
        by_seq.setdefault(records[t].sequence_key, []).append(sem[t])
    kw_rank, dn_rank = _ranks(keyword), _ranks(dense)
    evidence = ranker.Evidence(
        keyword=[keyword.get(t) for t in ids],
        keyword_rank=[kw_rank.get(t) for t in ids],
        sem=[sem[t] for t in ids],
        seq_cos=[seq_cos[t] for t in ids],
        dense_rank=[dn_rank.get(t) for t in ids],
        coverage=[coverage[t] for t in ids],
        phrase=[t in phrased for t in ids],
        length=[len(records[t].body) for t in ids],
        neighbour_sem=[near.get(t, 0.0) for t in ids],
        seq_best=[_second_best(by_seq[records[t].sequence_key], sem[t]) for t in ids],
    )
    features = ranker.candidate_features(evidence)
    ranked = _rank_scores(features, models)
    top_rows = [int(i) for i in np.argsort(-ranked)[:3]]
    kw_top = set(sorted(keyword, key=keyword.__getitem__, reverse=True)[:5])
    dn_top = set(sorted(dense, key=dense.__getitem__, reverse=True)[:5])
    top5 = sorted(ids, key=lambda t: -(sem[t] + coverage[t]))[:5]
    sims = _similarities(scores, ids) if scores is not None else {}
    qf = ranker.query_features(
        sem=list(sem.values()),
        best=list(sims.values()),
        dense_top=[sem[t] for t in dense if t in sem],
        seq_cos=list(seq_cos.values()),
        top5_coverage=[coverage[t] for t in top5],
        all_terms_hit=any(c >= 0.999 for c in coverage.values()),
        agree=bool(kw_top & dn_top),
        idf_found=sum(w for w in weights.values() if w < _UNSEEN),
        unseen=sum(1 for w in weights.values() if w >= _UNSEEN) / max(1, len(weights)),
        ranked=ranked,
        sequence_coverage=_sequence_coverage(conn, [records[ids[i]].sequence_key for i in top_rows], holders, weights),
    )
    if models.abstain is not None:
        qf = ranker.shrink_vocabulary(qf, models.abstain, search_store.thought_count(conn))
    return Pool(ids, records, features, qf, keyword, dense, sims, scores, terms)


# The IDF weight of a query term no stored thought holds (BM25's IDF of a term in 0 of 1 rows).
_UNSEEN = 50.0


def _keyword_side(conn: apsw.Connection, query: str, filters: SearchFilters, tuning: Tuning) -> dict[int, float]:
    match = search.natural_query(query)
    if match is None:
        return {}
    weights = ColumnWeights(context=tuning.context_weight, title=tuning.title_weight)
    keyword = dict(search_store.keyword_candidates(conn, match, filters, tuning.pool, weights))
    phrases = search.phrase_query(query) if tuning.phrase_weight > 0 and keyword else None
    if phrases is not None:
        found = search_store.keyword_candidates(conn, phrases, filters, tuning.pool, weights)
        keyword = search.add_scores(keyword, dict(found), tuning.phrase_weight)
    return keyword


def _dense_side(
    conn: apsw.Connection, scores: Scores, filters: SearchFilters, k: int, seq_weight: float
) -> dict[int, float]:
    combined = (scores.whole + scores.best) / 2 + seq_weight * scores.sequence
    if filters.active:
        allowed = np.asarray(search_store.filtered_thought_ids(conn, filters), dtype=np.int64)
        combined = np.where(np.isin(scores.thought_ids, allowed), combined, -np.inf)
    if combined.size == 0:
        return {}
    k = min(k, combined.size)
    top = np.argpartition(-combined, k - 1)[:k]
    return {int(scores.thought_ids[i]): float(combined[i]) for i in top if np.isfinite(combined[i])}


def _similarities(scores: Scores, ids: list[int]) -> dict[int, float]:
    rows = scores.lookup(ids)
    return {tid: float(scores.best[row]) for tid, row in rows.items()}


def _body_matches(
    conn: apsw.Connection, query: str, terms: list[str], ids: list[int]
) -> tuple[dict[int, float], set[int], dict[str, float], dict[str, set[int]]]:
    """IDF-weighted share of the query's terms in each thought's own text, which hold a phrase of
    the query, and each term's IDF weight."""
    phrases = search.phrase_query(query)
    matches = [search.quote_term(t) for t in terms] + ([phrases] if phrases else [])
    found = search_store.bodies_matching(conn, matches) if matches else []
    total_docs = max(1, search_store.thought_count(conn))
    weights = {
        t: (_UNSEEN if not holders else ranker.idf(len(holders), total_docs))
        for t, holders in zip(terms, found, strict=False)
    }
    total = sum(weights.values()) or 1.0
    coverage = dict.fromkeys(ids, 0.0)
    by_term = dict(zip(terms, found, strict=False))
    for term, held in by_term.items():
        for tid in held & coverage.keys():
            coverage[tid] += weights[term] / total
    return coverage, (found[-1] & coverage.keys() if phrases else set()), weights, by_term


def _sequence_coverage(
    conn: apsw.Connection, sequences: list[int], holders: dict[str, set[int]], weights: dict[str, float]
) -> float:
    """Best IDF-weighted share of the query's terms found anywhere in one of the top-ranked sequences.

    A near miss shares some words with a stored topic but not the one that names its subject
    ("red pandas at the zoo" against a stored zoo trip), so the best sequence leaves it uncovered.
    """
    total = sum(weights.values())
    if not sequences or total <= 0:
        return 0.0
    members = search_store.sequence_members(conn, sorted(set(sequences)))
    best = 0.0
    for ids in members.values():
        share = sum(weights[t] for t, held in holders.items() if held & ids) / total
        best = max(best, share)
    return best


def _ranks(scores: dict[int, float]) -> dict[int, int]:
    """Each id's rank by score, best 0; equal scores share a rank (identical thoughts score alike)."""
    ordered = sorted(scores.values(), reverse=True)
    first: dict[float, int] = {}
    for rank, value in enumerate(ordered):
        first.setdefault(value, rank)
    return {tid: first[value] for tid, value in scores.items()}


def _second_best(values: list[float], own: float) -> float:
    rest = sorted(values, reverse=True)
    if own in rest:
        rest.remove(own)
    return rest[0] if rest else 0.0


def _snippet(pool: Pool, tid: int, tuning: Tuning) -> str:
    """The passage that matched: around the query's words, or the best-matching passage by meaning."""
    body = pool.records[tid].body
    scores = pool.scores
    if scores is not None and tid in pool.similarity:
        row = scores.lookup([tid]).get(tid)
        slot = 0 if row is None else scores.best_slot(row)
        passage = search.passage_of(body, slot, tuning.passage_min_chars)
        # A keyword match whose words sit outside the closest passage shows its words instead.
        inside = not pool.terms or search.term_coverage(passage, pool.terms) > 0
        if slot > 0 and (inside or tid not in pool.keyword):
            return search.make_snippet(passage, pool.terms)
    return search.make_snippet(body, pool.terms)
