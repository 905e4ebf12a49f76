"""SQLite connections and the single writer of a user store.

Owns: opening apsw connections with Thoughtline's PRAGMAs and sqlite-vec, the per-store writer
actor (one thread, one connection, an in-process queue, group commit), and the pool of read
connections. Nothing here knows what a thought is; callers pass functions that take a connection.

Why a thread per store: apsw calls block, and one writer thread gives a natural queue in front of
SQLite's single write lock. While one group commit waits for its fsync, new writes pile up in the
queue and the next transaction takes them all, so N concurrent callers share one fsync.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import os
import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

import anyio
import apsw

from thoughtline.config import Journal

logger = logging.getLogger(__name__)

T = TypeVar("T")

BUSY_TIMEOUT_MS = 30_000
MAX_GROUP = 256
READ_POOL_SIZE = 4


class StorageError(Exception):
    """The database could not do what was asked (locked too long, disk full, corrupt, …)."""


def sqlite_vec_path() -> str:
    """Where the sqlite-vec extension ships inside its wheel.

    Found without importing `sqlite_vec`, whose `__init__` imports numpy (~0.1 s of every cold start).
    """
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        raise StorageError("the sqlite-vec package is not installed; reinstall Thoughtline's dependencies")
    return os.path.join(next(iter(spec.submodule_search_locations)), "vec0")


def _load_sqlite_vec(conn: apsw.Connection) -> None:
    conn.enable_load_extension(True)
    conn.load_extension(sqlite_vec_path())
    conn.enable_load_extension(False)


def install_sqlite_vec() -> None:
    """Register sqlite-vec with apsw so every new connection loads it (idempotent).

    apsw's hook list is process-global by design; registering the same function once keeps it a
    constant, not state that grows.
    """
    if _load_sqlite_vec not in apsw.connection_hooks:
        apsw.connection_hooks.append(_load_sqlite_vec)


def connect(path: Path, journal: Journal, *, readonly: bool = False) -> apsw.Connection:
    """Open one connection to a store file with the durability PRAGMAs Thoughtline relies on."""
    install_sqlite_vec()
    flags = apsw.SQLITE_OPEN_READONLY if readonly else apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
    try:
        conn = apsw.Connection(str(path), flags=flags)
    except apsw.Error as exc:
        raise StorageError(f"cannot open store {path.name}: {exc}") from exc
    conn.set_busy_timeout(BUSY_TIMEOUT_MS)
    conn.execute("PRAGMA foreign_keys=ON")
    if not readonly:
        # WAL is unsafe on network file systems (no shared memory across hosts); TRUNCATE is the
        # rollback journal that works there.
        mode = "wal" if journal == "wal" else "truncate"
        got = conn.execute(f"PRAGMA journal_mode={mode}").fetchall()[0][0]
        if str(got).lower() != mode:
            raise StorageError(f"store {path.name} refused journal_mode={mode} (got {got})")
    conn.execute("PRAGMA synchronous=FULL")
    return conn


@contextlib.contextmanager
def write_transaction(conn: apsw.Connection) -> Iterator[apsw.Connection]:
    """`BEGIN IMMEDIATE` … `COMMIT`, or `ROLLBACK` if the block raises (for one-off writers: CLI, migrations)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


@dataclass
class _Job(Generic[T]):
    fn: Callable[[apsw.Connection], T]
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[T]


def _settle(job: _Job[Any], result: Any, error: BaseException | None) -> None:
    def apply() -> None:
        if job.future.done():  # the caller went away (cancelled); nothing to tell
            return
        if error is not None:
            job.future.set_exception(error)
        else:
            job.future.set_result(result)

    # A closed loop (shutdown) raises RuntimeError: then nobody is waiting for the answer.
    with contextlib.suppress(RuntimeError):
        job.loop.call_soon_threadsafe(apply)


@dataclass
class WriterStats:
    """Counters for benchmarks and tests: how many transactions carried how many writes."""

    commits: int = 0
    writes: int = 0
    largest_group: int = 0


