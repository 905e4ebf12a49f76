"""The router from a principal to its user store, and the open store itself.

One SQLite file per user under `<data dir>/stores/`, named by a hash of the stable user key and
checked to resolve inside that directory. Inside a process each store has exactly one writer
(see `db.Writer`); across processes SQLite's lock and busy timeout keep one writer at a time.
Stores open on first use (running migrations once) and close after sitting idle.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import apsw

from thoughtline.clock import Clock, now_ms
from thoughtline.config import Journal
from thoughtline.storage import migrations, transfer
from thoughtline.storage import thoughts as store
from thoughtline.storage.db import ReadPool, StorageError, Writer, connect, write_transaction

logger = logging.getLogger(__name__)

T = TypeVar("T")
STORE_SUFFIX = ".sqlite3"


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


@dataclass
class UserStore:
    """An open store: its single writer, its read pool, and use tracking for idle closing."""

    path: Path
    writer: Writer
    reads: ReadPool
    last_used: float = 0.0
    in_flight: int = 0
    after_commit: list[Callable[[UserStore], None]] = field(default_factory=list)

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

    def close(self) -> None:
        """Finish queued writes and close every connection."""
        self.writer.close()
        self.reads.close()


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
        migration_list: tuple[migrations.Migration, ...] | None = None,
    ) -> None:
        self._data_dir = data_dir
        self._journal = journal
        self._clock = clock
        self._idle_seconds = idle_seconds
        self._retention_days = retention_days
        self._migrations = migration_list if migration_list is not None else tuple(migrations.MIGRATIONS)
        self._open: dict[str, UserStore] = {}
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
        if existing is not None:
            existing.last_used = self._clock.now()
            return existing
        lock = self._opening.setdefault(user_key, asyncio.Lock())
        async with lock:
            existing = self._open.get(user_key)
            if existing is None:
                existing = await asyncio.to_thread(self._open_store, store_path(self._data_dir, user_key))
                self._open[user_key] = existing
                for hook in self.on_open:
                    hook(existing)
            existing.last_used = self._clock.now()
            return existing

    def _open_store(self, path: Path) -> UserStore:
        path.parent.mkdir(parents=True, exist_ok=True)
        writer = Writer(path, self._journal)
        writer.start(self._prepare)
        opened = UserStore(path=path, writer=writer, reads=ReadPool(path, self._journal))

        def committed() -> None:
            for hook in opened.after_commit:
                hook(opened)

        writer.set_on_commit(committed)
        return opened

    def _prepare(self, conn: apsw.Connection) -> None:
        migrations.migrate(conn, self._migrations)
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


def check_store(path: Path, journal: Journal, known: tuple[migrations.Migration, ...]) -> list[str]:
    """Integrity and schema findings for one store file (empty when healthy)."""
    try:
        conn = connect(path, journal, readonly=True)
    except StorageError as exc:
        return [str(exc)]
    try:
        problems = transfer.integrity_problems(conn)
        recorded = migrations.applied_migrations(conn)
        names = [m.name for m in known]
        newer = [n for n in recorded if n not in names]
        missing = [n for n in names if n not in recorded]
        if newer:
            problems.append(f"written by a newer Thoughtline (unknown migrations: {', '.join(newer)})")
        if missing:
            problems.append(f"schema not current (pending migrations: {', '.join(missing)}); open it once to migrate")
        return problems
    finally:
        conn.close()
