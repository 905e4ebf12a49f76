"""A new user's command-line mistakes end in one clear message and a non-zero exit, never a traceback.

Each test makes the mistake for real (a real process, real files, a real busy port) and checks the
message names the problem and the fix, and that nothing was created or changed.
"""

from __future__ import annotations

import json
import os
import pty
import select
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import TOKEN, ChildServer, free_port, stop_child, wait_healthy
from tests.test_cli import END, cli
from tests.test_store_check import records
from thoughtline.identity import OWNER_KEY
from thoughtline.storage.db import connect
from thoughtline.storage.router import store_path


def refused(result: subprocess.CompletedProcess[str], *phrases: str) -> None:
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr, result.stderr
    assert result.stderr.startswith("error: "), result.stderr
    for phrase in phrases:
        assert phrase in result.stderr


def test_importing_a_file_that_is_not_json_is_refused_and_creates_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    refused(
        cli("import", str(notes), env={"THOUGHTLINE_DATA_DIR": str(data)}),
        "line 1 is not JSON",
        "thoughtline export",
    )
    assert not data.exists()


def test_importing_a_missing_file_is_refused_and_creates_no_stores_folder(tmp_path: Path) -> None:
    data = tmp_path / "data"
    refused(
        cli("import", str(tmp_path / "typo.jsonl"), env={"THOUGHTLINE_DATA_DIR": str(data)}),
        "cannot read",
        "No such file",
    )
    assert not data.exists()


def test_importing_json_that_is_not_an_export_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    refused(cli("import", "-", env={"THOUGHTLINE_DATA_DIR": str(data)}, stdin="[1, 2]\n"), "not an export record")
    refused(
        cli("import", "-", env={"THOUGHTLINE_DATA_DIR": str(data)}, stdin='{"type": "thought"}\n'),
        "line 1: thought record: lacks 'sequence_id'",
        "Nothing was imported",
    )


def test_importing_the_same_export_twice_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    export = "\n".join(
        json.dumps(r)
        for r in [
            {
                "type": "sequence",
                "id": 1,
                "public_id": "seq_" + "5" * 32,
                "title": "t",
                "status": "active",
                "total_thoughts": 1,
                "last_thought_number": 1,
                "thought_count": 1,
                "created_at": 1,
                "updated_at": 1,
            },
            {
                "type": "thought",
                "id": 1,
                "sequence_id": 1,
                "position": 1,
                "branch": None,
                "number": 1,
                "total": 1,
                "next_needed": 1,
                "body": "x",
                "created_at": 1,
            },
        ]
    )
    env = {"THOUGHTLINE_DATA_DIR": str(data)}
    first = cli("import", "-", env=env, stdin=export + "\n" + END)
    assert first.returncode == 0, first.stderr
    refused(
        cli("import", "-", env=env, stdin=export + "\n" + END),
        f"sequence seq_{'5' * 32} is already in this store (was this export imported before?)",
        "Nothing was imported",
    )
    conn = connect(store_path(data, OWNER_KEY), "wal", readonly=True)
    assert conn.execute("SELECT count(*) FROM thoughts").fetchall() == [(1,)]
    conn.close()


@pytest.mark.parametrize("command", ["import", "export", "reindex"])
def test_a_user_key_no_caller_maps_to_is_refused_with_the_keys_that_work(tmp_path: Path, command: str) -> None:
    data = tmp_path / "data"
    extra = ["-"] if command == "import" else []
    refused(
        cli(command, "--user", "alice", *extra, env={"THOUGHTLINE_DATA_DIR": str(data)}, stdin="\n"),
        "--user 'alice' is not a store key",
        "'owner'",
        "'github:<numeric account id>'",
    )
    assert not data.exists()


def test_serve_with_a_set_but_short_token_refuses_to_start(tmp_path: Path) -> None:
    result = cli(
        "serve", "--port", str(free_port()), env={"MCP_API_TOKEN": "short", "THOUGHTLINE_DATA_DIR": str(tmp_path)}
    )
    refused(result, "MCP_API_TOKEN is 5 characters; it needs at least 32", "thoughtline token")
    assert "Thoughtline is starting" not in result.stdout


