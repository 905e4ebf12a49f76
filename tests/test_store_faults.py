"""Disk faults injected through an apsw VFS: what callers are told is true.

An fsync failing after the commit point leaves the outcome unknown (and a `requestId` retry is
exact); an I/O error that makes SQLite roll back the whole transaction is reported as itself; a
store opened read-only during a brief permission fault is refused and reopened on the next call.
The VFS is made SQLite's default for the duration of one test, so the real server running in a
thread of this process writes through it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest

from tests.support import TOKEN, mcp_client, serve_in_thread, structured, text
from thoughtline.config import Settings
from thoughtline.storage.db import StorageError
from thoughtline.storage.writer import Writer
from thoughtline.web.app import create_app

pytestmark = pytest.mark.anyio


class FaultyVFS(apsw.VFS):
    """The unix VFS with switches: fail the journal's fsync after its commit-point truncation,
    fail every write, or open main databases read-only (as SQLite does when it lacks permission)."""

    def __init__(self) -> None:
        self.fail_sync_after_truncate = threading.Event()
        self.fail_writes = threading.Event()
        self.force_readonly = threading.Event()
        self.injected = 0
        super().__init__("thoughtline-faulty", "unix", makedefault=True)

    def xOpen(self, name: str | apsw.URIFilename | None, flags: list[int]) -> apsw.VFSFile:
        if self.force_readonly.is_set() and flags[0] & apsw.SQLITE_OPEN_MAIN_DB:
            flags[0] = (flags[0] & ~(apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE)) | apsw.SQLITE_OPEN_READONLY
        return FaultyFile(self, name, flags)


class FaultyFile(apsw.VFSFile):
    """One open file of `FaultyVFS`."""

    def __init__(self, vfs: FaultyVFS, name: str | apsw.URIFilename | None, flags: list[int]) -> None:
        self._vfs = vfs
        self._journal = bool(flags[0] & apsw.SQLITE_OPEN_MAIN_JOURNAL)
        self._truncated = False
        super().__init__("unix", name, flags)

    def xWrite(self, data: bytes, offset: int) -> None:
        if self._vfs.fail_writes.is_set():
            self._vfs.injected += 1
            raise apsw.IOError("injected write failure")
        self._truncated = False
        super().xWrite(data, offset)

    def xTruncate(self, newsize: int) -> None:
        super().xTruncate(newsize)
        self._truncated = newsize == 0

    def xSync(self, flags: int) -> None:
        # TRUNCATE journal: truncating the journal to zero is the commit point; the fsync after it
        # failing means the transaction is committed although COMMIT reports an error.
        if self._journal and self._truncated and self._vfs.fail_sync_after_truncate.is_set():
            self._vfs.fail_sync_after_truncate.clear()
            self._vfs.injected += 1
            raise apsw.IOError("injected fsync failure after the commit point")
        super().xSync(flags)


@pytest.fixture
def vfs() -> Iterator[FaultyVFS]:
    faulty = FaultyVFS()
    try:
        yield faulty
    finally:
        faulty.unregister()


def thought(number: int, seq: str | None = None, request_id: str | None = None) -> dict[str, Any]:
    args: dict[str, Any] = {"thought": f"step {number}", "nextThoughtNeeded": True, "thoughtNumber": number}
    args["totalThoughts"] = 10
    if seq is not None:
        args["sequenceId"] = seq
    if request_id is not None:
        args["requestId"] = request_id
    return args


async def test_an_fsync_failure_after_the_commit_point_says_the_outcome_is_unknown(
    tmp_path: Path, vfs: FaultyVFS
) -> None:
    settings = Settings(data_dir=tmp_path / "data", api_token=TOKEN, journal="truncate")
    with serve_in_thread(create_app(settings)) as running:
        async with mcp_client(running.base_url) as client:
            seq = structured(await client.call_tool("sequentialthinking", thought(1)))["sequenceId"]
            vfs.fail_sync_after_truncate.set()
            failed = await client.call_tool("sequentialthinking", thought(2, seq, "req-2"))
            assert vfs.injected == 1
            assert failed.is_error
            assert text(failed).startswith("storage_error: ")
            assert "may or may not have been stored" in text(failed)
            assert "same requestId" in text(failed)
            assert "Nothing was written" not in text(failed)
            # The thought was in fact committed; the retry returns it instead of writing it again.
            retry = structured(await client.call_tool("sequentialthinking", thought(2, seq, "req-2")))
            assert retry["thoughtNumber"] == 2
            history = structured(await client.call_tool("get_thought_history", {"sequenceId": seq}))
            assert [t["thoughtNumber"] for t in history["thoughts"]] == [1, 2]


def _make_table(conn: apsw.Connection) -> None:
    conn.execute("CREATE TABLE IF NOT EXISTS blobs (body BLOB)")
    conn.execute("PRAGMA cache_size=16")  # a small cache spills to disk inside the transaction


@pytest.mark.parametrize("journal", ["wal", "truncate"])
async def test_an_io_error_that_rolls_back_the_whole_transaction_is_reported_as_itself(
    tmp_path: Path, vfs: FaultyVFS, journal: str
) -> None:
    writer = Writer(tmp_path / "s.sqlite3", journal)  # type: ignore[arg-type]  # parametrized Literal
    writer.start(_make_table)
    try:

        def big(conn: apsw.Connection) -> None:
            vfs.fail_writes.set()  # the spill of this insert hits the disk, which fails
            try:
                conn.execute("INSERT INTO blobs VALUES (randomblob(2000000))")
            finally:
                vfs.fail_writes.clear()

        with pytest.raises(StorageError) as caught:
            await writer.submit(big)
        assert vfs.injected > 0
        assert "IOError" in str(caught.value)
        assert "SQLError" not in str(caught.value)
        assert caught.value.kind == "transient"
        # The writer is still healthy: the next write commits, and the failed one left nothing.
        await writer.submit(lambda conn: conn.execute("INSERT INTO blobs VALUES (x'01')"))
        rows = await writer.submit(lambda conn: conn.execute("SELECT count(*) FROM blobs").fetchall())
        assert rows == [(1,)]
    finally:
        writer.close()


async def test_a_store_opened_read_only_during_a_permission_fault_is_reopened_on_the_next_call(
    tmp_path: Path, vfs: FaultyVFS
) -> None:
    settings = Settings(data_dir=tmp_path / "data", api_token=TOKEN)
    with serve_in_thread(create_app(settings)) as running:
        async with mcp_client(running.base_url) as client:
            seq = structured(await client.call_tool("sequentialthinking", thought(1)))["sequenceId"]
    # A fresh start opens the existing store while its file cannot be written.
    with serve_in_thread(create_app(settings)) as running:
        async with mcp_client(running.base_url) as client:
            vfs.force_readonly.set()
            refused = await client.call_tool("sequentialthinking", thought(2, seq))
            assert refused.is_error
            assert "read-only" in text(refused)
            assert "retry shortly" in text(refused)
            vfs.force_readonly.clear()
            # The fault is over: the next call opens the store again, writable.
            again = structured(await client.call_tool("sequentialthinking", thought(2, seq)))
            assert again["thoughtHistoryLength"] == 2
