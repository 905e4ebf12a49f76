"""The single writer of a user store: one thread, one connection, an in-process queue, group commit.

Why a thread per store: apsw calls block, and one writer thread gives a natural queue in front of
SQLite's single write lock. While one group commit waits for its fsync, new writes pile up in the
queue and the next transaction takes them all, so N concurrent callers share one fsync. Running a
group's jobs and answering their callers is `storage/write_jobs.py`'s; opening connections, `db.py`'s.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import apsw

from thoughtline.config import Journal
from thoughtline.storage.db import connect
from thoughtline.storage.faults import StorageError, storage_failure
from thoughtline.storage.files import FileIdentity, remove_quietly, set_aside
from thoughtline.storage.write_jobs import Job, rollback, run_jobs, settle

logger = logging.getLogger(__name__)

T = TypeVar("T")

CLOSE_CHECKPOINT_TIMEOUT_MS = 2_000  # at close, wait this long at most for other processes' readers
MAX_GROUP = 256


@dataclass
class WriterStats:
    """Counters for benchmarks and tests: how many transactions carried how many writes, and the
    writer thread's CPU time for them (`cpu_ns`: the one thread every write of a store passes, so
    `cpu_ns / writes` bounds the store's write rate)."""

    commits: int = 0
    writes: int = 0
    largest_group: int = 0
    cpu_ns: int = 0


