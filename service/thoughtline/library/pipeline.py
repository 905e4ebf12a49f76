"""The search pipeline behind `retrieval.hybrid_search`, as small steps over one `Query`.

`gather` collects the candidate pool and every feature the models read, `rank` orders it,
`judge` says how likely it is that nothing relevant is stored, `top_hits` turns an order into
results. `run` chains them; the benchmarks call the steps themselves (the keyword and vector
sides' own orders come from the same pool). Imported on the first search only (it needs numpy
and loads the shipped model weights).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import apsw
import numpy as np

from thoughtline.domain.vector_keys import passage_of
from thoughtline.library import helping, ranker, search
from thoughtline.library.dense import DenseIndex
from thoughtline.library.phrasings import Phrasings, score_phrasings
from thoughtline.library.query import Query
from thoughtline.library.search_types import Hit, Outcome, Scope, Tuning
from thoughtline.storage import search as search_store
from thoughtline.storage.search import ColumnWeights, SearchFilters, ThoughtRecord

MODELS = ranker.load_models()


@dataclass(frozen=True)
class Pool:
    """Everything one query found, before ranking (the training script reads this too)."""

    query: Query
    models: ranker.Models
    ids: list[int]
    records: dict[int, ThoughtRecord]
    features: ranker.Table
    query_features: ranker.Table
    keyword: dict[int, float]  # the question's BM25
    alternatives_keyword: dict[int, float]  # the alternatives' BM25
    dense: dict[int, float]  # the vector side's score (fused over phrasings with alternatives)
    similarity: dict[int, float]  # best single-vector cosine of any phrasing
    phrasings: Phrasings | None


def run(conn: apsw.Connection, query: Query, scope: Scope, *, limit: int, by: str) -> Outcome:
    """`retrieval.hybrid_search`'s work (see there)."""
    pool = gather(conn, query, scope)
    doubt = judge(pool)
    best_similarity = max(pool.similarity.values(), default=None)
    abstained = doubt > pool.models.abstain_above
    if abstained and scope.tuning.abstain:
        return Outcome([], True, best_similarity, doubt)
    return Outcome(top_hits(pool, rank(pool), scope.tuning, limit=limit, by=by), abstained, best_similarity, doubt)


def rank(pool: Pool) -> dict[int, float]:
    """The fused score of every pool thought (keyword only when the search has no vectors)."""
    if pool.phrasings is None:
        return keyword_order(pool)
    return dict(zip(pool.ids, _rank_scores(pool.features, pool.models).tolist(), strict=True))


def keyword_order(pool: Pool) -> dict[int, float]:
    """The keyword side's own order: the question's BM25, with the alternatives' words as a lesser part."""
    if not pool.alternatives_keyword:
        return dict(pool.keyword)
    # Both sides are z-scored over the pool; the question's words stay the larger part.
    both = pool.features.column("kw_z") + 0.5 * pool.features.column("alt_kw_z")
    found = pool.keyword.keys() | pool.alternatives_keyword.keys()
    return {tid: float(v) for tid, v in zip(pool.ids, both.tolist(), strict=True) if tid in found}


def judge(pool: Pool) -> float:
    """The probability that nothing stored is relevant (the abstention model, or hand rules without it)."""
    if pool.phrasings is None:
        return 0.0 if pool.keyword or pool.alternatives_keyword else 1.0
    model = pool.models.abstain
    if model is not None:
        return 1.0 / (1.0 + math.exp(-float(model.score(pool.query_features)[0])))
    # Without shipped weights: a weak best cosine and no thought holding every query word.
    qf = pool.query_features
    return float(qf.column("top_best")[0] < 0.25 and qf.column("all_terms_hit")[0] < 1)


def top_hits(pool: Pool, order: Mapping[int, float], tuning: Tuning, *, limit: int, by: str) -> list[Hit]:
    """The first `limit` results of `order` (`by="sequence"`: each sequence's best thought once)."""
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
    return [
        Hit(
            record=records[tid],
            score=round(order[tid], 6),
            similarity=None if tid not in pool.similarity else round(pool.similarity[tid], 6),
            keyword=tid in pool.keyword,
            snippet=_snippet(pool, tid, tuning),
        )
        for tid in ranked[:limit]
    ]


def _rank_scores(f: ranker.Table, models: ranker.Models) -> np.ndarray:
    if models.ranker is not None:
        return models.ranker.score(f)
    # Without shipped weights: z-scored keyword and vector evidence, 0.6 / 0.4 (issue 5's fusion).
    return 0.6 * f.column("kw_z") + 0.4 * ranker.zscores(f.column("sem") + 0.5 * f.column("seq_cos"))


