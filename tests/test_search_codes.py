"""Every vector's int8 codes kept in the store (migration 0013): what a search opens from, and old stores."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import apsw
import numpy as np
import pytest

from tests.sample_notes import BOILER, DRIP, HOSE, LEASE, store_of
from tests.support import TOKEN, mcp_client, serve_in_thread, text
from thoughtline.config import Settings
from thoughtline.identity import OWNER_KEY
from thoughtline.library import vectors
from thoughtline.library.dense import DenseIndex, Scores
from thoughtline.library.embed import MiniLMEmbedder
from thoughtline.library.retrieval import hybrid_search
from thoughtline.storage import vectors as vector_store
from thoughtline.storage.db import connect
from thoughtline.storage.migrations import MIGRATIONS, Migration, migrate
from thoughtline.storage.router import store_path
from thoughtline.web.app import create_app

pytestmark = pytest.mark.anyio

QUESTIONS = ["the garden hose is leaking", "radiators cold upstairs", "negotiating the rent increase"]
BEFORE = [m for m in MIGRATIONS if m.name != "0013_vector_codes"]


def _store(path: Path, migrations: Sequence[Migration] = MIGRATIONS) -> apsw.Connection:
    return store_of(path, [BOILER, LEASE, HOSE, DRIP], migrations)


def _coded_vectors(conn: apsw.Connection) -> int:
    rows: list[Any] = conn.execute("SELECT coalesce(sum(length(scales)), 0) / 4 FROM vector_codes").fetchall()
    return int(rows[0][0])


def _close_to(a: list[Scores], b: list[Scores]) -> None:
    """Same thoughts, the same codes' cosines; sequence cosines within the codes' error."""
    for x, y in zip(a, b, strict=True):
        assert x.thought_ids.tolist() == y.thought_ids.tolist()
        assert np.array_equal(x.whole, y.whole)
        assert np.array_equal(x.best, y.best)
        assert np.abs(x.sequence - y.sequence).max() < 1e-3


def _ranked(conn: apsw.Connection, embedder: MiniLMEmbedder, index: DenseIndex) -> list[list[int]]:
    return [[h.record.thought_id for h in hybrid_search(conn, embedder, q, index=index).hits] for q in QUESTIONS]


def test_an_index_opened_from_the_stored_codes_scores_as_one_that_codes_the_floats(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    conn = _store(tmp_path / "s.sqlite3")
    vectors.backfill(conn, embedder)
    assert _coded_vectors(conn) == vector_store.vector_count(conn) > 0
    from_codes, from_floats = DenseIndex(), DenseIndex(read_codes=False)
    from_codes.refresh(conn)
    from_floats.refresh(conn)
    queries = embedder.embed(QUESTIONS)
    _close_to(from_codes.score_many(queries), from_floats.score_many(queries))
    assert _ranked(conn, embedder, from_codes) == _ranked(conn, embedder, from_floats)
    conn.close()


def test_a_store_embedded_before_the_codes_gets_them_all_when_it_upgrades_and_searches_the_same(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    path = tmp_path / "old.sqlite3"
    conn = _store(path, BEFORE)
    vectors.backfill(conn, embedder)
    old = DenseIndex()
    old.refresh(conn)  # no codes table yet: the floats are read and coded
    before = _ranked(conn, embedder, old)
    assert migrate(conn) == ["0013_vector_codes"]
    assert _coded_vectors(conn) == vector_store.vector_count(conn) == len(old)
    upgraded = DenseIndex()
    upgraded.refresh(conn)
    queries = embedder.embed(QUESTIONS)
    _close_to(upgraded.score_many(queries), old.score_many(queries))
    assert _ranked(conn, embedder, upgraded) == before
    conn.close()


def test_codes_follow_their_vectors_through_deletes_edits_and_a_change_of_model(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    conn = _store(tmp_path / "s.sqlite3")
    vectors.backfill(conn, embedder)
    with conn:
        conn.execute("DELETE FROM thoughts WHERE id = 2")
        conn.execute("UPDATE thoughts SET body = 'The hose clamp was loose. I tightened it.' WHERE id = 5")
    coded = {int(r[0]) for r in conn.execute("SELECT thought_id FROM vector_codes")}
    assert not {2, 5} & coded
    assert _coded_vectors(conn) == vector_store.vector_count(conn)
    vectors.backfill(conn, embedder)  # thought 5 again, with its new text
    assert _coded_vectors(conn) == vector_store.vector_count(conn)
    fresh, floats = DenseIndex(), DenseIndex(read_codes=False)
    fresh.refresh(conn)
    floats.refresh(conn)
    _close_to(fresh.score_many(embedder.embed(QUESTIONS)), floats.score_many(embedder.embed(QUESTIONS)))
    with conn:
        vector_store.reset_index(conn, embedder.model_id)
    assert _coded_vectors(conn) == vector_store.vector_count(conn) == 0
    conn.close()


def test_an_index_reads_the_floats_when_some_vector_has_no_codes(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    conn = _store(tmp_path / "s.sqlite3")
    vectors.backfill(conn, embedder)
    complete = DenseIndex()
    complete.refresh(conn)
    with conn:  # codes lost (not possible through the tools): the floats still hold
        conn.execute("DELETE FROM vector_codes WHERE thought_id = 3")
    partial = DenseIndex()
    partial.refresh(conn)
    assert len(partial) == len(complete) == vector_store.vector_count(conn)
    queries = embedder.embed(QUESTIONS)
    _close_to(partial.score_many(queries), complete.score_many(queries))
    conn.close()


async def test_a_server_opening_a_store_from_before_the_codes_upgrades_it_and_finds_the_same(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    data = tmp_path / "data"
    path = store_path(data, OWNER_KEY)
    path.parent.mkdir(parents=True, mode=0o700)
    conn = _store(path, BEFORE)
    vectors.backfill(conn, embedder)
    old = DenseIndex()
    want = [hybrid_search(conn, embedder, q, index=old).hits[0].record for q in QUESTIONS]
    conn.close()

    app = create_app(Settings(data_dir=data, api_token=TOKEN), embedder_factory=lambda: embedder)
    with serve_in_thread(app) as running:
        async with mcp_client(running.base_url) as client:
            for question, record in zip(QUESTIONS, want, strict=True):
                found = await client.call_tool("search_thoughts", {"query": question})
                assert not found.is_error, text(found)
                out = found.structured_content
                assert out is not None
                assert out["results"][0]["thoughtNumber"] == record.number

    conn = connect(path, "wal")
    assert "0013_vector_codes" in [str(r[0]) for r in conn.execute("SELECT name FROM schema_migrations")]
    assert _coded_vectors(conn) == vector_store.vector_count(conn) > 0
    conn.close()
