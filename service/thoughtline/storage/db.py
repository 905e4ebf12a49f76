"""SQLite connections of a user store: opening them with Thoughtline's PRAGMAs and sqlite-vec.

Owns: opening apsw connections (durability PRAGMAs, journal mode, sqlite-vec) and the one-off
`write_transaction` of the CLI and migrations. The per-store writer actor is `storage/writer.py`;
the read connections are in `storage/reads.py`. Nothing here knows what a thought is.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path

import apsw

from thoughtline.config import Journal
from thoughtline.storage.faults import StorageError, kind_of, storage_failure

BUSY_TIMEOUT_MS = 30_000

__all__ = ["StorageError", "connect", "write_transaction"]


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


def connect(path: Path, journal: Journal, *, readonly: bool = False, create: bool = True) -> apsw.Connection:
    """Open one connection to a store file with the durability PRAGMAs Thoughtline relies on.

    A read-write open that SQLite could only make read-only (it silently falls back when the file
    or its folder is not writable) is refused, so a brief permission fault is not kept for the
    life of the connection; the caller opens again on its next call.
    """
    install_sqlite_vec()
    if readonly:
        flags = apsw.SQLITE_OPEN_READONLY
    else:
        flags = apsw.SQLITE_OPEN_READWRITE | (apsw.SQLITE_OPEN_CREATE if create else 0)
    try:
        conn = apsw.Connection(str(path), flags=flags)
    except apsw.Error as exc:
        raise StorageError(f"cannot open store {path.name}: {exc}", kind_of(exc)) from exc
    if not readonly and conn.readonly("main"):
        conn.close()
        raise StorageError(
            f"store {path.name} could only be opened read-only (the file or its folder is not writable, "
            "or the disk is mounted read-only)"
        )
    try:
        _configure(conn, path, journal, readonly)
    except BaseException as exc:
        conn.close()
        raise storage_failure(exc, f"opening store {path.name}") from exc
    return conn


def _configure(conn: apsw.Connection, path: Path, journal: Journal, readonly: bool) -> None:
    # The first statements are where a file that is not a database (or a damaged header) shows.
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