def gather(conn: apsw.Connection, query: Query, scope: Scope) -> Pool:
    """Collect the candidate pool of one query with every feature the models read."""
    models = (scope.models or MODELS).pick(query.has_alternatives)
    filters, tuning = scope.filters, scope.tuning
    keyword = _keyword_side(conn, query.terms, [query.question], filters, tuning)
    # Every word of the alternatives, the question's too: scoring only the words they add was
    # cheaper but ranked no better on train and dev (docs/retrieval.md, round 6).
    alt_keyword = _keyword_side(conn, query.alternative_words, query.alternatives, filters, tuning)
    # What needs no vector is read while the phrasings are still being embedded on the helper.
    # One count serves the IDF weights and the abstention model (~0.5 ms at 100k thoughts).
    total_docs = search_store.thought_count(conn) if query.embedding is not None else 0
    holders, weights = _term_holders(conn, query, total_docs) if query.embedding is not None else ({}, {})
    phrased_all = _phrased(conn, query.question) if query.embedding is not None else set()
    ph: Phrasings | None = None
    dense: dict[int, float] = {}
    question_dense: dict[int, float] = {}
    if query.vectors is not None:
        index = scope.index if scope.index is not None else DenseIndex()
        index.refresh(conn)
        allowed = search_store.filtered_thought_ids(conn, filters) if filters.active else None
        ph = score_phrasings(index.score_many(query.vectors), models.seq_weight)
        helper = index.helper if len(ph.scores[0].thought_ids) >= helping.HELPED_THOUGHTS else None
        fused = helping.on_helper(helper, ph.top_fused, tuning.pool, allowed) if query.alternatives else None
        question_dense = ph.top(0, tuning.pool, allowed)
        dense = question_dense if fused is None else fused()

    ids = sorted(set(keyword) | set(alt_keyword) | set(dense) | set(question_dense))
    records = search_store.load_thoughts(conn, ids)
    ids = [t for t in ids if t in records]
    if ph is None:
        return _keyword_pool(query, models, ids, records, keyword, alt_keyword)
    # Neighbours are evidence, not candidates: their cosines come from the index, no rows needed.
    pairs = search_store.neighbour_pairs(conn, ids, filters)
    looked = [*ids, *(n for _, n in pairs)]
    ph = ph.restricted(looked)
    coverage = _coverage(query.terms, holders, weights, ids)
    phrased = phrased_all & set(ids)
    sem_all = ph.values(ph.sem[0], looked)
    sem = {t: sem_all[t] for t in ids}
    seq_cos = ph.values(ph.sequence[0], ids)
    kw_rank, dn_rank = _ranks(keyword), _ranks(question_dense)
    evidence = ranker.Evidence(
        keyword=[keyword.get(t) for t in ids],
        keyword_rank=[kw_rank.get(t) for t in ids],
        sem=[sem[t] for t in ids],
        seq_cos=[seq_cos[t] for t in ids],
        dense_rank=[dn_rank.get(t) for t in ids],
        coverage=[coverage[t] for t in ids],
        phrase=[t in phrased for t in ids],
        length=[len(records[t].body) for t in ids],
        neighbour_sem=_neighbour_best(ids, pairs, sem_all),
        seq_best=_sequence_second(ids, records, sem),
    )
    alt_evidence: ranker.AlternativeEvidence | None = None
    alt_coverage: dict[int, float] = {}
    if query.alternatives:
        mean_all = ph.values(ph.sem_mean, looked)
        mean = {t: mean_all[t] for t in ids}
        alt_coverage = _coverage(query.all_terms, holders, weights, ids)
        fused_rank = _ranks(dense)
        alt_sem = ph.values(ph.alt_sem_max, ids)
        alt_seq = ph.values(ph.alt_seq_max, ids)
        alt_evidence = ranker.AlternativeEvidence(
            alt_sem_max=[alt_sem[t] for t in ids],
            all_sem_mean=[mean[t] for t in ids],
            alt_seq_max=[alt_seq[t] for t in ids],
            keyword=[alt_keyword.get(t) for t in ids],
            coverage=[alt_coverage[t] for t in ids],
            fused_rank=[fused_rank.get(t) for t in ids],
            neighbour_sem=_neighbour_best(ids, pairs, mean_all),
            seq_best=_sequence_second(ids, records, mean),
        )
    features = ranker.candidate_features(evidence, alt_evidence)
    ranked = _rank_scores(features, models)
    top_rows = [int(i) for i in np.argsort(-ranked)[:3]]
    kw_top = set(sorted(keyword, key=keyword.__getitem__, reverse=True)[:5])
    dn_top = set(sorted(question_dense, key=question_dense.__getitem__, reverse=True)[:5])
    top5 = sorted(ids, key=lambda t: -(sem[t] + coverage[t]))[:5]
    question_terms = {t: weights[t] for t in query.terms}
    with_vectors = [t for t in ids if ph.has(t)]
    similarity = ph.values(ph.best_any, with_vectors)
    qev = ranker.QueryEvidence(
        sem=list(sem.values()),
        best=list(ph.values(ph.best[0], with_vectors).values()),
        dense_top=[sem[t] for t in question_dense if t in sem],
        seq_cos=list(seq_cos.values()),
        top5_coverage=[coverage[t] for t in top5],
        all_terms_hit=any(c >= 0.999 for c in coverage.values()),
        agree=bool(kw_top & dn_top),
        idf_found=sum(w for w in question_terms.values() if w < _UNSEEN),
        unseen=sum(1 for w in question_terms.values() if w >= _UNSEEN) / max(1, len(question_terms)),
        ranked=ranked,
        sequence_coverage=_sequence_coverage(
            conn, [records[ids[i]].sequence_key for i in top_rows], holders, question_terms
        ),
    )
    alt_qev: ranker.AlternativeQueryEvidence | None = None
    if alt_evidence is not None:
        alt_terms = {t: weights[t] for t in query.alternative_terms}
        mean_of = dict(zip(ids, alt_evidence.all_sem_mean, strict=True))
        alt_top5 = sorted(ids, key=lambda t: -(mean_of[t] + alt_coverage[t]))[:5]
        akw_top = set(sorted(alt_keyword, key=alt_keyword.__getitem__, reverse=True)[:5])
        fused_top = set(sorted(dense, key=dense.__getitem__, reverse=True)[:5])
        alt_qev = ranker.AlternativeQueryEvidence(
            all_sem_mean=alt_evidence.all_sem_mean,
            alt_sem_max=alt_evidence.alt_sem_max,
            best=list(similarity.values()),
            top5_coverage=[alt_coverage[t] for t in alt_top5],
            unseen=sum(1 for w in alt_terms.values() if w >= _UNSEEN) / max(1, len(alt_terms)),
            agree=bool(akw_top & fused_top),
        )
    qf = ranker.query_features(qev, alt_qev)
    if models.abstain is not None:
        qf = ranker.shrink_vocabulary(qf, models.abstain, total_docs)
    return Pool(query, models, ids, records, features, qf, keyword, alt_keyword, dense, similarity, ph)