class Writer:
    """The single writer of one store: a thread that owns the only write connection.

    `submit(fn)` queues `fn(conn)`; the thread runs queued functions in one `BEGIN IMMEDIATE`
    transaction, each inside its own savepoint so one failing call rolls back alone, then COMMITs
    and only then resolves the callers' futures. A write is acknowledged only after COMMIT.

    Group hooks (`set_group_hooks`) run once per group of two or more writes, inside its
    transaction, before its jobs and before its COMMIT: derived data that is cheaper to bring up
    to date for a whole group than for each write (the keyword index) is deferred by the first
    and finished by the second, so every committed snapshot holds it whole.

    Before each COMMIT the writer checks that the path still names the file it opened: with WAL,
    a deleted or replaced store file otherwise keeps taking acknowledged writes into an unlinked
    file. A writer that finds its file gone refuses every later write (`broken` says why).
    """

    def __init__(self, path: Path, journal: Journal, *, create: bool = True) -> None:
        self._path = path
        self._journal = journal
        self._create = create
        self._on_commit: Callable[[], None] | None = None
        self._group_hooks: tuple[Callable[[apsw.Connection], object], Callable[[apsw.Connection], object]] | None = None
        self._queue: queue.SimpleQueue[Job[Any] | None] = queue.SimpleQueue()
        self._ready = threading.Event()
        self._open_error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=f"writer-{path.stem[:8]}", daemon=True)
        self._closed = False
        self.identity: FileIdentity | None = None
        self.broken: StorageError | None = None
        self._wal_path = path.with_name(path.name + "-wal")
        self._stale_wal: FileIdentity | None = None
        self.stats = WriterStats()

    def set_on_commit(self, hook: Callable[[], None]) -> None:
        """Call `hook` in the writer thread after every successful commit (e.g. to wake an indexer)."""
        self._on_commit = hook

    def set_group_hooks(
        self, opening: Callable[[apsw.Connection], object], closing: Callable[[apsw.Connection], object]
    ) -> None:
        """Call `opening(conn)` right after the BEGIN of each group of two or more writes and
        `closing(conn)` after its jobs, before COMMIT (writer thread). An exception from either
        fails every write of the group."""
        self._group_hooks = (opening, closing)

    def start(self, prepare: Callable[[apsw.Connection], object]) -> None:
        """Open the connection in the writer thread and run `prepare` (migrations) there, once."""
        self._prepare = prepare
        self._thread.start()
        self._ready.wait()
        if self._open_error is not None:
            raise self._open_error

    async def submit(self, fn: Callable[[apsw.Connection], T]) -> T:
        """Run `fn` inside a committed write transaction and return its result."""
        if self.broken is not None:
            raise self.broken
        if self._closed:
            raise StorageError("store is closed")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._queue.put(Job(fn, loop, future))
        return await future

    def close(self) -> None:
        """Finish queued writes, then stop the thread and close the connection."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        self._thread.join()

    def check_file(self) -> None:
        """Raise (and stay broken) if the store's path no longer names the file this writer opened."""
        if self.broken is not None:
            raise self.broken
        if self.identity is None:
            return
        change = self.identity.change_at(self._path)
        if change is not None:
            self._stale_wal = FileIdentity.of(self._wal_path)  # still ours: our connection holds it
            self.broken = StorageError(
                f"the store file {self._path.name} was {change} while the server had it open; "
                "the server stopped using it so nothing is written into a file that is no longer there",
                "damaged",
            )
            logger.error("store file %s was %s while open; writes refused", self._path.name, change)
            raise self.broken

    def _run(self) -> None:
        try:
            conn = connect(self._path, self._journal, create=self._create)
        except BaseException as exc:
            self._open_error = storage_failure(exc, f"opening store {self._path.name}")
            self._ready.set()
            return
        try:
            self.identity = FileIdentity.of(self._path)
            self._prepare(conn)
        except BaseException as exc:
            conn.close()  # a store that fails to open on every call must not leak descriptors
            self._open_error = storage_failure(exc, "preparing the store") if isinstance(exc, apsw.Error) else exc
            self._ready.set()
            return
        self._ready.set()
        try:
            stopping = False
            while not stopping:
                first = self._queue.get()
                if first is None:
                    break
                group: list[Job[Any]] = [first]
                while len(group) < MAX_GROUP:
                    try:
                        nxt = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if nxt is None:
                        stopping = True
                        break
                    group.append(nxt)
                started = time.thread_time_ns()
                self._commit_group(conn, group)
                self.stats.cpu_ns += time.thread_time_ns() - started
        finally:
            self._checkpoint(conn)
            conn.close()
            self._set_aside_stale_wal()

    def _set_aside_stale_wal(self) -> None:
        if self.broken is None:
            return
        try:
            kept = set_aside(self._wal_path, self._stale_wal, f".orphaned-{int(time.time())}")
            remove_quietly(self._path.with_name(self._path.name + "-shm"))
        except OSError as exc:
            logger.error("could not set aside the WAL of vanished store %s: %s", self._path.name, type(exc).__name__)
            return
        if kept is not None:
            logger.error("set aside the WAL of vanished store %s as %s", self._path.name, kept.name)

    def _checkpoint(self, conn: apsw.Connection) -> None:
        # A clean stop leaves everything in the main file, so copying the .sqlite3 alone after a
        # stop backs up all that was acknowledged. Never into a file that is no longer the store's.
        if self._journal != "wal" or self.broken is not None:
            return
        conn.set_busy_timeout(CLOSE_CHECKPOINT_TIMEOUT_MS)
        try:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except apsw.Error as exc:
            logger.warning("checkpoint at close of %s failed: %s", self._path.name, type(exc).__name__)

    def _fail(self, group: list[Job[Any]], failure: StorageError) -> None:
        settle([(job, None, failure) for job in group])

    def _commit_group(self, conn: apsw.Connection, group: list[Job[Any]]) -> None:
        try:
            self.check_file()
            conn.execute("BEGIN IMMEDIATE")
        except (StorageError, apsw.Error) as exc:
            self._fail(group, storage_failure(exc, "starting a write transaction"))
            return
        # A lone write gains nothing from deferring: the hooks' statements cost more than they
        # save (callgrind: +12% instructions per append alone, -13% in groups of 16).
        hooks = self._group_hooks if len(group) > 1 else None
        try:
            if hooks is not None:
                hooks[0](conn)
            outcomes = run_jobs(conn, group)
            if outcomes is None:  # a job alone failed: rolled back and answered already
                return
            if hooks is not None:
                hooks[1](conn)
            self.check_file()
        except BaseException as exc:
            rollback(conn)
            self._fail(group, storage_failure(exc, "the write"))
            return
        try:
            conn.execute("COMMIT")
        except apsw.Error as exc:
            # An error from COMMIT may come after the commit point (the journal's fsync after it
            # was truncated, the WAL's fsync): the write may be stored. Say so, never "nothing".
            rollback(conn)
            logger.warning("commit of %s failed: %s", self._path.name, type(exc).__name__)
            self._fail(group, StorageError(f"committing failed: {type(exc).__name__}", "unknown_outcome"))
            return
        self.stats.commits += 1
        self.stats.writes += len(group)
        self.stats.largest_group = max(self.stats.largest_group, len(group))
        settle(outcomes)
        if self._on_commit is not None:
            self._on_commit()
