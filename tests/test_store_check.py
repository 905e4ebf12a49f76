"""`thoughtline check` and the deep health check on damaged stores: every store named, every
problem reported, a non-zero exit, never a traceback, never a 500, never "retry shortly"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.support import TOKEN, mcp_client, serve_in_thread, text
from thoughtline.config import Settings
from thoughtline.identity import OWNER_KEY
from thoughtline.storage.router import store_path
from thoughtline.web.app import create_app

PAGE = 4096


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("THOUGHTLINE_", "MCP_API_TOKEN"))}
    return subprocess.run(
        [sys.executable, "-m", "thoughtline", *args],
        capture_output=True,
        text=True,
        env=env,
        input=stdin,
        timeout=120,
        check=False,
    )


def records(thoughts: int) -> str:
    """An export of one sequence with `thoughts` long thoughts: a store of many pages."""
    seq = {
        "type": "sequence",
        "id": 1,
        "public_id": "seq_" + "5" * 32,
        "title": "t",
        "status": "active",
        "total_thoughts": thoughts,
        "last_thought_number": thoughts,
        "thought_count": thoughts,
        "parent_public_id": None,
        "kind": None,
        "created_at": 1,
        "updated_at": 1,
    }
    rows = [
        {
            "type": "thought",
            "id": n,
            "sequence_id": 1,
            "position": n,
            "branch": None,
            "number": n,
            "total": thoughts,
            "next_needed": 1,
            "body": f"thought {n} " + "words " * 150,
            "is_revision": 0,
            "revises_number": None,
            "revises_position": None,
            "needs_more": None,
            "flags": 0,
            "created_at": n,
        }
        for n in range(1, thoughts + 1)
    ]
    return "\n".join(json.dumps(r) for r in [seq, *rows, {"type": "proposal_ids", "issued": 0}])


def make_store(data: Path, user: str) -> Path:
    made = cli("import", "--user", user, "--data-dir", str(data), "-", stdin=records(200))
    assert made.returncode == 0, made.stderr
    path = store_path(data, user)
    assert not Path(f"{path}-wal").exists()  # closed cleanly: everything is in the main file
    return path


def test_check_names_every_damaged_store_and_exits_non_zero_without_a_traceback(tmp_path: Path) -> None:
    data = tmp_path / "data"
    healthy = make_store(data, "github:1")
    flipped = make_store(data, "github:2")
    halved = make_store(data, "github:3")
    not_a_db = make_store(data, "github:4")
    replaced = make_store(data, "github:5")
    with open(flipped, "r+b") as handle:  # a page of the thoughts b-tree overwritten with garbage
        handle.seek(PAGE * (os.path.getsize(flipped) // PAGE // 2))
        handle.write(b"\xa5" * PAGE)
    os.truncate(halved, os.path.getsize(halved) // 2)
    not_a_db.write_bytes(b"this is a text file now\n" * 100)
    os.replace(make_store(data, "github:6"), replaced)  # another store renamed over it
    result = cli("check", "--data-dir", str(data))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr + result.stdout
    lines = {line.split(": ", 1)[0]: line for line in result.stdout.splitlines() if ": " in line}
    assert lines[healthy.name] == f"{healthy.name}: ok"
    for bad in (flipped, halved, not_a_db):
        assert bad.name in lines, result.stdout
        assert not lines[bad.name].endswith(": ok")
    assert "different store" in lines[replaced.name]
    missing = store_path(data, "github:6")
    assert "is missing" in lines[missing.name]
    assert "6 store(s) checked, 5 with problems" in result.stdout


def test_check_refuses_a_data_directory_that_does_not_exist(tmp_path: Path) -> None:
    result = cli("check", "--data-dir", str(tmp_path / "typo"))
    assert result.returncode != 0
    assert f"no data directory at {tmp_path / 'typo'}" in result.stderr
    assert "store(s) checked" not in result.stdout


@pytest.mark.anyio
async def test_a_corrupt_store_answers_deep_health_and_tool_calls_with_a_clear_error(tmp_path: Path) -> None:
    data = tmp_path / "data"
    path = make_store(data, OWNER_KEY)
    path.write_bytes(b"\x00garbage" * 1000)
    with serve_in_thread(create_app(Settings(data_dir=data, api_token=TOKEN))) as running:
        async with httpx.AsyncClient(base_url=running.base_url) as http:
            deep = await http.get("/healthz?deep=1", headers={"Authorization": f"Bearer {TOKEN}"})
            shallow = await http.get("/healthz")
        assert deep.status_code == 503
        body = deep.json()
        assert body["ok"] is False
        assert body["error"] == "storage_error"
        assert "retry shortly" not in body["message"]
        assert "thoughtline check" in body["message"]
        assert shallow.status_code == 200
        async with mcp_client(running.base_url) as client:
            args = {"thought": "t", "nextThoughtNeeded": True, "thoughtNumber": 1, "totalThoughts": 1}
            result = await client.call_tool("sequentialthinking", args)
        assert result.is_error
        assert text(result).startswith("storage_error: ")
        assert "retry shortly" not in text(result)
        assert "retrying will not help" in text(result)


def test_backup_of_a_damaged_store_is_refused_and_leaves_no_copy_that_looks_good(tmp_path: Path) -> None:
    data = tmp_path / "data"
    make_store(data, "github:1")
    damaged = make_store(data, "github:2")
    with open(damaged, "r+b") as handle:  # a page of the thoughts b-tree overwritten with garbage
        handle.seek(PAGE * (os.path.getsize(damaged) // PAGE // 2))
        handle.write(b"\xa5" * PAGE)
    dest = tmp_path / "copy"
    result = cli("backup", str(dest), "--data-dir", str(data))
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    assert f"{damaged.name} is damaged" in result.stderr, result.stderr
    assert "thoughtline check" in result.stderr
    assert "nothing was backed up" in result.stderr
    assert not list(dest.rglob("*.sqlite3*"))
    damaged.write_bytes(b"this is a text file now\n" * 100)  # not a database at all
    result = cli("backup", str(tmp_path / "again"), "--data-dir", str(data))
    assert result.returncode != 0
    assert f"opening store {damaged.name} failed: NotADBError; nothing was backed up" in result.stderr
    assert not list((tmp_path / "again").rglob("*.sqlite3*"))
    # One healthy store is still backed up on its own.
    alone = cli("backup", str(tmp_path / "one"), "--user", "github:1", "--data-dir", str(data))
    assert alone.returncode == 0, alone.stderr
    assert cli("check", "--data-dir", str(tmp_path / "one")).returncode == 0