def test_serve_on_a_busy_port_says_so_before_any_connect_instructions(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = cli("serve", "--port", str(port), env={"MCP_API_TOKEN": TOKEN, "THOUGHTLINE_DATA_DIR": str(tmp_path)})
    refused(result, f"port {port} is in use; set PORT or --port")
    assert "claude mcp add" not in result.stdout


def test_serve_with_a_relative_custom_data_dir_prints_a_command_that_works_from_anywhere(tmp_path: Path) -> None:
    workdir = tmp_path / "somewhere"
    workdir.mkdir()
    port = free_port()
    log_path = tmp_path / "serve.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("THOUGHTLINE_", "MCP_API_TOKEN"))}
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "thoughtline", "serve", "--port", str(port), "--data-dir", "my data"],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**env, "PYTHONUNBUFFERED": "1"},
            cwd=workdir,
        )
    child = ChildServer(process, port, "", workdir / "my data", log_path)
    try:
        wait_healthy(child)
    finally:
        stop_child(child)
    token_file = (workdir / "my data" / ".mcp_api_token").resolve()
    assert token_file.exists()
    assert f"--scope user --transport http thoughtline http://127.0.0.1:{port}/mcp-compat" in child.log()
    assert f"\"Authorization: Bearer $(cat '{token_file}')\"" in child.log()  # quoted: the path has a space


def test_a_generated_token_is_shown_once_on_a_terminal(tmp_path: Path) -> None:
    data = tmp_path / "data"
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("THOUGHTLINE_", "MCP_API_TOKEN"))}
    main, replica = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "thoughtline", "serve", "--port", str(port), "--data-dir", str(data)],
        stdout=replica,
        stderr=replica,
        env={**env, "PYTHONUNBUFFERED": "1"},
    )
    os.close(replica)
    seen = b""
    try:
        while b"Claude Code:" not in seen:
            ready, _, _ = select.select([main], [], [], 60)
            assert ready, f"serve printed nothing for 60 s: {seen!r}"
            seen += os.read(main, 4096)
    finally:
        process.terminate()
        process.wait(timeout=30)
        os.close(main)
    token = (data / ".mcp_api_token").read_text().strip()
    assert f"shown this once: {token}" in seen.decode()


@pytest.mark.parametrize("command", ["export", "reindex"])
def test_a_store_that_does_not_exist_yet_is_refused_with_when_it_appears(tmp_path: Path, command: str) -> None:
    data = tmp_path / "data"
    data.mkdir()
    refused(
        cli(command, "--user", "owner", env={"THOUGHTLINE_DATA_DIR": str(data)}),
        "no store for user 'owner'",
        "first thought",
        "--data-dir",
    )
    assert list(data.iterdir()) == []


def test_exporting_into_a_pipe_its_reader_closes_early_ends_quietly(tmp_path: Path) -> None:
    data = tmp_path / "data"
    count = 400  # about 150 KB of JSON Lines: more than a pipe holds, so the writer meets the closed end
    sequence = {"type": "sequence", "id": 1, "public_id": "seq_" + "6" * 32, "title": "t", "status": "active"}
    sequence |= {"total_thoughts": count, "last_thought_number": count, "thought_count": count}
    records = [{**sequence, "created_at": 1, "updated_at": 1}]
    for n in range(1, count + 1):
        thought = {"type": "thought", "id": n, "sequence_id": 1, "position": n, "branch": None, "number": n}
        records.append({**thought, "total": count, "next_needed": 1, "body": "a long step " * 30, "created_at": n})
    env = {"THOUGHTLINE_DATA_DIR": str(data)}
    loaded = cli("import", "-", env=env, stdin="\n".join(json.dumps(r) for r in records) + "\n" + END)
    assert loaded.returncode == 0, loaded.stderr
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("THOUGHTLINE_", "MCP_API_TOKEN"))}
    with subprocess.Popen(
        [sys.executable, "-m", "thoughtline", "export"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**clean, **env},
    ) as export:
        assert export.stdout is not None
        assert export.stderr is not None
        assert json.loads(export.stdout.readline())["type"] == "sequence"
        export.stdout.close()  # what `thoughtline export | head -1` does
        stderr = export.stderr.read().decode()
        assert export.wait(timeout=120) == 0, stderr
    assert stderr == ""


@pytest.mark.parametrize("command", ["new-store", "import", "backup", "reindex"])
def test_a_data_dir_that_is_a_file_is_refused_in_one_line(tmp_path: Path, command: str) -> None:
    source, exported = tmp_path / "source", tmp_path / "export.jsonl"
    assert cli("new-store", "--data-dir", str(source)).returncode == 0
    assert cli("export", "--data-dir", str(source), "-o", str(exported)).returncode == 0
    afile = tmp_path / "data"
    afile.write_text("not a folder\n")
    extra = {"new-store": [], "import": [str(exported)], "backup": [str(tmp_path / "copy")], "reindex": []}[command]
    refused(cli(command, *extra, "--data-dir", str(afile)), str(afile))
    assert afile.read_text() == "not a folder\n"


