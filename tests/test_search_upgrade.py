"""Migration 0007_search_ranking: stores embedded before sentence vectors get them without a reindex."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from tests.sample_notes import BOILER, LEASE
from tests.support import TOKEN, mcp_client, serve_in_thread, text
from thoughtline.config import Settings
from thoughtline.domain.vector_keys import PASSAGE_MIN_CHARS, VECTOR_SLOTS, chunk_texts
from thoughtline.identity import OWNER_KEY
from thoughtline.library import vectors
from thoughtline.library.embed import MiniLMEmbedder
from thoughtline.storage import vectors as vector_store
from thoughtline.storage.db import connect, write_transaction
from thoughtline.storage.migrations import MIGRATIONS, migrate
from thoughtline.storage.router import store_path
from thoughtline.web.app import create_app

pytestmark = pytest.mark.anyio

BEFORE = [m for m in MIGRATIONS if m.name != "0007_search_ranking"]
# The pre-issue-8 rule embedded a thought of up to 1,000 characters as one vector.
OLD_RULE_MIN_CHARS = 1_000


def _add(conn: apsw.Connection, public_id: str, title: str, bodies: list[str]) -> None:
    with write_transaction(conn):
        conn.execute(
            "INSERT INTO sequences(public_id, title, total_thoughts, last_thought_number, thought_count, "
            "created_at, updated_at) VALUES (?, ?, ?, ?, ?, 0, 0)",
            (public_id, title, len(bodies), len(bodies), len(bodies)),
        )
        seq = conn.last_insert_rowid()
        for n, body in enumerate(bodies, start=1):
            conn.execute(
                "INSERT INTO thoughts(sequence_id, position, number, total, next_needed, body, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, 0)",
                (seq, n, n, len(bodies), int(n < len(bodies)), body),
            )


def _old_store(path: Path, embedder: MiniLMEmbedder, passage_min_chars: int) -> apsw.Connection:
    path.parent.mkdir(parents=True, mode=0o700)
    conn = connect(path, "wal")
    migrate(conn, BEFORE)
    _add(conn, "seq_" + "b" * 32, "Cold radiators upstairs", BOILER)
    _add(conn, "seq_" + "c" * 32, "Lease renewal", LEASE)
    vectors.backfill(conn, embedder, passage_min_chars=passage_min_chars)
    assert vector_store.pending_count(conn) == 0
    return conn


def _expected_keys(conn: apsw.Connection) -> set[int]:
    keys: set[int] = set()
    for tid, body in conn.execute("SELECT id, body FROM thoughts"):
        count = len(chunk_texts(str(body), VECTOR_SLOTS, PASSAGE_MIN_CHARS))
        keys.update(int(tid) * VECTOR_SLOTS + slot for slot in range(count))
    return keys


def _stored_keys(conn: apsw.Connection) -> list[int]:
    return [int(r[0]) for r in conn.execute("SELECT vector_key FROM thought_vectors")]


async def test_an_upgraded_store_gets_sentence_vectors_that_replace_the_old_ones(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    data = tmp_path / "data"
    path = store_path(data, OWNER_KEY)
    conn = _old_store(path, embedder, OLD_RULE_MIN_CHARS)
    assert vector_store.vector_count(conn) == len(BOILER) + len(LEASE)  # one whole vector each
    assert migrate(conn) == ["0007_search_ranking"]
    # Every multi-sentence thought is queued again; the one-sentence step keeps its vector as is.
    assert vector_store.pending_count(conn) == len(BOILER) + len(LEASE) - 1
    assert vector_store.vector_count(conn) == len(BOILER) + len(LEASE)  # still served meanwhile
    conn.close()

    app = create_app(Settings(data_dir=data, api_token=TOKEN), embedder_factory=lambda: embedder)
    with serve_in_thread(app) as running:
        async with mcp_client(running.base_url) as client:
            found = await client.call_tool("search_thoughts", {"query": "what pressure was the heating system at?"})
            assert not found.is_error, text(found)
            out = found.structured_content
            assert out is not None
            assert out["abstained"] is False
            best = out["results"][0]
            assert best["thoughtNumber"] == 2
            # The snippet is the sentence whose own vector matched: sentence vectors exist now.
            assert best["snippet"] == "Pressure gauge reads 0.4 bar with the heating on."
            assert "unindexedThoughts" not in out

    conn = connect(path, "wal")
    keys = _stored_keys(conn)
    assert len(keys) == len(set(keys))  # replaced, not duplicated
    assert set(keys) == _expected_keys(conn)
    assert vector_store.pending_count(conn) == 0
    conn.close()


def test_a_store_embedded_under_the_current_rule_requeues_nothing(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    conn = _old_store(store_path(tmp_path / "data", OWNER_KEY), embedder, PASSAGE_MIN_CHARS)
    before = sorted(_stored_keys(conn))
    assert migrate(conn) == ["0007_search_ranking"]
    assert vector_store.pending_count(conn) == 0
    assert sorted(_stored_keys(conn)) == before
    conn.close()


def test_a_new_store_records_the_migration_with_nothing_to_requeue(tmp_path: Path) -> None:
    conn = connect(tmp_path / "new.sqlite3", "wal")
    assert "0007_search_ranking" in migrate(conn)
    assert vector_store.pending_count(conn) == 0
    conn.close()


def test_a_long_thought_cut_into_groups_is_requeued_even_when_its_vector_count_matches(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    # The old rule cut a thought of more than 16 sentences into the same groups as today, but
    # headed each by the thought's opening words: same count, different vectors.
    long_step = " ".join(f"Check {n}: the radiator valve on floor {n} was fully open and warm." for n in range(20))
    assert len(long_step) > 1_000
    conn = connect(tmp_path / "old.sqlite3", "wal")
    migrate(conn, BEFORE)
    _add(conn, "seq_" + "d" * 32, "Valve survey", [long_step, "Short note."])
    vectors.backfill(conn, embedder)
    assert migrate(conn) == ["0007_search_ranking"]
    assert [int(r[0]) for r in conn.execute("SELECT thought_id FROM vector_queue")] == [1]
    conn.close()
