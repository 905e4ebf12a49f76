"""A store file deleted or replaced under a running server: refused loudly, never recreated empty,
nothing acknowledged into a file that is gone; and store files stay private whatever the umask."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest

from tests.support import ChildServer, mcp_client, start_child, stop_child, structured, text
from thoughtline.clock import SystemClock
from thoughtline.identity import OWNER_KEY
from thoughtline.storage import migrations
from thoughtline.storage.db import StorageError, connect
from thoughtline.storage.registry import StoreRegistry
from thoughtline.storage.router import StoreRouter, create_store, store_path

pytestmark = pytest.mark.anyio


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("THOUGHTLINE_", "MCP_API_TOKEN"))}
    return subprocess.run(
        [sys.executable, "-m", "thoughtline", *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def thought(number: int, seq: str | None = None) -> dict[str, Any]:
    args: dict[str, Any] = {"thought": f"step {number}", "nextThoughtNeeded": True, "thoughtNumber": number}
    args["totalThoughts"] = 100
    if seq is not None:
        args["sequenceId"] = seq
    return args


@pytest.fixture
def child(tmp_path: Path) -> Iterator[ChildServer]:
    running = start_child(tmp_path / "data")
    try:
        yield running
    finally:
        stop_child(running)


def thoughts_in(path: Path) -> int:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        count = conn.execute("SELECT count(*) FROM thoughts").fetchall()[0][0]
        assert isinstance(count, int)
        return count
    finally:
        conn.close()


async def test_a_deleted_store_file_is_refused_and_never_recreated_empty(child: ChildServer) -> None:
    path = store_path(child.data_dir, OWNER_KEY)
    async with mcp_client(child.base_url) as client:
        seq = structured(await client.call_tool("sequentialthinking", thought(1)))["sequenceId"]
        path.unlink()  # what `rm` under a running server does; the -wal and -shm stay
        refused = await client.call_tool("sequentialthinking", thought(2, seq))
        assert refused.is_error
        assert text(refused).startswith("storage_error: ")
        assert "was deleted while the server had it open" in text(refused)
        # Later calls, reads included, say what happened and what to do, and create nothing.
        for _ in range(3):
            again = await client.call_tool("sequentialthinking", thought(2, seq))
            assert again.is_error
            assert "is missing" in text(again)
            assert "restore it from a backup" in text(again)
            assert "thoughtline new-store --user owner" in text(again)
            assert "retry shortly" not in text(again)
        read = await client.call_tool("get_thought_history", {"sequenceId": seq})
        assert read.is_error
        assert "is missing" in text(read)
        assert not path.exists()
    checked = cli("check", "--data-dir", str(child.data_dir))
    assert checked.returncode == 1
    assert f"{path.name}: the store file {path.name}" in checked.stdout
    assert "is missing" in checked.stdout
    assert "Traceback" not in checked.stderr
    # Starting it empty is a deliberate act of the operator, after which writes work again.
    started = cli("new-store", "--user", OWNER_KEY, "--data-dir", str(child.data_dir))
    assert started.returncode == 0, started.stderr
    async with mcp_client(child.base_url) as client:
        fresh = structured(await client.call_tool("sequentialthinking", thought(1)))
        assert fresh["thoughtHistoryLength"] == 1
    assert cli("new-store", "--user", OWNER_KEY, "--data-dir", str(child.data_dir)).returncode == 1


async def test_a_store_file_replaced_by_another_store_is_refused_and_left_intact(child: ChildServer) -> None:
    path = store_path(child.data_dir, OWNER_KEY)
    other = store_path(child.data_dir, "github:7")
    async with mcp_client(child.base_url) as client:
        seq = structured(await client.call_tool("sequentialthinking", thought(1)))["sequenceId"]
        made = cli("new-store", "--user", "github:7", "--data-dir", str(child.data_dir))
        assert made.returncode == 0, made.stderr
        os.replace(other, path)  # another store renamed over the owner's
        acknowledged = 0
        for number in range(2, 6):
            result = await client.call_tool("sequentialthinking", thought(number, seq))
            if not result.is_error:
                acknowledged += 1
                continue
            assert text(result).startswith("storage_error: ")
            assert "replaced" in text(result) or "different store" in text(result)
            assert "retry shortly" not in text(result)
        assert acknowledged == 0
    checked = cli("check", "--data-dir", str(child.data_dir))
    assert checked.returncode == 1
    assert "different store" in checked.stdout
    assert "Traceback" not in checked.stderr
    stop_child(child)
    # The file at the path is still the other store, undamaged: the old WAL was never applied to it.
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.close()
    assert thoughts_in(path) == 0


async def test_store_files_are_private_whatever_the_umask(tmp_path: Path) -> None:
    previous = os.umask(0o022)
    try:
        running = start_child(tmp_path / "data")
    finally:
        os.umask(previous)
    try:
        async with mcp_client(running.base_url) as client:
            structured(await client.call_tool("sequentialthinking", thought(1)))
        path = store_path(running.data_dir, OWNER_KEY)
        family = [path, Path(f"{path}-wal"), Path(f"{path}-shm"), path.parent / "created.tsv"]
        assert all(p.exists() for p in family)
        for member in family:
            assert stat.S_IMODE(member.stat().st_mode) == 0o600, member.name
        for folder in (path.parent, running.data_dir):
            assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    finally:
        stop_child(running)


def test_a_store_created_by_a_command_has_a_private_data_directory_whatever_the_umask(tmp_path: Path) -> None:
    previous = os.umask(0o022)
    try:
        path = create_store(tmp_path / "data", OWNER_KEY, "wal")  # what `new-store` and `import` run
    finally:
        os.umask(previous)
    for folder in (path.parent, tmp_path / "data"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


async def test_a_store_from_before_the_record_of_created_stores_is_adopted_then_protected(tmp_path: Path) -> None:
    data = tmp_path / "data"
    path = store_path(data, OWNER_KEY)
    path.parent.mkdir(parents=True)
    conn = connect(path, "wal")  # written by a Thoughtline that kept no record of created stores
    migrations.migrate(conn)
    conn.close()
    router = StoreRouter(data, "wal", SystemClock())
    opened = await router.get(OWNER_KEY)
    assert await opened.read(lambda c: migrations.schema_version(c)) == len(migrations.MIGRATIONS)
    await router.close_all()
    assert StoreRegistry(path.parent).lookup(path.name) is not None
    path.unlink()
    with pytest.raises(StorageError, match="is missing"):
        await router.get(OWNER_KEY)
    assert not path.exists()


def test_a_damaged_record_of_created_stores_skips_the_lines_it_cannot_read(tmp_path: Path) -> None:
    registry = StoreRegistry(tmp_path)
    # A non-ASCII digit passes str.isdigit() but not int(); a line cut short is a torn append.
    registry.path.write_text("a.sqlite3\tid-a\t\u00b2\nb.sqlite3\tid-b\t12\nc.sqlite3\tid-c\n")
    assert set(registry.entries()) == {"b.sqlite3"}
    assert registry.lookup("b.sqlite3") is not None
