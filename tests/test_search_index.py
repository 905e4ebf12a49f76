"""The in-memory dense index: several phrasings in one product, compact vectors, the memory budget."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import apsw
import numpy as np
import pytest

from tests.sample_notes import BOILER, DRIP, HOSE, LEASE
from thoughtline.library import vectors
from thoughtline.library.dense import DenseIndex
from thoughtline.library.embed import MiniLMEmbedder
from thoughtline.storage.db import connect
from thoughtline.storage.migrations import migrate

PHRASINGS = [
    "the garden hose is leaking",
    "why is the water meter spinning",
    "radiators cold upstairs",
    "negotiating the rent increase",
]


def _store(path: Path, notes: list[list[str]]) -> apsw.Connection:
    conn = connect(path, "wal")
    migrate(conn)
    with conn:
        for s, steps in enumerate(notes, start=1):
            conn.execute(
                "INSERT INTO sequences(public_id, title, total_thoughts, last_thought_number, created_at, updated_at) "
                "VALUES (?, 't', ?, ?, 0, 0)",
                (f"seq_{s}", len(steps), len(steps)),
            )
            for p, body in enumerate(steps, start=1):
                conn.execute(
                    "INSERT INTO thoughts(sequence_id, position, number, total, next_needed, body, created_at) "
                    "VALUES (?, ?, ?, ?, 1, ?, 0)",
                    (s, p, p, len(steps), body),
                )
    return conn


@pytest.fixture
def notes_store(tmp_path: Path, embedder: MiniLMEmbedder) -> Iterator[apsw.Connection]:
    """A real store of the sample notes, every thought embedded by the real model."""
    conn = _store(tmp_path / "notes.sqlite3", [BOILER, LEASE, HOSE, DRIP])
    vectors.backfill(conn, embedder)
    yield conn
    conn.close()


def test_scoring_several_phrasings_at_once_equals_scoring_each(
    notes_store: apsw.Connection, embedder: MiniLMEmbedder
) -> None:
    index = DenseIndex()
    index.refresh(notes_store)
    queries = embedder.embed(PHRASINGS)
    together = index.score_many(queries)
    assert len(together) == len(PHRASINGS)
    for q, many in zip(queries, together, strict=True):
        one = index.score(q)
        assert many.thought_ids.tolist() == one.thought_ids.tolist()
        for field in ("whole", "best", "sequence", "sims"):
            assert np.allclose(getattr(many, field), getattr(one, field), atol=1e-6), field
        assert [many.best_slot(r) for r in range(len(one.thought_ids))] == [
            one.best_slot(r) for r in range(len(one.thought_ids))
        ]
    # The phrasings differ, so their scores do too (the rows are not one query copied).
    assert not np.allclose(together[0].best, together[2].best)


def test_an_empty_index_scores_every_phrasing_as_nothing() -> None:
    out = DenseIndex().score_many(np.ones((3, 384), dtype=np.float32))
    assert [s.thought_ids.size for s in out] == [0, 0, 0]
