"""Command-line arguments that look given but are not usable are refused, never read as "not given".

Each test runs the real command in a fresh working directory and checks one `error:` line and that
nothing was created where a default would have put it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import free_port
from tests.test_cli_mistakes import refused


def run_in(cwd: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("THOUGHTLINE_", "MCP_API_TOKEN"))}
    return subprocess.run(
        [sys.executable, "-m", "thoughtline", *args],
        capture_output=True,
        text=True,
        env={**clean, "PYTHONPATH": os.pathsep.join(sys.path)},
        cwd=cwd,
        input=stdin,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    "command",
    [
        ["import", "-"],
        ["export"],
        ["new-store"],
        ["check"],
        ["reindex"],
        ["backup", "copy"],
        ["open", "--no-browser"],
        ["serve", "--port", "PORT"],
    ],
)
def test_an_empty_data_dir_is_refused_and_nothing_is_made_in_the_default_folder(
    tmp_path: Path, command: list[str]
) -> None:
    args = [str(free_port()) if arg == "PORT" else arg for arg in command]
    result = run_in(tmp_path, *args, "--data-dir", "", stdin='{"type": "proposal_ids", "issued": 0}\n')
    refused(result, "--data-dir is empty")
    assert result.stderr.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_export_to_dash_writes_stdout_and_makes_no_file_named_dash(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert run_in(tmp_path, "new-store", "--data-dir", str(data)).returncode == 0
    result = run_in(tmp_path, "export", "--data-dir", str(data), "-o", "-")
    assert result.returncode == 0, result.stderr
    assert '"type": "proposal_ids"' in result.stdout
    assert not (tmp_path / "-").exists()


def test_an_export_with_a_byte_order_mark_imports_from_stdin_as_from_a_file(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert run_in(tmp_path, "new-store", "--data-dir", str(data)).returncode == 0
    exported = run_in(tmp_path, "export", "--data-dir", str(data)).stdout
    result = run_in(tmp_path, "import", "--data-dir", str(tmp_path / "target"), "-", stdin="\ufeff" + exported)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("imported ")


@pytest.mark.parametrize("inside", [".", "stores/sub", "elsewhere"])
def test_a_backup_inside_the_data_directory_it_copies_is_refused(tmp_path: Path, inside: str) -> None:
    data = tmp_path / "data"
    assert run_in(tmp_path, "new-store", "--data-dir", str(data)).returncode == 0
    before = sorted(p.relative_to(data) for p in data.rglob("*"))
    refused(run_in(tmp_path, "backup", str(data / inside), "--data-dir", str(data)), "inside the data directory")
    assert sorted(p.relative_to(data) for p in data.rglob("*")) == before


@pytest.mark.parametrize(
    "url", ["http://", "http://a b", "http://x/?q=", "http://x/library", "http://x:99999", "ftp://x", ""]
)
def test_open_refuses_a_url_that_is_not_an_origin_so_it_never_prints_a_broken_link(tmp_path: Path, url: str) -> None:
    result = run_in(tmp_path, "open", "--no-browser", "--data-dir", str(tmp_path / "data"), "--url", url)
    refused(result, "must be the server's http(s) origin")
    assert result.stdout == ""


def test_open_accepts_an_origin_with_a_port_or_a_trailing_slash(tmp_path: Path) -> None:
    for url in ("http://127.0.0.1:8000", "https://thoughts.example.com/"):
        result = run_in(tmp_path, "open", "--no-browser", "--data-dir", str(tmp_path / "data"), "--url", url)
        assert result.returncode == 0, result.stderr
        assert url.rstrip("/") + "/library/signin?link=" in result.stdout
