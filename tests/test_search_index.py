"""The in-memory dense index: several phrasings in one product, compact vectors, the memory budget."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import apsw
import numpy as np
import pytest

from tests.golden.harness import LibraryHarness, library_harness
from tests.sample_notes import BOILER, DRIP, HOSE, LEASE, store_of
from thoughtline.config import Settings, SettingsError
from thoughtline.domain.vector_keys import PASSAGE_MIN_CHARS, VECTOR_SLOTS, chunk_texts
from thoughtline.library import dense_runs, helping, int8_product, vectors
from thoughtline.library.dense import DenseIndex, Scores
from thoughtline.library.embed import MiniLMEmbedder
from thoughtline.storage import vectors as vector_store
from thoughtline.storage.router import store_path

PHRASINGS = [
    "the garden hose is leaking",
    "why is the water meter spinning",
    "radiators cold upstairs",
    "negotiating the rent increase",
]


def _store(path: Path, notes: list[list[str]]) -> apsw.Connection:
    return store_of(path, notes)


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


# --- compact codes against float32 --------------------------------------------------------------

GOLDEN = json.loads((Path(__file__).parent / "golden" / "sequences.json").read_text())
GOLDEN_QUERIES = [q["query"] for q in json.loads((Path(__file__).parent / "golden" / "queries.json").read_text())]


@pytest.fixture(scope="module")
def golden_store(tmp_path_factory: pytest.TempPathFactory, embedder: MiniLMEmbedder) -> Iterator[apsw.Connection]:
    """The golden sequences in a real store, embedded whole and sentence by sentence by the real model."""
    conn = _store(tmp_path_factory.mktemp("golden") / "g.sqlite3", [s["thoughts"] for s in GOLDEN.values()])
    vectors.backfill(conn, embedder)
    yield conn
    conn.close()


def _float_scores(conn: apsw.Connection, query: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Thought ids and whole / best / sequence cosines in float32, straight from sqlite-vec's vectors."""
    rows = vector_store.vectors_with_sequence_after(conn, 0)
    keys = np.array([r[0] for r in rows])
    seqs = np.array([r[2] for r in rows])
    mat = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    sims = mat @ query
    starts = np.flatnonzero(keys % VECTOR_SLOTS == 0)
    centroids = {s: mat[starts][seqs[starts] == s].sum(axis=0) for s in set(seqs[starts].tolist())}
    seq_cos = np.array([centroids[s] @ query / np.linalg.norm(centroids[s]) for s in seqs[starts]])
    return keys[starts] // VECTOR_SLOTS, sims[starts], np.maximum.reduceat(sims, starts), seq_cos


def test_int8_scores_stay_within_their_coding_error_and_rank_the_top_five_as_float32_does(
    golden_store: apsw.Connection, embedder: MiniLMEmbedder
) -> None:
    index = DenseIndex()
    index.refresh(golden_store)
    queries = embedder.embed([embedder.query_prefix + q for q in GOLDEN_QUERIES])
    worst = 0.0
    for query, compact in zip(queries, index.score_many(queries), strict=True):
        ids, whole, best, sequence = _float_scores(golden_store, query)
        assert compact.thought_ids.tolist() == ids.tolist()
        for got, want in ((compact.whole, whole), (compact.best, best), (compact.sequence, sequence)):
            worst = max(worst, float(np.abs(got - want).max()))
        # The pool the ranker sees: (whole + best) / 2 + sequence, as the dense side combines them.
        exact = (whole + best) / 2 + 0.5 * sequence
        coded = (compact.whole + compact.best) / 2 + 0.5 * compact.sequence
        top, coded_top = np.argsort(-exact)[:5], np.argsort(-coded)[:5]
        # A thought only enters the coded top five in place of one that float32 scores as a near tie.
        for row in set(coded_top) - set(top):
            assert exact[row] >= exact[top[-1]] - 0.004
    assert worst < 3e-3


def test_the_packed_product_equals_numpy_over_the_same_codes_exactly(embedder: MiniLMEmbedder) -> None:
    texts = [t for s in GOLDEN.values() for t in s["thoughts"]]
    mat = embedder.embed(texts)
    codes, scales = int8_product.quantize(mat)
    packed = int8_product.PackedCodes(np.ascontiguousarray(codes.T), scales)
    queries = int8_product.Queries.of(embedder.embed(PHRASINGS))
    assert np.array_equal(packed.dot(queries), int8_product.dot_codes(codes, scales, queries))
    assert np.abs(packed.dot(queries) - embedder.embed(PHRASINGS) @ mat.T).max() < 3e-3


def _same(a: list[Scores], b: list[Scores], atol: float = 0.0) -> None:
    for x, y in zip(a, b, strict=True):
        assert x.thought_ids.tolist() == y.thought_ids.tolist()
        for name in ("whole", "best", "sequence"):
            assert np.allclose(getattr(x, name), getattr(y, name), atol=atol, rtol=0), name
        assert [x.best_slot(r) for r in range(len(x.thought_ids))] == [
            y.best_slot(r) for r in range(len(y.thought_ids))
        ]