def _keyword_pool(
    query: Query,
    models: ranker.Models,
    ids: list[int],
    records: dict[int, ThoughtRecord],
    keyword: dict[int, float],
    alt_keyword: dict[int, float],
) -> Pool:
    """The pool of a search without vectors: keyword evidence only."""
    cols: dict[str, Sequence[float] | np.ndarray] = {"kw_z": ranker.keyword_z([keyword.get(t) for t in ids])}
    if query.alternatives:
        cols["alt_kw_z"] = ranker.keyword_z([alt_keyword.get(t) for t in ids])
    table = ranker.Table.of(cols, len(ids))
    empty = ranker.Table.of({}, 1)
    return Pool(query, models, ids, records, table, empty, keyword, alt_keyword, {}, {}, None)


# The IDF weight of a query term no stored thought holds (BM25's IDF of a term in 0 of 1 rows).
_UNSEEN = 50.0


def _keyword_side(
    conn: apsw.Connection, terms: Sequence[str], texts: Sequence[str], filters: SearchFilters, tuning: Tuning
) -> dict[int, float]:
    """BM25 of an OR over `terms`, plus a bonus for each of the `texts`' adjacent-word phrases."""
    match = search.terms_query(terms)
    if match is None:
        return {}
    weights = ColumnWeights(context=tuning.context_weight, title=tuning.title_weight)
    keyword = dict(search_store.keyword_candidates(conn, match, filters, tuning.pool, weights))
    parts = [p for p in (search.phrase_query(t) for t in texts) if p] if tuning.phrase_weight > 0 and keyword else []
    if parts:
        found = search_store.keyword_candidates(conn, " OR ".join(parts), filters, tuning.pool, weights)
        keyword = search.add_scores(keyword, dict(found), tuning.phrase_weight)
    return keyword


