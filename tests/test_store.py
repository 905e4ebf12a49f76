"""The store layer on real SQLite files: extension loading, migrations, paths, group commit, lifecycle."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path

import apsw
import pytest

from thoughtline.config import MAX_RETENTION_DAYS
from thoughtline.domain.arguments import ThoughtInput
from thoughtline.identity import OWNER_KEY, github_user_key
from thoughtline.storage import migrations
from thoughtline.storage.db import connect
from thoughtline.storage.idempotency import Replayed
from thoughtline.storage.router import StoreRouter, store_path
from thoughtline.storage.sequence_reads import get_sequence
from thoughtline.storage.thoughts import Written, append_thought
from thoughtline.storage.writer import Writer

pytestmark = pytest.mark.anyio


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.value = now

    def now(self) -> float:
        return self.value


def test_sqlite_vec_loads_on_every_connection_through_the_apsw_hook(tmp_path: Path) -> None:
    conn = connect(tmp_path / "s.sqlite3", "wal")
    version = conn.execute("SELECT vec_version()").fetchall()[0][0]
    assert str(version).startswith("v0.1")
    conn.execute("CREATE VIRTUAL TABLE v USING vec0(e float[2])")
    conn.execute("INSERT INTO v(rowid, e) VALUES (1, '[1, 0]')")
    assert conn.execute("SELECT rowid FROM v WHERE e MATCH '[1, 0]' AND k = 1").fetchall() == [(1,)]


@pytest.mark.parametrize(("journal", "expected"), [("wal", "wal"), ("truncate", "truncate")])
def test_journal_mode_and_full_sync_are_applied(tmp_path: Path, journal: str, expected: str) -> None:
    conn = connect(tmp_path / "s.sqlite3", journal)  # type: ignore[arg-type]
    assert conn.execute("PRAGMA journal_mode").fetchall()[0][0] == expected
    assert conn.execute("PRAGMA synchronous").fetchall()[0][0] == 2  # FULL
    assert conn.execute("PRAGMA foreign_keys").fetchall()[0][0] == 1


def test_migrations_are_recorded_once_and_rerunning_changes_nothing(tmp_path: Path) -> None:
    conn = connect(tmp_path / "s.sqlite3", "wal")
    applied = migrations.migrate(conn)
    assert applied == [m.name for m in migrations.MIGRATIONS]
    assert migrations.migrate(conn) == []
    assert migrations.applied_migrations(conn) == applied


def test_a_store_from_a_newer_version_is_refused_untouched(tmp_path: Path) -> None:
    conn = connect(tmp_path / "s.sqlite3", "wal")
    migrations.migrate(conn)
    conn.execute("INSERT INTO schema_migrations(name, applied_at) VALUES ('9999_future', 'x')")
    before = conn.execute("SELECT count(*) FROM schema_migrations").fetchall()
    with pytest.raises(migrations.SchemaTooNewError, match="newer version"):
        migrations.migrate(conn, (*migrations.MIGRATIONS, migrations.Migration("0099_next", lambda c: None)))
    assert conn.execute("SELECT count(*) FROM schema_migrations").fetchall() == before


def test_store_paths_are_hashed_distinct_and_inside_the_data_dir(tmp_path: Path) -> None:
    owner = store_path(tmp_path, OWNER_KEY)
    other = store_path(tmp_path, github_user_key(42))
    hostile = store_path(tmp_path, "../../etc/passwd")
    assert len({owner, other, hostile}) == 3
    for path in (owner, other, hostile):
        assert path.parent == (tmp_path / "stores").resolve()
        assert "passwd" not in path.name
        assert "42" not in path.name


def thought(number: int, seq: str | None = None) -> ThoughtInput:
    return ThoughtInput(f"t{number}", True, number, 100, sequence_id=seq)


async def test_queued_writes_share_one_commit_and_a_failure_rolls_back_alone(tmp_path: Path) -> None:
    writer = Writer(tmp_path / "s.sqlite3", "wal")
    writer.start(migrations.migrate)
    try:
        first = await writer.submit(lambda c: append_thought(c, thought(1), 1, "seq_" + "1" * 32))
        assert isinstance(first, Written)
        seq = first.sequence_id
        entered, gate = threading.Event(), threading.Event()

        def hold(conn: apsw.Connection) -> bool:
            entered.set()
            return gate.wait(10)

        blocker = asyncio.ensure_future(writer.submit(hold))
        assert await asyncio.to_thread(entered.wait, 10)  # the writer thread is now busy inside `hold`
        commits_before = writer.stats.commits

        def job(n: int) -> Callable[[apsw.Connection], Written | Replayed]:
            return lambda c: append_thought(c, thought(n, seq), n, "unused")

        good = [asyncio.ensure_future(writer.submit(job(n))) for n in range(2, 12)]
        bad = asyncio.ensure_future(writer.submit(lambda c: append_thought(c, thought(99, "seq_" + "9" * 32), 0, "x")))
        gate.set()
        await blocker
        results = await asyncio.gather(*good)
        with pytest.raises(Exception, match="sequence_not_found"):
            await bad
        assert [r.count for r in results if isinstance(r, Written)] == list(range(2, 12))
        # The blocker's transaction plus one more carried all eleven queued calls.
        assert writer.stats.commits - commits_before <= 2
        assert writer.stats.largest_group >= 11
    finally:
        writer.close()
    conn = apsw.Connection(str(tmp_path / "s.sqlite3"))
    assert conn.execute("SELECT count(*) FROM thoughts").fetchall()[0][0] == 11


async def test_a_lone_write_that_fails_after_writing_leaves_nothing_and_the_next_write_commits(tmp_path: Path) -> None:
    writer = Writer(tmp_path / "s.sqlite3", "wal")
    writer.start(migrations.migrate)
    try:
        first = await writer.submit(lambda c: append_thought(c, thought(1), 1, "seq_" + "1" * 32))
        assert isinstance(first, Written)
        seq = first.sequence_id

        def half_done(conn: apsw.Connection) -> None:
            append_thought(conn, thought(2, seq), 2, "unused")  # written, then the call fails
            raise RuntimeError("refused after writing")

        with pytest.raises(RuntimeError, match="refused after writing"):
            await writer.submit(half_done)
        again = await writer.submit(lambda c: append_thought(c, thought(2, seq), 3, "unused"))
        assert isinstance(again, Written)
        assert again.count == 2
    finally:
        writer.close()
    conn = apsw.Connection(str(tmp_path / "s.sqlite3"))
    assert conn.execute("SELECT count(*) FROM thoughts").fetchall()[0][0] == 2


async def test_idle_stores_close_and_reopen_on_demand(tmp_path: Path) -> None:
    clock = FakeClock()
    router = StoreRouter(tmp_path, "wal", clock, idle_seconds=60)
    opened = await router.get(OWNER_KEY)
    await opened.write(lambda c: append_thought(c, thought(1), 1, "seq_" + "2" * 32))
    assert await router.close_idle() == 0
    clock.value += 61
    assert await router.close_idle() == 1
    assert router.open_count == 0
    again = await router.get(OWNER_KEY)
    found = await again.read(lambda c: get_sequence(c, "seq_" + "2" * 32))
    assert found is not None
    await router.close_all()


async def test_the_longest_retention_settings_allow_opens_a_store_and_keeps_its_thoughts(tmp_path: Path) -> None:
    # Its cutoff is bound into SQLite as a 64-bit integer; 999999999999 days overflowed it on every open.
    clock = FakeClock()
    router = StoreRouter(tmp_path, "wal", clock, retention_days=MAX_RETENTION_DAYS)
    opened = await router.get(OWNER_KEY)
    await opened.write(lambda c: append_thought(c, thought(1), int(clock.now() * 1000), "seq_" + "4" * 32))
    await router.close_all()
    clock.value += 365 * 86_400
    fresh = StoreRouter(tmp_path, "wal", clock, retention_days=MAX_RETENTION_DAYS)
    reopened = await fresh.get(OWNER_KEY)
    assert await reopened.read(lambda c: get_sequence(c, "seq_" + "4" * 32)) is not None
    await fresh.close_all()


async def test_retention_deletes_sequences_idle_longer_than_the_limit(tmp_path: Path) -> None:
    clock = FakeClock()
    router = StoreRouter(tmp_path, "wal", clock, retention_days=1)
    opened = await router.get(OWNER_KEY)
    ms = int(clock.now() * 1000)
    await opened.write(lambda c: append_thought(c, thought(1), ms, "seq_" + "3" * 32))
    await router.close_all()
    clock.value += 2 * 86_400
    fresh = StoreRouter(tmp_path, "wal", clock, retention_days=1)
    reopened = await fresh.get(OWNER_KEY)
    assert await reopened.read(lambda c: get_sequence(c, "seq_" + "3" * 32)) is None
    await fresh.close_all()