def test_an_export_to_a_full_disk_is_refused_in_one_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert cli("new-store", "--data-dir", str(data)).returncode == 0
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            [sys.executable, "-m", "thoughtline", "export", "--data-dir", str(data)],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env={k: v for k, v in os.environ.items() if not k.startswith(("THOUGHTLINE_", "MCP_API_TOKEN"))},
            timeout=120,
        )
    refused(result, "No space left on device")


@pytest.mark.parametrize("port", ["99999", "0", "http"])
def test_serve_on_a_port_outside_the_range_is_refused(tmp_path: Path, port: str) -> None:
    result = cli("serve", "--port", port, env={"THOUGHTLINE_DATA_DIR": str(tmp_path / "data")})
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "from 1 to 65535" in result.stderr
    result = cli("serve", env={"THOUGHTLINE_DATA_DIR": str(tmp_path / "data"), "PORT": "99999"})
    refused(result, "PORT=99999 is above 65535")


def test_serve_with_a_retention_no_store_could_open_with_is_refused_before_it_starts(tmp_path: Path) -> None:
    data = tmp_path / "data"
    result = cli("serve", env={"THOUGHTLINE_DATA_DIR": str(data), "THOUGHT_RETENTION_DAYS": "999999999999"})
    assert result.returncode == 2
    refused(result, "THOUGHT_RETENTION_DAYS=999999999999 is above 36500; set it from 0 to 36500 days")
    assert not data.exists()


def test_serve_with_an_unknown_log_level_is_refused_naming_the_levels(tmp_path: Path) -> None:
    data = tmp_path / "data"
    result = cli("serve", env={"THOUGHTLINE_DATA_DIR": str(data), "THOUGHTLINE_LOG_LEVEL": "trace"})
    assert result.returncode == 2
    refused(result, "THOUGHTLINE_LOG_LEVEL='trace' is not a log level", "debug, info, warning, error, critical")
    assert not data.exists()


def test_reindex_of_a_data_dir_that_does_not_exist_is_refused_not_a_success(tmp_path: Path) -> None:
    refused(cli("reindex", "--data-dir", str(tmp_path / "nowhere")), "no data directory at")
    assert not (tmp_path / "nowhere").exists()


def test_an_export_saved_with_a_byte_order_mark_imports(tmp_path: Path) -> None:
    source, exported = tmp_path / "source", tmp_path / "export.jsonl"
    assert cli("new-store", "--data-dir", str(source)).returncode == 0
    assert cli("export", "--data-dir", str(source), "-o", str(exported)).returncode == 0
    exported.write_bytes(b"\xef\xbb\xbf" + exported.read_bytes())  # as some editors save UTF-8
    result = cli("import", str(exported), "--data-dir", str(tmp_path / "target"))
    assert result.returncode == 0, result.stderr


def test_an_export_to_an_empty_output_name_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert cli("new-store", "--data-dir", str(data)).returncode == 0
    result = cli("export", "--data-dir", str(data), "-o", "")
    refused(result, "--output is empty")
    assert result.stdout == ""


@pytest.mark.parametrize("command", ["import", "backup"])
def test_a_store_that_cannot_be_written_is_named_as_the_problem_not_the_input(tmp_path: Path, command: str) -> None:
    source, exported = tmp_path / "source", tmp_path / "export.jsonl"
    assert cli("import", "--data-dir", str(source), "-", stdin=records(200)).returncode == 0
    assert cli("export", "--data-dir", str(source), "-o", str(exported)).returncode == 0
    args = {
        "import": ["import", "--data-dir", str(tmp_path / "target"), str(exported)],
        "backup": ["backup", str(tmp_path / "copy"), "--data-dir", str(source)],
    }[command]
    # A file-size limit of 64 KiB (128 blocks of 512 bytes), as a quota or a filling disk gives:
    # Python ignores SIGXFSZ, so writes past it fail.
    capped = ["sh", "-c", 'ulimit -f 128 && exec "$0" "$@"', sys.executable, "-m", "thoughtline"]
    # Without coverage's subprocess measuring, whose own data file the limit would refuse at exit.
    skipped = ("THOUGHTLINE_", "MCP_API_TOKEN", "COVERAGE")
    result = subprocess.run(
        [*capped, *args],
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if not k.startswith(skipped)},
        timeout=120,
        check=False,
    )
    refused(result, "could not be written", "is the disk full")
    assert "unedited file" not in result.stderr
    if command == "backup":
        assert not list((tmp_path / "copy").rglob("*.sqlite3*"))
        return
    # The store the failed import began may be left part-made; importing again, with room, completes it.
    again = cli(*args)
    assert again.returncode == 0, again.stderr
    assert "200 thoughts" in again.stdout
    assert cli("check", "--data-dir", str(tmp_path / "target")).returncode == 0