def _term_holders(conn: apsw.Connection, query: Query, total_docs: int) -> tuple[dict[str, set[int]], dict[str, float]]:
    """Every thought holding each term of every phrasing in its own text, and each term's IDF weight
    among the store's `total_docs` thoughts."""
    terms = list(query.all_terms)
    found = search_store.bodies_matching(conn, [search.quote_term(t) for t in terms]) if terms else []
    holders = dict(zip(terms, found, strict=True))
    docs = max(1, total_docs)
    weights = {t: (_UNSEEN if not held else ranker.idf(len(held), docs)) for t, held in holders.items()}
    return holders, weights


def _coverage(
    terms: Sequence[str], holders: Mapping[str, set[int]], weights: Mapping[str, float], ids: Sequence[int]
) -> dict[int, float]:
    """IDF-weighted share of `terms` in each thought's own text."""
    total = sum(weights[t] for t in terms) or 1.0
    coverage = dict.fromkeys(ids, 0.0)
    for term in terms:
        for tid in holders[term] & coverage.keys():
            coverage[tid] += weights[term] / total
    return coverage


def _phrased(conn: apsw.Connection, question: str) -> set[int]:
    """The thoughts holding two adjacent words of the question, adjacent."""
    phrases = search.phrase_query(question)
    if not phrases:
        return set()
    return search_store.bodies_matching(conn, [phrases])[0]


def _sequence_coverage(
    conn: apsw.Connection, sequences: list[int], holders: Mapping[str, set[int]], weights: Mapping[str, float]
) -> float:
    """Best IDF-weighted share of the question's terms found anywhere in one of the top-ranked sequences.

    A near miss shares some words with a stored topic but not the one that names its subject
    ("red pandas at the zoo" against a stored zoo trip), so the best sequence leaves it uncovered.
    """
    total = sum(weights.values())
    if not sequences or total <= 0:
        return 0.0
    members = search_store.sequence_members(conn, sorted(set(sequences)))
    best = 0.0
    for ids in members.values():
        share = sum(w for t, w in weights.items() if holders[t] & ids) / total
        best = max(best, share)
    return best


def _neighbour_best(ids: Sequence[int], pairs: Sequence[tuple[int, int]], value: Mapping[int, float]) -> list[float]:
    """Per pool thought, the best `value` of the steps written just before and after it."""
    near: dict[int, float] = {}
    for tid, other in pairs:
        near[tid] = max(near.get(tid, 0.0), value[other])
    return [near.get(t, 0.0) for t in ids]


def _sequence_second(
    ids: Sequence[int], records: Mapping[int, ThoughtRecord], value: Mapping[int, float]
) -> list[float]:
    """Per pool thought, the best `value` of another pool thought of its sequence (0 when none)."""
    by_seq: dict[int, list[float]] = {}
    for t in ids:
        by_seq.setdefault(records[t].sequence_key, []).append(value[t])
    out = []
    for t in ids:
        rest = sorted(by_seq[records[t].sequence_key], reverse=True)
        rest.remove(value[t])
        out.append(rest[0] if rest else 0.0)
    return out


def _ranks(scores: dict[int, float]) -> dict[int, int]:
    """Each id's rank by score, best 0; equal scores share a rank (identical thoughts score alike)."""
    ordered = sorted(scores.values(), reverse=True)
    first: dict[float, int] = {}
    for rank, value in enumerate(ordered):
        first.setdefault(value, rank)
    return {tid: first[value] for tid, value in scores.items()}


def _snippet(pool: Pool, tid: int, tuning: Tuning) -> str:
    """The passage that matched: around the query's words, or the best-matching passage by meaning."""
    body = pool.records[tid].body
    terms = list(pool.query.terms)
    if pool.phrasings is not None and pool.phrasings.has(tid):
        slot = pool.phrasings.best_slot(tid)
        passage = passage_of(body, slot, tuning.passage_min_chars)
        # A keyword match whose words sit outside the closest passage shows its words instead.
        inside = not terms or search.term_coverage(passage, terms) > 0
        if slot > 0 and (inside or tid not in pool.keyword):
            return search.make_snippet(passage, terms or list(pool.query.alternative_terms))
    if terms and search.term_coverage(body, terms) == 0 and pool.query.alternative_terms:
        terms = list(pool.query.alternative_terms)
    return search.make_snippet(body, terms)
