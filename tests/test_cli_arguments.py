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
