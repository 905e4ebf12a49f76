"""The router from a principal to its user store, and the open store itself.

One SQLite file per user under `<data dir>/stores/`, named by a hash of the stable user key and
checked to resolve inside that directory. Inside a process each store has exactly one writer
(see `writer.Writer`); across processes SQLite's lock and busy timeout keep one writer at a time.
Stores open on first use (running migrations once) and close after sitting idle, or, beyond
`max_open` stores or when descriptors run short, least recently used first.

Creating a store is recorded (`storage/registry.py`): a recorded store whose file is missing is
reported, never silently recreated empty.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import apsw

from thoughtline import resources
from thoughtline.clock import Clock, now_ms
from thoughtline.config import Journal
from thoughtline.storage import migrations
from thoughtline.storage import search as search_store
from thoughtline.storage import thoughts as store
from thoughtline.storage.db import StorageError, connect, write_transaction
from thoughtline.storage.files import create_private_file, private_dir
from thoughtline.storage.reads import READ_POOL_SIZE, ReadPool
from thoughtline.storage.registry import (
    Created,
    StoreRegistry,
    identity_problem,
    missing_message,
    stamped_id,
)
from thoughtline.storage.writer import Writer

logger = logging.getLogger(__name__)

T = TypeVar("T")
STORE_SUFFIX = ".sqlite3"
DEFAULT_MAX_OPEN = 256
# The writer's database, WAL and shared-memory files, plus a database and WAL file per reader.
FDS_PER_STORE = 3 + 2 * READ_POOL_SIZE


def store_path(data_dir: Path, user_key: str) -> Path:
    """The file of `user_key`'s store: derived from a hash, never from the key's text."""
    if not user_key:
        raise ValueError("empty user key")
    root = (data_dir / "stores").resolve()
    digest = hashlib.sha256(f"thoughtline-store:{user_key}".encode()).hexdigest()[:40]
    path = (root / f"{digest}{STORE_SUFFIX}").resolve()
    if path.parent != root:
        raise ValueError("store path escaped the data directory")
    return path


def user_hint(user_key: str) -> str:
    """The `--user` argument naming this store on the command line."""
    return f"--user {user_key}"


@dataclass
class UserStore:
    """An open store: its single writer, its read pool, and use tracking for idle closing."""

    path: Path
    writer: Writer
    reads: ReadPool
    last_used: float = 0.0
    in_flight: int = 0
    after_commit: list[Callable[[UserStore], None]] = field(default_factory=list)

    @property
    def broken(self) -> bool:
        """Whether this store's file was deleted or replaced while open (it must be closed)."""
        return self.writer.broken is not None

    async def write(self, fn: Callable[[apsw.Connection], T]) -> T:
        """Run `fn` in a committed write transaction (group-committed with concurrent writes)."""
        self.in_flight += 1
        try:
            return await self.writer.submit(fn)
        finally:
            self.in_flight -= 1

    async def read(self, fn: Callable[[apsw.Connection], T]) -> T:
        """Run `fn` against a consistent read snapshot."""
        self.in_flight += 1
        try:
            return await self.reads.run(fn)
        finally:
            self.in_flight -= 1

    @contextlib.contextmanager
    def in_use(self) -> Iterator[UserStore]:
        """Hold the store open across several reads and writes (one tool call), so it is not evicted."""
        self.in_flight += 1
        try:
            yield self
        finally:
            self.in_flight -= 1

    def close(self) -> None:
        """Close the readers, then finish queued writes and close the writer.

        The writer closes last: the last connection to close checkpoints the WAL, and a read-only
        connection cannot, so closing readers last would leave acknowledged writes in the WAL.
        """
        self.reads.close()
        self.writer.close()


