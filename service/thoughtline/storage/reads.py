"""The read side of a store: a few read-only connections, each read in one snapshot transaction."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import anyio
import apsw

from thoughtline.config import Journal
from thoughtline.storage.db import StorageError, connect
from thoughtline.storage.faults import storage_failure

T = TypeVar("T")

READ_POOL_SIZE = 4


@dataclass
class ReadPool:
    """A few read-only connections; each read runs in a worker thread inside one read transaction.

    `guard` is called before each read (the writer's file check), so a deleted or replaced store
    file is refused for reads too. After `close`, connections in use are closed when they return.
    """

    path: Path
    journal: Journal
    guard: Callable[[], None] = lambda: None
    _idle: list[apsw.Connection] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _limiter: anyio.CapacityLimiter = field(default_factory=lambda: anyio.CapacityLimiter(READ_POOL_SIZE))
    _closed: bool = False

    async def run(self, fn: Callable[[apsw.Connection], T]) -> T:
        """Run `fn` against a consistent snapshot of the store."""
        return await anyio.to_thread.run_sync(self._run_sync, fn, limiter=self._limiter)

    def _run_sync(self, fn: Callable[[apsw.Connection], T]) -> T:
        self.guard()
        with self._lock:
            if self._closed:
                raise StorageError("store is closed")
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
            raise storage_failure(exc, "the read") from exc
        finally:
            with self._lock:
                if self._closed:
                    conn.close()
                else:
                    self._idle.append(conn)

    def close(self) -> None:
        """Close every idle connection; connections in use close when their read ends."""
        with self._lock:
            self._closed = True
            for conn in self._idle:
                conn.close()
            self._idle.clear()
