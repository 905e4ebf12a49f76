"""The `thoughtline` command: token, serve's generated token, export/import round trip, check."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import apsw
import pytest

from tests.support import TOKEN, mcp_client, serve_in_thread, start_child, stop_child, structured
from thoughtline.cli import own_command
from thoughtline.config import Settings
from thoughtline.identity import OWNER_KEY
from thoughtline.library.embed import MiniLMEmbedder
from thoughtline.storage import embedder_ids
from thoughtline.storage.db import connect
from thoughtline.storage.router import store_path
from thoughtline.web.app import create_app

# The record every export ends with (crafted files below end with it too, or import refuses them as cut short).
END = '{"type": "proposal_ids", "issued": 0}\n'


def cli(*args: str, env: dict[str, str] | None = None, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("THOUGHTLINE_", "MCP_API_TOKEN"))}
    return subprocess.run(
        [sys.executable, "-m", "thoughtline", *args],
        capture_output=True,
        text=True,
        env={**clean, **(env or {})},
        input=stdin,
        timeout=120,
        check=False,
    )


def test_token_prints_a_new_strong_token_each_time() -> None:
    first, second = cli("token").stdout.strip(), cli("token").stdout.strip()
    assert len(first) >= 43
    assert first != second


@pytest.mark.anyio
async def test_export_then_import_round_trips_a_store(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with serve_in_thread(create_app(Settings(data_dir=data, api_token=TOKEN))) as running:
        async with mcp_client(running.base_url) as client:
            args = {"thought": "root ünïcode", "nextThoughtNeeded": True, "thoughtNumber": 1, "totalThoughts": 3}
            seq = structured(await client.call_tool("sequentialthinking", args))["sequenceId"]
            await client.call_tool(
                "sequentialthinking",
                {**args, "sequenceId": seq, "thoughtNumber": 2, "branchId": "b", "branchFromThought": 1},
            )
            await client.call_tool(
                "sequentialthinking",
                {
                    **args,
                    "sequenceId": seq,
                    "thoughtNumber": 3,
                    "branchId": "c",
                    "branchFromThought": 2,
                    "branchFromBranchId": "b",
                    "isRevision": True,
                    "revisesThought": 1,
                    "nextThoughtNeeded": False,
                },
            )
            original = structured(await client.call_tool("get_thought_history", {"sequenceId": seq}))
    env = {"THOUGHTLINE_DATA_DIR": str(data)}
    exported = cli("export", env=env)
    assert exported.returncode == 0, exported.stderr
    records = [json.loads(line) for line in exported.stdout.splitlines()]
    assert [r["type"] for r in records].count("thought") == 3
    other = tmp_path / "other"
    imported = cli("import", "-", env={"THOUGHTLINE_DATA_DIR": str(other)}, stdin=exported.stdout)
    assert imported.returncode == 0, imported.stderr
    assert "imported 1 sequence, 2 branches, 3 thoughts" in imported.stdout
    again = cli("import", "-", env={"THOUGHTLINE_DATA_DIR": str(other)}, stdin=exported.stdout)
    assert again.returncode != 0  # the sequence exists already: refused, nothing half-written
    with serve_in_thread(create_app(Settings(data_dir=other, api_token=TOKEN))) as running:
        async with mcp_client(running.base_url) as client:
            copy = structured(await client.call_tool("get_thought_history", {"sequenceId": seq}))
    assert copy == original
    assert cli("export", env={"THOUGHTLINE_DATA_DIR": str(other)}).stdout.count('"type": "thought"') == 3


def test_check_reports_healthy_stores_and_refuses_newer_ones(tmp_path: Path) -> None:
    data = tmp_path / "data"
    path = store_path(data, OWNER_KEY)
    made = cli("new-store", env={"THOUGHTLINE_DATA_DIR": str(data)})
    assert made.returncode == 0, made.stderr
    ok = cli("check", env={"THOUGHTLINE_DATA_DIR": str(data)})
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "1 store(s) checked, 0 with problems" in ok.stdout
    conn = apsw.Connection(str(path))
    conn.execute("INSERT INTO schema_migrations(name, applied_at) VALUES ('9999_from_the_future', 'x')")
    conn.close()
    bad = cli("check", env={"THOUGHTLINE_DATA_DIR": str(data)})
    assert bad.returncode == 1
    assert "newer Thoughtline" in bad.stdout


def test_settings_errors_exit_with_a_clear_message() -> None:
    result = cli("check", env={"THOUGHTLINE_JOURNAL": "delete"})
    assert result.returncode == 2
    assert "THOUGHTLINE_JOURNAL" in result.stderr


@pytest.mark.anyio
async def test_serve_without_a_token_generates_one_keeps_it_and_prints_how_to_connect(tmp_path: Path) -> None:
    data = tmp_path / "data"
    child = start_child(data, token=None)
    try:
        token_file = data / ".mcp_api_token"
        token = token_file.read_text().strip()
        assert len(token) >= 32
        assert oct(token_file.stat().st_mode & 0o777) == "0o600"
        assert token not in child.log()  # output to a file (a log) names the file, never the token
        assert f"generated a bearer token and stored it in {token_file.resolve()}" in child.log()
        assert f"claude mcp add --scope user --transport http thoughtline {child.base_url}/mcp-compat" in child.log()
        assert f"$(cat {token_file.resolve()})" in child.log()
        async with mcp_client(child.base_url, token) as client:
            assert (await client.list_tools()).tools
    finally:
        stop_child(child)
    again = start_child(data, token=None)
    try:
        assert (data / ".mcp_api_token").read_text().strip() == token
        assert token not in again.log()  # later starts name the file instead of printing the secret
        assert f"using the bearer token stored in {token_file.resolve()}" in again.log()
        async with mcp_client(again.base_url, token) as client:
            assert (await client.list_tools()).tools
    finally:
        stop_child(again)


def test_reindex_embeds_every_thought_of_every_store(tmp_path: Path) -> None:
    data = tmp_path / "data"
    records = "\n".join(
        json.dumps(r)
        for r in [
            {
                "type": "sequence",
                "id": 1,
                "public_id": "seq_" + "4" * 32,
                "title": "t",
                "status": "active",
                "total_thoughts": 2,
                "last_thought_number": 2,
                "thought_count": 2,
                "parent_public_id": None,
                "kind": None,
                "created_at": 1,
                "updated_at": 1,
            },
            *[
                {
                    "type": "thought",
                    "id": n,
                    "sequence_id": 1,
                    "position": n,
                    "branch": None,
                    "number": n,
                    "total": 2,
                    "next_needed": 1,
                    "body": f"cache warming step {n}",
                    "is_revision": 0,
                    "revises_number": None,
                    "revises_position": None,
                    "needs_more": None,
                    "flags": 0,
                    "created_at": 1,
                }
                for n in (1, 2)
            ],
        ]
    )
    env = {"THOUGHTLINE_DATA_DIR": str(data)}
    assert cli("import", "-", env=env, stdin=records + "\n" + END).returncode == 0
    result = cli("reindex", "--progress", env=env)
    assert result.returncode == 0, result.stderr
    model = MiniLMEmbedder().model_id
    assert f"keyword index rebuilt, 2 thoughts embedded with model {model}" in result.stdout
    assert "1 store(s) reindexed" in result.stdout
    assert "embedding" in result.stderr  # the progress bar
    conn = connect(store_path(data, OWNER_KEY), "wal", readonly=True)
    assert embedder_ids.recorded_embedder(conn) == model
    assert conn.execute("SELECT count(*) FROM vector_queue").fetchall()[0][0] == 0
    assert int(conn.execute("SELECT count(*) FROM thought_vectors").fetchall()[0][0] or 0) >= 2
    assert cli("reindex", "--user", "github:1", env=env).returncode == 1


def test_printed_commands_name_a_venv_script_by_its_path_when_it_is_not_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / ".venv" / "bin" / "thoughtline"
    script.parent.mkdir(parents=True)
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert own_command(str(script)) == str(script)
    monkeypatch.setenv("PATH", f"{script.parent}:/usr/bin:/bin")
    assert own_command(str(script)) == "thoughtline"
    assert own_command("/somewhere/thoughtline/__main__.py") == f"{shlex.quote(sys.executable)} -m thoughtline"
