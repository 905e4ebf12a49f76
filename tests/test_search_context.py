"""The keyword index's document expansion: neighbours' text and the sequence title (0004_search_context)."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import apsw
import pytest

from tests import fts_support as fts
from thoughtline.domain.arguments import ThoughtInput
from thoughtline.library import search
from thoughtline.storage import search as search_store
from thoughtline.storage import vectors as vector_store
from thoughtline.storage.db import connect
from thoughtline.storage.idempotency import Replayed
from thoughtline.storage.migrations import MIGRATIONS, migrate
from thoughtline.storage.search import ColumnWeights, SearchFilters
from thoughtline.storage.thoughts import Written, append_thought
from thoughtline.storage.writer import Writer

STEPS = [
    "The nightly export keeps timing out.",
    "Profiling shows the serializer walks every revision twice.",
    "Caching the revision list fixed it.",
    "Unrelated: rotate the signing keys next week.",
]
PROBES = ["export", "serializer", "revision", "caching", "signing", "nightly", "keys", "billing"]


def _add_sequence(conn: apsw.Connection, public_id: str, title: str, bodies: list[str]) -> int:
    with conn:
        conn.execute(
            "INSERT INTO sequences(public_id, title, total_thoughts, last_thought_number, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, 0, 0)",
            (public_id, title, len(bodies), len(bodies)),
        )
        seq = conn.last_insert_rowid()
        for position, body in enumerate(bodies, start=1):
            conn.execute(
                "INSERT INTO thoughts(sequence_id, position, number, total, next_needed, body, created_at) "
                "VALUES (?, ?, ?, ?, 1, ?, 0)",
                (seq, position, position, len(bodies), body),
            )
    return int(seq)


def _ids(conn: apsw.Connection, match: str, weights: ColumnWeights | None = None) -> list[int]:
    return [tid for tid, _ in search_store.keyword_candidates(conn, match, SearchFilters(), 10, weights)]


def _snapshot(conn: apsw.Connection) -> dict[str, list[tuple[int, float]]]:
    return {
        p: [(t, round(s, 9)) for t, s in search_store.keyword_candidates(conn, f'"{p}"', SearchFilters(), 50)]
        for p in PROBES
    }


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[apsw.Connection]:
    opened = connect(tmp_path / "store.sqlite3", "wal")
    migrate(opened)
    yield opened
    opened.close()


def test_in_column_wraps_a_match_in_a_column_filter() -> None:
    assert fts.in_column("body", '"a" "b"') == 'body : ("a" "b")'


def test_a_thought_is_found_by_its_neighbours_words_below_the_thought_that_holds_them(conn: apsw.Connection) -> None:
    _add_sequence(conn, "seq_a", "Export timeouts", STEPS)
    # "serializer" is only in step 2; steps 1 and 3 hold it as context, step 4 does not.
    found = _ids(conn, '"serializer"')
    assert found[0] == 2
    assert set(found) == {1, 2, 3}
    # With the context column weighed at zero, the neighbours still match but score nothing.
    scores = dict(search_store.keyword_candidates(conn, '"serializer"', SearchFilters(), 10, ColumnWeights(context=0)))
    assert scores[2] > 0
    assert scores[1] == scores[3] == 0


def test_the_sequence_title_matches_every_thought_of_the_sequence(conn: apsw.Connection) -> None:
    _add_sequence(conn, "seq_a", "Quarterly billing migration", STEPS)
    _add_sequence(conn, "seq_b", "Something else", ["A thought about invoices."])
    assert set(_ids(conn, '"billing"')) == {1, 2, 3, 4}


def test_the_strict_match_sees_only_the_thoughts_own_text(conn: apsw.Connection) -> None:
    _add_sequence(conn, "seq_a", "Export timeouts", STEPS)
    both = fts.fts_escape("serializer caching")
    assert both is not None
    assert set(_ids(conn, both)) == {2, 3}  # each holds one word and the other as context
    assert _ids(conn, fts.in_column("body", both)) == []


def test_writes_edits_and_deletes_keep_the_index_equal_to_a_full_refill(conn: apsw.Connection) -> None:
    def refilled() -> dict[str, list[tuple[int, float]]]:
        with conn:
            vector_store.reset_index(conn, "test-model")
        return _snapshot(conn)

    _add_sequence(conn, "seq_a", "Export timeouts", STEPS)
    _add_sequence(conn, "seq_b", "Key rotation", ["Rotate the signing keys.", "Billing keys too."])
    incremental = _snapshot(conn)
    assert incremental == refilled()
    with conn:
        conn.execute("UPDATE thoughts SET body = 'Caching the export manifest instead.' WHERE id = 3")
    incremental = _snapshot(conn)
    assert incremental["serializer"]
    assert {t for t, _ in incremental["caching"]} == {2, 3, 4}
    assert incremental == refilled()
    with conn:
        conn.execute("DELETE FROM thoughts WHERE id = 2")  # a middle step: 1 and 3 lose it as context
    incremental = _snapshot(conn)
    assert incremental["serializer"] == []
    assert incremental == refilled()
    with conn:
        conn.execute("DELETE FROM sequences WHERE public_id = 'seq_a'")
    incremental = _snapshot(conn)
    assert {t for t, _ in incremental["keys"]} == {5, 6}
    assert incremental == refilled()


def test_a_store_upgraded_to_0004_indexes_its_existing_thoughts_with_context(tmp_path: Path) -> None:
    conn = connect(tmp_path / "old.sqlite3", "wal")
    migrate(conn, MIGRATIONS[:3])
    _add_sequence(conn, "seq_a", "Export timeouts", STEPS)
    assert migrate(conn, MIGRATIONS[:4]) == ["0004_search_context"]  # later migrations are not this test's
    assert set(_ids(conn, '"serializer"')) == {1, 2, 3}
    assert _ids(conn, fts.in_column("body", '"serializer"')) == [2]
    conn.close()


def test_a_phrase_query_finds_only_thoughts_holding_the_words_side_by_side(conn: apsw.Connection) -> None:
    _add_sequence(conn, "seq_a", "Groups", ["I joined a support group last week.", "The group gave me support."])
    _add_sequence(conn, "seq_b", "Other", ["Nothing to see here."])
    phrases = search.phrase_query("Which support group did she join?")
    assert phrases == '"support group"'
    assert _ids(conn, fts.in_column("body", phrases)) == [1]


@pytest.mark.anyio
async def test_a_commit_group_indexes_its_thoughts_as_they_would_be_one_at_a_time(tmp_path: Path) -> None:
    """The store writer queues a group's new thoughts and indexes them in one pass before COMMIT
    (migration 0015); the index must equal a full refill, with a failed write of the group left out."""
    writer = Writer(tmp_path / "s.sqlite3", "wal")
    writer.set_group_hooks(search_store.begin_keyword_batch, search_store.index_queued_keywords)
    writer.start(migrate)
    try:
        firsts = [await writer.submit(_append(body, None)) for body in (STEPS[0], "Rotate the signing keys.")]
        seqs = [w.sequence_id for w in firsts if isinstance(w, Written)]
        entered, gate = threading.Event(), threading.Event()

        def hold(conn: apsw.Connection) -> bool:
            entered.set()
            return gate.wait(10)

        blocker = asyncio.ensure_future(writer.submit(hold))
        assert await asyncio.to_thread(entered.wait, 10)  # everything below queues behind `hold`

        def half_done(conn: apsw.Connection) -> None:
            _append("A billing serializer step that never happened.", seqs[1], 2)(conn)
            raise RuntimeError("refused after writing")

        # Interleaved: each sequence grows by steps whose neighbours arrive in the same group.
        jobs = [writer.submit(_append(body, seqs[0], n)) for n, body in enumerate(STEPS[1:], start=2)]
        failed = asyncio.ensure_future(writer.submit(half_done))
        jobs.append(writer.submit(_append("Billing keys too.", seqs[1], 2)))
        gate.set()
        await blocker
        await asyncio.gather(*jobs)
        with pytest.raises(RuntimeError, match="refused after writing"):
            await failed
        assert writer.stats.largest_group >= 4
    finally:
        writer.close()
    conn = connect(tmp_path / "s.sqlite3", "wal")
    assert conn.execute("SELECT count(*) FROM keyword_queue").fetchall()[0][0] == 0
    assert conn.execute("SELECT count(*) FROM keyword_batch").fetchall()[0][0] == 0
    grouped = _snapshot(conn)
    assert conn.execute("SELECT count(*) FROM thoughts").fetchall()[0][0] == 6  # the failed write left nothing
    assert {t for t, _ in grouped["serializer"]} == {1, 3, 4}  # step 2 and both its neighbours, not the failed one
    assert {t for t, _ in grouped["billing"]} == {2, 6}
    with conn:
        vector_store.reset_index(conn, "test-model")
    assert grouped == _snapshot(conn)
    conn.close()


def _append(body: str, seq: str | None, number: int = 1) -> Callable[[apsw.Connection], Written | Replayed]:
    inp = ThoughtInput(body, True, number, 10, sequence_id=seq)
    return lambda conn: append_thought(conn, inp, number, "seq_" + uuid.uuid4().hex, continue_open=False)


def test_the_queued_keywords_pass_costs_the_same_in_a_small_and_a_large_store(tmp_path: Path) -> None:
    """Without statistics SQLite planned the pass's join from `thoughts`, scanning the whole store
    once per commit group; it must read the queue first and seek each thought and its neighbours.
    Cost is counted in SQLite VM steps (deterministic), not time."""

    def steps_to_index_one_new_thought(sequences: int) -> int:
        conn = connect(tmp_path / f"s{sequences}.sqlite3", "wal")
        migrate(conn)
        for n in range(sequences):
            _add_sequence(conn, f"seq_{n}", "Export timeouts", STEPS)
        counted = [0]

        def count() -> bool:
            counted[0] += 1
            return False  # go on

        with conn:
            search_store.begin_keyword_batch(conn)
            conn.execute(
                "INSERT INTO thoughts(sequence_id, position, number, total, next_needed, body, created_at) "
                "VALUES (1, 5, 5, 5, 0, 'A fifth step about the serializer.', 0)"
            )
            conn.set_progress_handler(count, 10)
            search_store.index_queued_keywords(conn)
            conn.set_progress_handler(None)
        assert {t for t, _ in search_store.keyword_candidates(conn, '"fifth"', SearchFilters(), 10)} == {
            4,
            len(STEPS) * sequences + 1,
        }
        conn.close()
        return counted[0]

    small, large = steps_to_index_one_new_thought(2), steps_to_index_one_new_thought(400)
    assert large < 2 * small + 20