class StoreRouter:
    """Opens, hands out and closes user stores for one process."""

    def __init__(
        self,
        data_dir: Path,
        journal: Journal,
        clock: Clock,
        *,
        idle_seconds: float = 300.0,
        retention_days: int = 0,
        max_open: int = DEFAULT_MAX_OPEN,
        migration_list: tuple[migrations.Migration, ...] | None = None,
    ) -> None:
        self._data_dir = data_dir
        self._journal = journal
        self._clock = clock
        self._idle_seconds = idle_seconds
        self._retention_days = retention_days
        self._max_open = max(1, max_open)
        self._migrations = migration_list if migration_list is not None else tuple(migrations.MIGRATIONS)
        # New thoughts are keyword-indexed once per commit group (a test may stop short of that migration).
        self._keyword_batches = migrations.KEYWORD_QUEUE_MIGRATION in {m.name for m in self._migrations}
        self._registry = StoreRegistry((data_dir / "stores").resolve())
        self._open: dict[str, UserStore] = {}
        self._closed_since_trim = 0  # closes (idle or evicted) since freed memory was last returned
        self._opening: dict[str, asyncio.Lock] = {}
        self.on_open: list[Callable[[UserStore], None]] = []
        self.on_close: list[Callable[[UserStore], None]] = []

    @property
    def open_count(self) -> int:
        """How many stores this process has open."""
        return len(self._open)

    async def get(self, user_key: str) -> UserStore:
        """The open store for `user_key`, opening (and migrating) it on first use."""
        existing = self._open.get(user_key)
        if existing is not None and not existing.broken:
            existing.last_used = self._clock.now()
            return existing
        lock = self._opening.setdefault(user_key, asyncio.Lock())
        async with lock:
            existing = self._open.get(user_key)
            if existing is not None and existing.broken:
                # Closed before anything opens the path again, so its WAL never meets another file.
                del self._open[user_key]
                await self._close(existing)
                existing = None
            if existing is None:
                await self._make_room()
                path = store_path(self._data_dir, user_key)
                existing = await asyncio.to_thread(self._open_store, user_key, path)
                self._open[user_key] = existing
                for hook in self.on_open:
                    hook(existing)
            existing.last_used = self._clock.now()
            return existing

    async def _make_room(self) -> None:
        """Close least recently used idle stores while at the cap or short of descriptors."""
        while self._open:
            spare = resources.fds_to_spare()
            if len(self._open) < self._max_open and (spare is None or spare >= FDS_PER_STORE):
                return
            idle = [(s.last_used, k) for k, s in self._open.items() if not s.in_flight]
            if not idle:
                break
            _, key = min(idle)
            await self._close(self._open.pop(key))
        spare = resources.fds_to_spare()
        if spare is not None and spare < FDS_PER_STORE:
            logger.warning(
                "no descriptors to open another store (%d open); raise the open-files limit", len(self._open)
            )
            raise StorageError("the server is out of file descriptors for another store right now")

    def _open_store(self, user_key: str, path: Path) -> UserStore:
        private_dir(self._data_dir)
        private_dir(path.parent)
        recorded = self._registry.lookup(path.name)
        if recorded is not None and not path.exists():
            raise StorageError(missing_message(path.name, recorded, user_hint(user_key)), "damaged")
        if recorded is None:
            create_private_file(path)  # new, or an unrecorded store from before the registry
        writer = Writer(path, self._journal, create=False)
        if self._keyword_batches:
            writer.set_group_hooks(search_store.begin_keyword_batch, search_store.index_queued_keywords)
        writer.start(lambda conn: self._prepare(conn, path.name, recorded, user_key))
        opened = UserStore(path=path, writer=writer, reads=ReadPool(path, self._journal, guard=writer.check_file))

        def committed() -> None:
            for hook in opened.after_commit:
                hook(opened)

        writer.set_on_commit(committed)
        return opened

    def _prepare(self, conn: apsw.Connection, name: str, recorded: Created | None, user_key: str) -> None:
        problem = identity_problem(conn, name, recorded, user_hint(user_key))
        if problem is not None:
            raise StorageError(problem, "damaged")
        migrations.migrate(conn, self._migrations)
        if recorded is None:
            self._registry.record(name, stamped_id(conn))
        if self._retention_days > 0:
            cutoff = now_ms(self._clock) - self._retention_days * 86_400_000
            with write_transaction(conn):
                removed = store.delete_idle(conn, cutoff)
            if removed:
                logger.info("retention removed %d idle sequences", removed)

    async def close_idle(self) -> int:
        """Close stores unused for longer than the idle limit; returns how many closed."""
        closed = 0
        for key in list(self._open):
            candidate = self._open.get(key)
            # Checked right before each close: earlier closes awaited, and this store may have been used since.
            if (
                candidate is None
                or candidate.in_flight
                or candidate.last_used >= self._clock.now() - self._idle_seconds
            ):
                continue
            del self._open[key]
            await self._close(candidate)
            closed += 1
        if self._closed_since_trim:
            self._closed_since_trim = 0
            await asyncio.to_thread(resources.return_freed_memory)
        return closed

    async def close_all(self) -> None:
        """Close every open store (at shutdown)."""
        stores, self._open = list(self._open.values()), {}
        for opened in stores:
            await self._close(opened)

    async def _close(self, opened: UserStore) -> None:
        for hook in self.on_close:
            hook(opened)
        await asyncio.to_thread(opened.close)
        self._closed_since_trim += 1


def create_store(data_dir: Path, user_key: str, journal: Journal) -> Path:
    """Deliberately create `user_key`'s store empty and record it; refuses when a file is there."""
    path = store_path(data_dir, user_key)
    private_dir(data_dir)  # as a server opening it would: the data directory holds the auth database too
    private_dir(path.parent)
    if not create_private_file(path):
        raise StorageError(f"a store file for {user_key!r} already exists ({path.name}); nothing was changed")
    conn = connect(path, journal, create=False)
    try:
        migrations.migrate(conn)
        StoreRegistry(path.parent).record(path.name, stamped_id(conn))
    finally:
        conn.close()
    return path
