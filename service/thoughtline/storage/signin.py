"""The sign-in database: the key that signs library sessions and links, and the links already used.

A one-time link is minted by one process (`thoughtline open`) and followed in another (the
server, perhaps one of several instances on a shared volume), so both its key and the record that
it was used live in a small SQLite file, `<data_dir>/_auth/signin.sqlite3`, beside the OAuth
database. SQLite's own locking makes "claim this link" atomic across processes: the first
INSERT of a link id wins and every later one fails.
"""

from __future__ import annotations

import threading
from pathlib import Path

import apsw

from thoughtline.config import Journal
from thoughtline.storage.db import StorageError, connect, write_transaction
from thoughtline.storage.files import create_private_file, private_dir
from thoughtline.storage.migrations import Migration, migrate

SIGNIN_DIR = "_auth"
SIGNIN_FILE = "signin.sqlite3"

SCHEMA = """
CREATE TABLE secrets (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
INSERT INTO secrets(name, value) VALUES ('session_key', lower(hex(randomblob(32))));
CREATE TABLE used_links (id TEXT PRIMARY KEY, expires_at REAL NOT NULL) WITHOUT ROWID;
CREATE TABLE ended_sessions (id TEXT PRIMARY KEY, expires_at REAL NOT NULL) WITHOUT ROWID;
"""


def _schema(conn: apsw.Connection) -> None:
    conn.execute(SCHEMA)


SIGNIN_MIGRATIONS = (Migration("signin_0001_core", _schema),)


class SigninStore:
    """Typed access to the sign-in database; each call opens a short-lived connection.

    Sign-ins and sign-outs are rare, and the key is read once per process, so a connection per
    call keeps no file open and no lock held between requests.
    """

    def __init__(self, data_dir: Path, journal: Journal) -> None:
        self._path = data_dir / SIGNIN_DIR / SIGNIN_FILE
        self._journal = journal
        self._key: bytes | None = None
        self._reader: apsw.Connection | None = None
        self._lock = threading.Lock()

    def _open(self) -> apsw.Connection:
        private_dir(self._path.parent)
        create_private_file(self._path)
        conn = connect(self._path, self._journal)
        try:
            migrate(conn, SIGNIN_MIGRATIONS)
        except BaseException:
            conn.close()
            raise
        return conn

    def session_key(self) -> bytes:
        """The signing key (created with the database, never changed); cached after the first read."""
        with self._lock:
            if self._key is None:
                conn = self._open()
                try:
                    row = conn.execute("SELECT value FROM secrets WHERE name = 'session_key'").fetchone()
                finally:
                    conn.close()
                if row is None:  # the migration inserts it; a hand-edited file could lack it
                    raise StorageError("the sign-in database has no session key; delete _auth/signin.sqlite3")
                self._key = bytes.fromhex(str(row[0]))
            return self._key

    def _claim(self, table: str, item: str, expires_at: float, now: float) -> bool:
        conn = self._open()
        try:
            with write_transaction(conn):
                conn.execute(f"DELETE FROM {table} WHERE expires_at < ?", (now,))
                if conn.execute(f"SELECT 1 FROM {table} WHERE id = ?", (item,)).fetchone():
                    return False
                conn.execute(f"INSERT INTO {table}(id, expires_at) VALUES (?, ?)", (item, expires_at))
            return True
        finally:
            conn.close()

    def claim_link(self, link_id: str, expires_at: float, now: float) -> bool:
        """Record that link `link_id` was used; False when it already was (by any process)."""
        return self._claim("used_links", link_id, expires_at, now)

    def end_session(self, session_id: str, expires_at: float, now: float) -> None:
        """Record a signed-out session, so its cookie is refused even if a copy survives."""
        self._claim("ended_sessions", session_id, expires_at, now)

    def link_used(self, link_id: str) -> bool:
        """Whether link `link_id` was already claimed (a HEAD asks without claiming it)."""
        with self._lock:
            if self._reader is None:
                self._reader = self._open()
            found = self._reader.execute("SELECT 1 FROM used_links WHERE id = ?", (link_id,)).fetchone()
        return found is not None

    def session_ended(self, session_id: str) -> bool:
        """Whether `session_id` was signed out (asked on every request with a cookie: one kept connection)."""
        with self._lock:
            if self._reader is None:
                self._reader = self._open()
            found = self._reader.execute("SELECT 1 FROM ended_sessions WHERE id = ?", (session_id,)).fetchone()
        return found is not None

    def close(self) -> None:
        """Close the kept read connection."""
        with self._lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None
