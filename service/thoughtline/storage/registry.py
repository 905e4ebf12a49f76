"""The record of created stores: which store files a data directory has created, and their ids.

Creating a user's store is a deliberate, recorded event. Without this record a store file that
was deleted under a running server would be silently recreated empty on the next call, and
everything acknowledged into it would be gone without a word. With it, a recorded store whose
file is missing is reported ("restore it from a backup"), never replaced; and a file whose
`store_id` differs from the recorded one is another store renamed over it, not a restored backup.

The record is an append-only text file, `stores/created.tsv`, one `name<TAB>store_id<TAB>ms`
line per creation, fsynced with its directory before the store is used. The last line for a
name wins (`thoughtline new-store` appends a fresh id). Appends of one short line are atomic
enough across processes: a duplicate line is harmless and a torn last line is ignored.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import apsw

from thoughtline.storage.files import FILE_MODE, fsync_dir

REGISTRY_FILE = "created.tsv"
UNSTAMPED = "-"  # a store whose schema has no store_id (custom migration lists in tests)


@dataclass(frozen=True)
class Created:
    """One recorded creation: the store file's name, its id, and when (ms since the epoch)."""

    name: str
    store_id: str
    created_ms: int


def stamped_id(conn: apsw.Connection) -> str | None:
    """The store_id stamped into this store (migration 0008), or None before it is stamped."""
    has_meta = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchall()
    if not has_meta:
        return None
    found = conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchall()
    return str(found[0][0]) if found else None


class StoreRegistry:
    """Reads and appends the record of created stores in one `stores/` directory."""

    def __init__(self, stores_dir: Path) -> None:
        self._dir = stores_dir
        self.path = stores_dir / REGISTRY_FILE
        # Parsed once per size: the file only grows, so an unchanged size means unchanged content.
        self._parsed: tuple[int, dict[str, Created]] = (-1, {})

    def entries(self) -> dict[str, Created]:
        """Every recorded store by file name (the latest record of each)."""
        try:
            if self._parsed[0] == self.path.stat().st_size:
                return self._parsed[1]
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        found = self._parse(raw.decode("utf-8", errors="replace"))
        self._parsed = (len(raw), found)
        return found

    @staticmethod
    def _parse(raw: str) -> dict[str, Created]:
        found: dict[str, Created] = {}
        for line in raw.split("\n")[:-1]:  # the text after the last newline is a torn write
            parts = line.split("\t")
            if len(parts) == 3 and parts[2].isascii() and parts[2].isdigit():
                found[parts[0]] = Created(parts[0], parts[1], int(parts[2]))
        return found

    def lookup(self, name: str) -> Created | None:
        """The latest record of the store file `name`, or None if this directory never created it."""
        return self.entries().get(name)

    def record(self, name: str, store_id: str | None) -> None:
        """Append a creation record (now) and make it durable before returning."""
        self.keep(Created(name, store_id or UNSTAMPED, int(time.time() * 1000)))

    def keep(self, created: Created) -> None:
        """Append `created` as it is (a backup keeps the original creation records)."""
        line = f"{created.name}\t{created.store_id}\t{created.created_ms}\n"
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, FILE_MODE)
        try:
            os.fchmod(fd, FILE_MODE)
            os.write(fd, line.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        # The directory entry of the registry and of the new store file itself.
        fsync_dir(self._dir)


def missing_message(name: str, created: Created, user_hint: str) -> str:
    """What to say when a recorded store's file is gone."""
    when = time.strftime("%Y-%m-%d", time.gmtime(created.created_ms / 1000))
    return (
        f"the store file {name} (created {when}) is missing: it was deleted or moved while recorded as "
        "existing, and no empty store was created in its place. The operator should restore it from a "
        f"backup, or run `thoughtline new-store {user_hint}` to start it empty"
    )


def identity_problem(conn: apsw.Connection, name: str, recorded: Created | None, user_hint: str) -> str | None:
    """Why the file open on `conn` is not the store recorded as `name`, or None when it is.

    The one identity check: the server refuses to open such a store, so `import`, `backup` and
    `check` hold a store to it too (a command that wrote into it would report a success no
    caller could ever see).
    """
    if recorded is None or recorded.store_id == UNSTAMPED or stamped_id(conn) == recorded.store_id:
        return None
    if not conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall():
        return emptied_message(name, user_hint)
    return replaced_message(name)


def emptied_message(name: str, user_hint: str) -> str:
    """What to say when a recorded store's file holds nothing (truncated or emptied)."""
    return (
        f"the store file {name} is empty (no tables: it was truncated or emptied), so everything recorded in it "
        "is gone from this file. The operator should restore it from a backup; or, to start it empty, delete "
        f"the file and run `thoughtline new-store {user_hint}`"
    )


def replaced_message(name: str) -> str:
    """What to say when the file at a store's path is a different store."""
    return (
        f"the store file {name} is a different store than the one created there (another store's file was "
        "copied or renamed over it). The operator should put the right file back or restore it from a backup"
    )
