"""The store's term statistics cache for proposals: exact at every snapshot, and cheap after the first lookup."""

from __future__ import annotations

import gc
import itertools
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

from thoughtline.clock import SystemClock
from thoughtline.domain.arguments import ThoughtInput
from thoughtline.library.term_cache import TermCache, TermCaches
from thoughtline.storage import migrations
from thoughtline.storage.db import connect
from thoughtline.storage.router import StoreRouter
from thoughtline.storage.thoughts import Written, append_thought, delete_sequence
from thoughtline.storage.threads import term_statistics, terms

_IDS = itertools.count(1)
WORDS = ["pgbouncer", "pool", "vacuum", "index", "hose", "leak", "garden"]


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[apsw.Connection]:
    c = connect(tmp_path / "s.sqlite3", "wal")
    migrations.migrate(c)
    yield c
    c.close()


def write(conn: apsw.Connection, body: str, seq: str | None = None, number: int = 1) -> str:
    """Store one thought: on `seq`, or as the first thought of a new sequence."""
    made = next(_IDS)
    inp = ThoughtInput(body, True, number, 10, sequence_id=seq)
    with conn:
        done = append_thought(conn, inp, made, f"seq_{made:032x}", continue_open=False)
    assert isinstance(done, Written)
    return done.sequence_id


def wanted(conn: apsw.Connection) -> set[str]:
    return {t for w in WORDS for t in terms(conn, w)}


def test_cached_statistics_equal_a_fresh_lookup_through_writes_and_deletes(conn: apsw.Connection) -> None:
    cache = TermCache()
    seq = write(conn, "pgbouncer pool exhausted under load")
    assert cache.statistics(conn, wanted(conn)) == term_statistics(conn, wanted(conn))
    write(conn, "the pool again, and a vacuum that never ran", seq, 2)
    write(conn, "pgbouncer pool pool index")
    assert cache.statistics(conn, wanted(conn)) == term_statistics(conn, wanted(conn))
    with conn:
        delete_sequence(conn, seq)
    assert cache.statistics(conn, wanted(conn)) == term_statistics(conn, wanted(conn))
    write(conn, "a garden hose leak, pool of water")
    assert cache.statistics(conn, wanted(conn)) == term_statistics(conn, wanted(conn))


def test_a_write_after_the_first_lookup_costs_no_vocabulary_lookup(conn: apsw.Connection) -> None:
    cache = TermCache()
    seq = write(conn, "pgbouncer pool exhausted")
    cache.statistics(conn, wanted(conn))
    looked = cache.lookups
    write(conn, "pgbouncer again, the pool and a hose", seq, 2)
    got = cache.statistics(conn, wanted(conn))
    assert cache.lookups == looked  # counted from the new thought's own body
    assert got.frequency[terms(conn, "pgbouncer")[0]] == 2
    assert got == term_statistics(conn, wanted(conn))


def test_a_reader_on_an_older_snapshot_gets_that_snapshots_statistics(conn: apsw.Connection, tmp_path: Path) -> None:
    cache = TermCache()
    seq = write(conn, "pgbouncer pool exhausted")
    old = connect(tmp_path / "s.sqlite3", "wal")
    try:
        old.execute("BEGIN")
        then = term_statistics(old, wanted(old))  # pins the older snapshot
        write(conn, "pgbouncer pool again", seq, 2)
        assert cache.statistics(conn, wanted(conn)) == term_statistics(conn, wanted(conn))
        assert cache.statistics(old, wanted(old)) == then
        assert cache.statistics(conn, wanted(conn)) == term_statistics(conn, wanted(conn))
        old.execute("COMMIT")
    finally:
        old.close()


@pytest.mark.anyio
async def test_a_library_keeps_one_term_cache_per_open_store_and_forgets_it_when_the_store_goes(
    tmp_path: Path,
) -> None:
    router = StoreRouter(tmp_path, "wal", SystemClock())
    caches = TermCaches()
    try:
        first = await router.get("alice")
        second = await router.get("bob")
        assert caches.for_store(first) is caches.for_store(first)
        assert caches.for_store(second) is not caches.for_store(first)
        assert len(caches) == 2
    finally:
        await router.close_all()
    del first, second
    gc.collect()
    assert len(caches) == 0
