"""Backups: a clean stop leaves everything in the main file, and `thoughtline backup` copies
consistent stores while the server keeps writing."""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import apsw
import pytest

from tests.support import TOKEN, mcp_client, start_child, stop_child, structured, text
from thoughtline.identity import OWNER_KEY
from thoughtline.storage.router import store_path

pytestmark = pytest.mark.anyio


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("THOUGHTLINE_", "MCP_API_TOKEN"))}
    return subprocess.run(
        [sys.executable, "-m", "thoughtline", *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def thought(number: int, seq: str | None) -> dict[str, Any]:
    args: dict[str, Any] = {"thought": f"step {number}", "nextThoughtNeeded": True, "thoughtNumber": number}
    args["totalThoughts"] = 1000
    if seq is not None:
        args["sequenceId"] = seq
    return args


def count_thoughts(path: Path) -> int:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        found = conn.execute("SELECT count(*) FROM thoughts").fetchall()[0][0]
    finally:
        conn.close()
    assert isinstance(found, int)
    return found


async def write_sequences(base_url: str, writers: int, per_writer: int) -> int:
    """`writers` clients each write a sequence of `per_writer` thoughts; returns how many were acknowledged."""

    async def one() -> int:
        seq: str | None = None
        async with mcp_client(base_url, TOKEN) as client:
            for number in range(1, per_writer + 1):
                seq = structured(await client.call_tool("sequentialthinking", thought(number, seq)))["sequenceId"]
                if number % 25 == 0:  # reads keep read connections open until the stop
                    await client.call_tool("get_thought_history", {"sequenceId": seq, "limit": 5})
        return per_writer

    return sum(await asyncio.gather(*(one() for _ in range(writers))))


async def test_a_clean_stop_leaves_every_acknowledged_thought_in_the_main_file(tmp_path: Path) -> None:
    child = start_child(tmp_path / "data")
    try:
        acknowledged = await write_sequences(child.base_url, writers=4, per_writer=100)
    finally:
        stop_child(child)  # SIGTERM, then wait
    assert "Application shutdown complete" in child.log()  # a clean stop, not a kill
    source = store_path(child.data_dir, OWNER_KEY)
    copy = tmp_path / "copy.sqlite3"
    shutil.copyfile(source, copy)  # the main file alone, as "stop, then copy the .sqlite3" does
    assert count_thoughts(copy) == acknowledged


async def test_backup_copies_consistent_stores_while_the_server_writes(tmp_path: Path) -> None:
    child = start_child(tmp_path / "data")
    dest = tmp_path / "backup"
    try:
        before = await write_sequences(child.base_url, writers=2, per_writer=50)
        writing = asyncio.create_task(write_sequences(child.base_url, writers=2, per_writer=50))
        made = await asyncio.to_thread(cli, "backup", str(dest), "--data-dir", str(child.data_dir))
        during = await writing
    finally:
        stop_child(child)
    assert made.returncode == 0, made.stderr
    assert "1 store(s) backed up" in made.stdout
    assert_backup_holds(dest, child.data_dir, before, before + during)


def assert_backup_holds(dest: Path, data_dir: Path, at_least: int, at_most: int) -> None:
    """The backup is a healthy, private data directory holding a consistent snapshot."""
    copy = store_path(dest, OWNER_KEY)
    assert at_least <= count_thoughts(copy) <= at_most
    checked = cli("check", "--data-dir", str(dest))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert stat.S_IMODE(copy.stat().st_mode) == 0o600
    assert stat.S_IMODE(copy.parent.stat().st_mode) == 0o700
    assert not Path(f"{copy}-wal").exists()
    # A backup never overwrites: the same destination again is refused and left as it was.
    size = copy.stat().st_size
    again = cli("backup", str(dest), "--data-dir", str(data_dir))
    assert again.returncode == 1
    assert "not an empty folder" in again.stderr
    assert copy.stat().st_size == size


async def test_a_backup_moved_over_a_running_store_is_served_after_one_refused_call(tmp_path: Path) -> None:
    child = start_child(tmp_path / "data")
    dest = tmp_path / "backup"
    path = store_path(child.data_dir, OWNER_KEY)
    try:
        async with mcp_client(child.base_url, TOKEN) as client:
            seq: str | None = None
            for number in range(1, 11):
                seq = structured(await client.call_tool("sequentialthinking", thought(number, seq)))["sequenceId"]
            made = await asyncio.to_thread(cli, "backup", str(dest), "--data-dir", str(child.data_dir))
            assert made.returncode == 0, made.stderr
            for number in range(11, 16):  # written after the backup: the restore gives them up
                structured(await client.call_tool("sequentialthinking", thought(number, seq)))
            os.replace(store_path(dest, OWNER_KEY), path)
            refused = await client.call_tool("sequentialthinking", thought(16, seq))
            assert refused.is_error
            assert "was replaced while the server had it open" in text(refused)
            # The same store (same store id) is accepted again, intact: the old WAL was set aside.
            history = structured(await client.call_tool("get_thought_history", {"sequenceId": seq}))
            assert [t["thoughtNumber"] for t in history["thoughts"]] == list(range(1, 11))
            structured(await client.call_tool("sequentialthinking", thought(11, seq)))
    finally:
        stop_child(child)
    assert cli("check", "--data-dir", str(child.data_dir)).returncode == 0
