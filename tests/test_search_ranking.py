"""Ranking parts of search: the in-memory dense index, the feature rules and the shipped models."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from thoughtline.library import ranker, vectors
from thoughtline.library.dense import DenseIndex
from thoughtline.library.embed import MiniLMEmbedder
from thoughtline.storage import search as search_store
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
    # sqlite-vec's float cosine agrees with the in-memory int8 one to within its coding error.
    expected = dict(search_store.vector_candidates(conn, query.tobytes(), 3))
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
    names = ranker.CANDIDATE_FEATURES
    assert x.shape == (3, len(names))
    kw = x[:, names.index("kw_z")]
    assert kw[0] > kw[1] == kw[2]
    assert x[:, names.index("kw_rr")].tolist() == [1.0, 0.5, 0.0]
    assert x[:, names.index("sem_gap")].tolist() == pytest.approx([-0.3, 0.0, -0.1])
    assert x[:, names.index("all_terms")].tolist() == [1.0, 0.0, 0.0]
    assert ranker.candidate_features(_evidence(0)).shape == (0, len(names))


def test_a_lone_keyword_hit_still_beats_what_the_keyword_side_missed() -> None:
    x = ranker.candidate_features(_evidence(2, keyword=[3.0, None], keyword_rank=[0, None]))
    kw = x[:, ranker.CANDIDATE_FEATURES.index("kw_z")]
    assert kw[0] > kw[1]


def test_the_shipped_models_read_every_feature_and_round_trip_through_json() -> None:
    raw = json.loads((resources.files("thoughtline") / "library" / "ranker_weights.json").read_text())
    assert raw["features"] == list(ranker.CANDIDATE_FEATURES)
    assert raw["query_features"] == list(ranker.QUERY_FEATURES)
    models = ranker.load_models()
    assert models.ranker is not None
    assert models.abstain is not None
    assert models.ranker.coef.shape == (len(ranker.CANDIDATE_FEATURES),)
    assert models.abstain.coef.shape == (len(ranker.QUERY_FEATURES),)
    assert 0 < models.abstain_above < 1
    again = ranker.Linear.from_json(models.ranker.to_json())
    x = np.ones((2, len(ranker.CANDIDATE_FEATURES)))
    assert np.allclose(again.score(x), models.ranker.score(x), atol=1e-4)


def test_query_features_rise_with_evidence_and_idf_never_goes_negative() -> None:
    weak = ranker.query_features([0.1], [0.1], [0.1], [0.1], [0.0], False, False, 0.0, 1.0, np.array([0.0]), 0.0)
    strong = ranker.query_features([0.6], [0.7], [0.2], [0.5], [1.0], True, True, 30.0, 0.0, np.array([5.0, 1.0]), 1.0)
    assert weak.shape == strong.shape == (len(ranker.QUERY_FEATURES),)
    assert np.all(strong[[0, 1, 4, 5, 6]] > weak[[0, 1, 4, 5, 6]])
    assert ranker.idf(10, 10) >= 0
    assert ranker.idf(1, 1000) > ranker.idf(100, 1000)