class Writer:
    """The single writer of one store: a thread that owns the only write connection.

    `submit(fn)` queues `fn(conn)`; the thread runs queued functions in one `BEGIN IMMEDIATE`
    transaction, each inside its own savepoint so one failing call rolls back alone, then COMMITs
    and only then resolves the callers' futures. A write is acknowledged only after COMMIT.
    """

    def __init__(self, path: Path, journal: Journal) -> None:
        self._path = path
        self._journal = journal
        self._on_commit: Callable[[], None] | None = None
        self._queue: queue.SimpleQueue[_Job[Any] | None] = queue.SimpleQueue()
        self._ready = threading.Event()
        self._open_error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=f"writer-{path.stem[:8]}", daemon=True)
        self._closed = False
        self.stats = WriterStats()

    def set_on_commit(self, hook: Callable[[], None]) -> None:
        """Call `hook` in the writer thread after every successful commit (e.g. to wake an indexer)."""
        self._on_commit = hook

    def start(self, prepare: Callable[[apsw.Connection], object]) -> None:
        """Open the connection in the writer thread and run `prepare` (migrations) there, once."""
        self._prepare = prepare
        self._thread.start()
        self._ready.wait()
        if self._open_error is not None:
            raise self._open_error

    async def submit(self, fn: Callable[[apsw.Connection], T]) -> T:
        """Run `fn` inside a committed write transaction and return its result."""
        if self._closed:
            raise StorageError("store is closed")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._queue.put(_Job(fn, loop, future))
        return await future

    def close(self) -> None:
        """Finish queued writes, then stop the thread and close the connection."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        self._thread.join()

    def _run(self) -> None:
        try:
            conn = connect(self._path, self._journal)
            self._prepare(conn)
        except BaseException as exc:
            self._open_error = exc
            self._ready.set()
            return
        self._ready.set()
        try:
            stopping = False
            while not stopping:
                first = self._queue.get()
                if first is None:
                    break
                group: list[_Job[Any]] = [first]
                while len(group) < MAX_GROUP:
                    try:
                        nxt = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if nxt is None:
                        stopping = True
                        break
                    group.append(nxt)
                self._commit_group(conn, group)
        finally:
            conn.close()

    def _commit_group(self, conn: apsw.Connection, group: list[_Job[Any]]) -> None:
        outcomes: list[tuple[_Job[Any], Any, BaseException | None]] = []
        try:
            conn.execute("BEGIN IMMEDIATE")
        except apsw.Error as exc:
            failure = StorageError(f"could not start a write transaction: {type(exc).__name__}")
            for job in group:
                _settle(job, None, failure)
            return
        try:
            for job in group:
                conn.execute("SAVEPOINT job")
                try:
                    result = job.fn(conn)
                except BaseException as exc:
                    conn.execute("ROLLBACK TO job")
                    conn.execute("RELEASE job")
                    outcomes.append((job, None, exc))
                else:
                    conn.execute("RELEASE job")
                    outcomes.append((job, result, None))
            conn.execute("COMMIT")
        except apsw.Error as exc:
            if not conn.get_autocommit():
                conn.execute("ROLLBACK")
            failure = StorageError(f"the write could not be committed: {type(exc).__name__}")
            for job in group:
                _settle(job, None, failure)
            return
        self.stats.commits += 1
        self.stats.writes += len(group)
        self.stats.largest_group = max(self.stats.largest_group, len(group))
        for job, result, error in outcomes:
            _settle(job, result, error)
        if self._on_commit is not None:
            self._on_commit()


@dataclass
class ReadPool:
    """A few read-only connections; each read runs in a worker thread inside one read transaction."""

    path: Path
    journal: Journal
    _idle: list[apsw.Connection] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _limiter: anyio.CapacityLimiter = field(default_factory=lambda: anyio.CapacityLimiter(READ_POOL_SIZE))

    async def run(self, fn: Callable[[apsw.Connection], T]) -> T:
        """Run `fn` against a consistent snapshot of the store."""
        return await anyio.to_thread.run_sync(self._run_sync, fn, limiter=self._limiter)

    def _run_sync(self, fn: Callable[[apsw.Connection], T]) -> T:
        with self._lock:
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            conn = connect(self.path, self.journal, readonly=True)
        try:
            conn.execute("BEGIN")
            try:
                return fn(conn)
            finally:
                conn.execute("COMMIT")
        except apsw.Error as exc:
            raise StorageError(f"the read failed: {type(exc).__name__}") from exc
        finally:
            with self._lock:
                self._idle.append(conn)

    def close(self) -> None:
        """Close every idle connection."""
        with self._lock:
            for conn in self._idle:
                conn.close()
            self._idle.clear()
