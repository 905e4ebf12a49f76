"""Ranking parts of search: the in-memory dense index, the feature rules and the shipped models."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from thoughtline.domain.vector_keys import thought_of
from thoughtline.library import ranker, vectors
from thoughtline.library.dense import DenseIndex
from thoughtline.library.embed import MiniLMEmbedder
from thoughtline.storage import vectors as vector_store
from thoughtline.storage.db import connect
from thoughtline.storage.migrations import migrate


def _insert(conn: object, sequence: int, position: int, body: str) -> None:
    conn.execute(  # type: ignore[attr-defined]
        "INSERT INTO thoughts(sequence_id, position, number, total, next_needed, body, created_at) "
        "VALUES (?, ?, ?, 9, 1, ?, 0)",
        (sequence, position, position, body),
    )


def test_dense_index_scores_whole_best_sentence_and_sequence_and_follows_the_store(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    conn = connect(tmp_path / "s.sqlite3", "wal")
    migrate(conn)
    with conn:
        for public in ("seq_a", "seq_b"):
            conn.execute(
                "INSERT INTO sequences(public_id, title, total_thoughts, last_thought_number, created_at, updated_at) "
                "VALUES (?, 't', 9, 9, 0, 0)",
                (public,),
            )
        _insert(conn, 1, 1, "Alpha release notes are drafted. The deployment failed on the canary.")
        _insert(conn, 1, 2, "Gamma ray physics reading list.")
        _insert(conn, 2, 1, "Deployment rollback plan for the billing service.")
    assert vectors.backfill(conn, embedder) == 3
    index = DenseIndex()
    index.refresh(conn)
    query = embedder.embed(["the deployment failed"])[0]
    scores = index.score(query)
    assert scores.thought_ids.tolist() == [1, 2, 3]
    # The best vector is at least the whole thought, and for thought 1 it is its second sentence.
    assert np.all(scores.best >= scores.whole - 1e-6)
    assert scores.best_slot(0) == 2
    # The best-vector cosine is that of the thought's closest stored (float) vector, to within the
    # in-memory int8 codes' error.
    expected: dict[int, float] = {}
    for key, blob in vector_store.vectors_after(conn, -1):
        cosine = float(np.frombuffer(blob, dtype=np.float32) @ query)
        expected[thought_of(key)] = max(expected.get(thought_of(key), -2.0), cosine)
    assert np.allclose([expected[t] for t in (1, 2, 3)], scores.best, atol=3e-3)
    # Thoughts of one sequence share its centroid's cosine.
    assert scores.sequence[0] == pytest.approx(scores.sequence[1])
    assert scores.sequence[0] != pytest.approx(scores.sequence[2])
    with conn:
        _insert(conn, 2, 2, "The canary deployment failed again after the fix.")
    vectors.backfill(conn, embedder)
    generation = index.generation
    index.refresh(conn)
    assert index.generation == generation  # appended, not reloaded
    assert index.score(query).thought_ids.tolist() == [1, 2, 3, 4]
    with conn:
        conn.execute("DELETE FROM thoughts WHERE id = 2")
    index.refresh(conn)
    assert index.score(query).thought_ids.tolist() == [1, 3, 4]
    assert index.score(query).lookup([4, 2, 1]) == {4: 2, 1: 0}
    assert vectors.reindex(conn, embedder, show_progress=False) == 3
    conn.close()


def test_an_empty_index_scores_nothing() -> None:
    scores = DenseIndex().score(np.ones(384, dtype=np.float32))
    assert scores.thought_ids.size == 0
    assert scores.lookup([1]) == {}


def _evidence(n: int, **override: object) -> ranker.Evidence:
    base: dict[str, object] = {
        "keyword": [None] * n,
        "keyword_rank": [None] * n,
        "sem": [0.1] * n,
        "seq_cos": [0.1] * n,
        "dense_rank": [None] * n,
        "coverage": [0.0] * n,
        "phrase": [False] * n,
        "length": [100] * n,
        "neighbour_sem": [0.0] * n,
        "seq_best": [0.0] * n,
    }
    base.update(override)
    return ranker.Evidence(**base)  # type: ignore[arg-type]


def test_candidate_features_give_a_keyword_miss_its_sides_minimum_and_measure_the_gap_to_the_best() -> None:
    ev = _evidence(3, keyword=[4.0, 2.0, None], keyword_rank=[0, 1, None], sem=[0.2, 0.5, 0.4], coverage=[1.0, 0.5, 0])
    x = ranker.candidate_features(ev)
    assert x.names == ranker.CANDIDATE_FEATURES
    assert x.rows == 3
    kw = x.column("kw_z")
    assert kw[0] > kw[1] == kw[2]
    assert x.column("kw_rr").tolist() == [1.0, 0.5, 0.0]
    assert x.column("sem_gap").tolist() == pytest.approx([-0.3, 0.0, -0.1])
    assert x.column("all_terms").tolist() == [1.0, 0.0, 0.0]
    assert ranker.candidate_features(_evidence(0)).matrix.shape == (0, len(ranker.CANDIDATE_FEATURES))


def test_alternative_evidence_adds_its_own_named_columns() -> None:
    alt = ranker.AlternativeEvidence(
        alt_sem_max=[0.6, 0.2],
        all_sem_mean=[0.5, 0.1],
        alt_seq_max=[0.4, 0.3],
        keyword=[None, 3.0],
        coverage=[0.5, 1.0],
        fused_rank=[0, None],
        neighbour_sem=[0.0, 0.0],
        seq_best=[0.0, 0.0],
    )
    x = ranker.candidate_features(_evidence(2), alt)
    assert x.names == (*ranker.CANDIDATE_FEATURES, *ranker.ALTERNATIVE_FEATURES)
    assert x.column("alt_kw_z")[1] > x.column("alt_kw_z")[0]
    assert x.column("fused_rr").tolist() == [1.0, 0.0]


def test_a_lone_keyword_hit_still_beats_what_the_keyword_side_missed() -> None:
    kw = ranker.candidate_features(_evidence(2, keyword=[3.0, None], keyword_rank=[0, None])).column("kw_z")
    assert kw[0] > kw[1]


def test_a_model_reads_its_columns_by_name_whatever_their_order_in_the_table() -> None:
    model = ranker.Linear(("b", "a"), np.zeros(2), np.ones(2), np.array([1.0, 10.0]), 0.0)
    table = ranker.Table.of({"a": [1.0, 0.0], "b": [0.0, 1.0], "c": [5.0, 5.0]}, 2)
    assert model.score(table).tolist() == [10.0, 1.0]


def test_the_shipped_models_name_their_features_and_round_trip_through_json() -> None:
    raw = json.loads((resources.files("thoughtline") / "library" / "ranker_weights.json").read_text())
    assert raw["question"]["ranker"]["features"] == list(ranker.CANDIDATE_FEATURES)
    assert raw["question"]["abstain"]["features"] == list(ranker.QUERY_FEATURES)
    known = {*ranker.CANDIDATE_FEATURES, *ranker.ALTERNATIVE_FEATURES}
    known_query = {*ranker.QUERY_FEATURES, *ranker.ALTERNATIVE_QUERY_FEATURES}
    for has_alternatives in (False, True):
        models = ranker.load_models().pick(has_alternatives)
        assert models.ranker is not None
        assert models.abstain is not None
        assert set(models.ranker.features) <= known
        assert set(models.abstain.features) <= known_query
        assert models.ranker.coef.shape == (len(models.ranker.features),)
        assert 0 < models.abstain_above < 1
        again = ranker.Linear.from_json(models.ranker.to_json())
        table = ranker.Table.of({name: [1.0, 2.0] for name in models.ranker.features}, 2)
        assert np.allclose(again.score(table), models.ranker.score(table), atol=1e-4)


def test_query_features_rise_with_evidence_and_idf_never_goes_negative() -> None:
    def of(strength: float, hit: bool) -> ranker.Table:
        ev = ranker.QueryEvidence(
            sem=[0.1 + strength],
            best=[0.1 + strength],
            dense_top=[0.1],
            seq_cos=[0.1 + strength],
            top5_coverage=[strength],
            all_terms_hit=hit,
            agree=hit,
            idf_found=30.0 * strength,
            unseen=1.0 - strength,
            ranked=np.array([5.0 * strength, 0.0]),
            sequence_coverage=strength,
        )
        return ranker.query_features(ev)

    weak, strong = of(0.0, False), of(1.0, True)
    assert weak.names == strong.names == ranker.QUERY_FEATURES
    for name in ("top_sem", "top_best", "best_coverage", "all_terms_hit", "agree"):
        assert strong.column(name)[0] > weak.column(name)[0]
    assert ranker.idf(10, 10) >= 0
    assert ranker.idf(1, 1000) > ranker.idf(100, 1000)