def test_reading_vec0_chunks_gives_what_the_virtual_table_gives_after_deletes_and_reused_slots(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    conn = _store(tmp_path / "s.sqlite3", [s["thoughts"] for s in GOLDEN.values()])
    vectors.backfill(conn, embedder)
    with conn:
        conn.execute("DELETE FROM thoughts WHERE id IN (2, 9)")  # holes in vec0's chunks
        conn.execute(
            "INSERT INTO thoughts(sequence_id, position, number, total, next_needed, body, created_at) "
            "VALUES (1, 99, 99, 99, 0, 'The cutover ran on Sunday night. Lag drained in four minutes.', 0)"
        )
    vectors.backfill(conn, embedder)  # vec0 puts the new thought's vectors into the first holes
    queries = embedder.embed(PHRASINGS)
    chunked, scanned = DenseIndex(read_codes=False), DenseIndex(read_chunks=False, read_codes=False)
    chunked.refresh(conn)
    scanned.refresh(conn)
    assert chunked._state[1].order is not None  # storage order is not key order here
    # vec0's key table counts what the virtual table holds, holes and all.
    assert vector_store.vector_count(conn) == conn.execute("SELECT count(*) FROM thought_vectors").fetchall()[0][0]
    assert vector_store.vector_count(conn) == len(chunked) == len(scanned)
    assert 2 not in chunked.score(queries[0]).thought_ids.tolist()
    _same(chunked.score_many(queries), scanned.score_many(queries))
    conn.close()


@pytest.mark.parametrize("run", [None, 4], ids=["in numpy", "packed in runs of 4"])
def test_an_index_grown_by_appends_scores_as_one_loaded_afresh(
    tmp_path: Path, embedder: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch, run: int | None
) -> None:
    if run is not None:  # the full load and the appends then pack runs for onnxruntime too
        monkeypatch.setattr(dense_runs, "PACK_RUN", run)
        monkeypatch.setattr(dense_runs, "SEAL", run)
    sequences = [s["thoughts"] for s in GOLDEN.values()]
    conn = _store(tmp_path / "s.sqlite3", [seq[:2] for seq in sequences])
    vectors.backfill(conn, embedder)
    grown = DenseIndex()
    grown.refresh(conn)
    generation = grown.generation
    with conn:  # the rest of every sequence, then a sequence of its own
        for s, seq in enumerate(sequences, start=1):
            for p, body in enumerate(seq[2:], start=3):
                conn.execute(
                    "INSERT INTO thoughts(sequence_id, position, number, total, next_needed, body, created_at) "
                    "VALUES (?, ?, ?, ?, 1, ?, 0)",
                    (s, p, p, len(seq), body),
                )
    vectors.backfill(conn, embedder)
    grown.refresh(conn)
    assert grown.generation == generation  # appended, not reloaded
    fresh = DenseIndex()
    fresh.refresh(conn)
    queries = embedder.embed(PHRASINGS)
    # Sequence norms grown through the index's own cosines carry its coding error, no more.
    _same(grown.score_many(queries), fresh.score_many(queries), atol=2e-3)
    conn.close()


# --- the memory budget of all open stores' indexes ----------------------------------------------


def _golden_vector_count() -> int:
    return sum(len(chunk_texts(t, VECTOR_SLOTS, PASSAGE_MIN_CHARS)) for s in GOLDEN.values() for t in s["thoughts"])


async def _golden_stores(h: LibraryHarness, users: list[str]) -> None:
    """Each user's store holds the golden sequences, every thought embedded before any search."""
    for user in users:
        await h.load_golden(user)
        opened = await h.router.get(user)
        while await h.library.backfill(opened, limit=64):
            pass


async def _search(h: LibraryHarness, user: str, query: str) -> list[tuple[int, float]]:
    """(thought number, similarity) of the top five: the same notes in two stores rank alike."""
    out = await h.ok("search_thoughts", {"query": query, "limit": 5}, user)
    return [(r["thoughtNumber"], r["similarity"]) for r in out["results"]]


@pytest.mark.anyio
async def test_the_budget_drops_the_least_recently_searched_index_and_its_store_reloads_it_on_demand(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    # Room for two golden stores' indexes, not three.
    budget = int(2.5 * DenseIndex.estimated_bytes(_golden_vector_count()))
    async with library_harness(tmp_path / "data", embedder, index_budget_bytes=budget) as h:
        await _golden_stores(h, ["a", "b", "c"])
        first = await _search(h, "a", "moving a large table between databases with little downtime")
        await _search(h, "b", "flaky tests")
        assert h.library.indexed_stores == 2
        await _search(h, "c", "flaky tests")
        assert h.library.indexed_stores == 2  # a's index went; its store stayed open
        assert h.router.open_count == 3
        assert 0 < h.library.index_bytes <= budget
        again = await _search(h, "a", "moving a large table between databases with little downtime")
        assert again == first  # loaded afresh from the store, it ranks the same
        assert h.library.indexed_stores == 2
        # b was searched before c, so b's index is the one that made room for a's.
        path = {u: str(store_path(tmp_path / "data", u)) for u in ("a", "b", "c")}
        assert h.library.indexed_paths == [path["c"], path["a"]]
        await _search(h, "c", "flaky tests")
        assert h.library.indexed_paths == [path["a"], path["c"]]


@pytest.mark.anyio
async def test_an_index_larger_than_the_whole_budget_is_still_served_alone(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    async with library_harness(tmp_path / "data", embedder, index_budget_bytes=1) as h:
        await _golden_stores(h, ["a", "b"])
        found = await _search(h, "a", "flaky tests")
        assert found
        assert h.library.indexed_stores == 1
        assert await _search(h, "b", "flaky tests") == found  # the same notes rank the same
        assert h.library.indexed_stores == 1


def test_the_index_budget_is_read_from_the_environment_and_refuses_zero() -> None:
    assert Settings.from_env({}).index_memory_mb == 256
    assert Settings.from_env({"THOUGHTLINE_INDEX_MEMORY_MB": "96"}).index_memory_mb == 96
    with pytest.raises(SettingsError, match="THOUGHTLINE_INDEX_MEMORY_MB=0 is below 1"):
        Settings.from_env({"THOUGHTLINE_INDEX_MEMORY_MB": "0"})


@pytest.mark.anyio
async def test_an_index_that_outgrows_the_budget_as_it_loads_makes_room_itself(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    # No vector count up front: the room is made once the refresh (in a reader thread) has loaded it.
    budget = int(1.5 * DenseIndex.estimated_bytes(_golden_vector_count()))
    async with library_harness(tmp_path / "data", embedder, index_budget_bytes=budget) as h:
        await _golden_stores(h, ["a", "b"])
        a, b = await h.router.get("a"), await h.router.get("b")
        first = h.library.index_for(a)
        await a.read(first.refresh)
        second = h.library.index_for(b)
        assert h.library.indexed_stores == 2  # b's index is still empty
        await b.read(second.refresh)
        assert h.library.indexed_paths == [str(b.path)]
        assert h.library.index_bytes == second.nbytes <= budget


def test_an_index_packed_for_onnxruntime_in_many_runs_scores_exactly_as_one_kept_in_numpy(
    golden_store: apsw.Connection, embedder: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    in_numpy = DenseIndex()
    in_numpy.refresh(golden_store)
    assert all(run.packed is None for run in in_numpy._state[0])  # a small store stays in numpy
    # Runs of 16 vectors, packed from 4: the golden store becomes several onnxruntime sessions.
    monkeypatch.setattr(dense_runs, "PACK_RUN", 16)
    monkeypatch.setattr(dense_runs, "SEAL", 4)
    packed = DenseIndex()
    packed.refresh(golden_store)
    assert len(packed._state[0]) > 2
    assert all(run.packed is not None for run in packed._state[0])
    queries = embedder.embed(PHRASINGS)
    _same(packed.score_many(queries), in_numpy.score_many(queries))


def test_a_product_whose_helper_is_busy_elsewhere_is_done_by_the_caller_alone_and_scores_the_same(
    golden_store: apsw.Connection, embedder: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dense_runs, "PACK_RUN", 16)
    monkeypatch.setattr(dense_runs, "SEAL", 4)
    packed = DenseIndex()
    packed.refresh(golden_store)
    runs = packed._state[0]
    queries = int8_product.Queries.of(embedder.embed(PHRASINGS))
    with ThreadPoolExecutor(max_workers=1) as helper:
        shared = dense_runs.product(runs, queries, helper)  # the helper takes the later half
        release = threading.Event()
        busy = helper.submit(release.wait)  # another search's half, say
        try:
            alone = dense_runs.product(runs, queries, helper)
        finally:
            release.set()
        busy.result()
    after_shutdown = dense_runs.product(runs, queries, helper)  # a closing library's helper refuses work
    assert np.array_equal(alone, shared)
    assert np.array_equal(after_shutdown, shared)
    assert np.array_equal(shared, np.concatenate([r.dot(queries) for r in runs], axis=1))


def test_phrasings_scored_partly_on_the_helper_equal_those_scored_by_the_caller_alone(
    golden_store: apsw.Connection, embedder: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    queries = embedder.embed(PHRASINGS)
    alone = DenseIndex()
    alone.refresh(golden_store)
    expected = alone.score_many(queries)
    monkeypatch.setattr(helping, "HELPED_THOUGHTS", 1)  # the golden store counts as big
    with ThreadPoolExecutor(max_workers=1) as helper:
        helped = DenseIndex(helper=helper)
        helped.refresh(golden_store)
        shared = helped.score_many(queries)  # the helper takes the later phrasings
        release = threading.Event()
        busy = helper.submit(release.wait)  # another search's work, say
        try:
            while_busy = helped.score_many(queries)
        finally:
            release.set()
        busy.result()
    after_shutdown = helped.score_many(queries)  # a closing library's helper refuses work
    for got in (shared, while_busy, after_shutdown):
        _same(got, expected)
