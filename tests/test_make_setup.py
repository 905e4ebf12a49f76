"""`make serve` and `make test` on a new user's machine: lean serving, early and clear setup messages.

These run the real Makefile and the real `.ci/check-browser` with a PATH or Python the test chooses.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHECK = ROOT / ".ci" / "check-browser"


def tool_dir(tmp_path: Path, *tools: str) -> Path:
    """A directory holding links to just these system tools, to use as PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in tools:
        found = shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    return bin_dir


def check_browser(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["/bin/sh", str(CHECK)], capture_output=True, text=True, env=env, timeout=30, check=False)


def test_the_browser_check_says_how_to_get_chromium_when_there_is_none(tmp_path: Path) -> None:
    result = check_browser({"PATH": str(tool_dir(tmp_path, "cat")), "HOME": str(tmp_path)})
    assert result.returncode == 1
    assert "make test needs Chromium" in result.stderr
    assert "sudo apt-get install chromium" in result.stderr
    assert "playwright install chromium" in result.stderr


def test_the_browser_check_accepts_debian_chromium_or_a_playwright_download(tmp_path: Path) -> None:
    bin_dir = tool_dir(tmp_path, "cat")
    (bin_dir / "chromium").symlink_to("/bin/true")
    assert check_browser({"PATH": str(bin_dir), "HOME": str(tmp_path)}).returncode == 0
    (bin_dir / "chromium").unlink()
    (tmp_path / "browsers" / "chromium-1234").mkdir(parents=True)
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path), "PLAYWRIGHT_BROWSERS_PATH": str(tmp_path / "browsers")}
    assert check_browser(env).returncode == 0


def test_make_test_without_chromium_stops_before_installing_or_running_anything(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    path = tool_dir(tmp_path, "make", "sh", "cat", "python3")
    result = subprocess.run(
        ["make", "-C", str(ROOT), "test", f"VENV={venv}"],
        capture_output=True,
        text=True,
        env={"PATH": str(path), "HOME": str(tmp_path)},
        timeout=60,
        check=False,
    )
    assert result.returncode != 0
    assert "sudo apt-get install chromium" in result.stderr
    assert not venv.exists()
    assert "ruff" not in result.stdout


def make_dry_run(target: str, venv: Path) -> str:
    """The commands `make` would run for `target` on a fresh checkout (nothing is executed)."""
    result = subprocess.run(
        ["make", "-n", "-C", str(ROOT), target, f"VENV={venv}"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return result.stdout


def test_make_serve_installs_runtime_dependencies_only_and_make_test_adds_the_dev_extras(tmp_path: Path) -> None:
    serve = make_dry_run("serve", tmp_path / "venv")
    assert "pip install -q -c constraints.txt -e ." in serve
    assert "[dev]" not in serve
    assert "[dev]" in make_dry_run("lint", tmp_path / "venv")


def test_a_python_older_than_3_11_is_named_before_anything_is_created(tmp_path: Path) -> None:
    # Stands in for an old interpreter: it reports 3.9, and the version test (`-c ...`) fails.
    old = tmp_path / "python3.9"
    old.write_text('#!/bin/sh\ncase "$1" in --version) echo "Python 3.9.2";; *) exit 1;; esac\n')
    old.chmod(0o755)
    result = subprocess.run(
        ["make", "-C", str(ROOT), "serve", f"VENV={tmp_path / 'venv'}", f"PYTHON={old}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0
    assert "Thoughtline needs Python 3.11 or newer" in result.stderr
    assert "is Python 3.9.2" in result.stderr
    assert not (tmp_path / "venv").exists()


def test_a_python_without_the_venv_module_gets_the_debian_package_name(tmp_path: Path) -> None:
    # What Debian's python3 does without python3-venv: `-m venv` fails because ensurepip is missing.
    debian = tmp_path / "python3"
    debian.write_text(
        '#!/bin/sh\ncase "$*" in "-m venv"*) echo "ensurepip is not available" >&2; mkdir -p "$3"; exit 1;; esac\n'
        f'exec {shutil.which("python3")} "$@"\n'
    )
    debian.chmod(0o755)
    result = subprocess.run(
        ["make", "-C", str(ROOT), "serve", f"VENV={tmp_path / 'venv'}", f"PYTHON={debian}"],
        capture_output=True,
        text=True,
        env={**os.environ},
        timeout=60,
        check=False,
    )
    assert result.returncode != 0
    assert "sudo apt-get install python3-venv" in result.stderr
    assert not (tmp_path / "venv").exists(), "a half-made venv would make the next run skip this step"


def check_node(tmp_path: Path, *, npm: bool = False) -> subprocess.CompletedProcess[str]:
    """`.ci/check-node` run from a copy of the repo's layout, with basic tools (and maybe npm) on PATH."""
    repo = tmp_path / "repo"
    bin_dir = tmp_path / "bin"
    if not bin_dir.exists():
        (repo / ".ci").mkdir(parents=True)
        (repo / "tests" / "interop").mkdir(parents=True)
        shutil.copy(ROOT / ".ci" / "check-node", repo / ".ci" / "check-node")
        shutil.copy(ROOT / "tests" / "interop" / "package-lock.json", repo / "tests" / "interop" / "package-lock.json")
        tool_dir(tmp_path, "cat", "dirname", "sha256sum", "cut", "id")
    if npm:
        (bin_dir / "npm").symlink_to("/bin/true")
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path)}
    try:
        return subprocess.run(
            ["/bin/sh", str(repo / ".ci" / "check-node")],
            capture_output=True,
            text=True,
            env=env,
            timeout=30,
            check=False,
        )
    finally:
        (bin_dir / "npm").unlink(missing_ok=True)


def test_the_npm_check_says_how_to_get_npm_when_the_interop_tools_cannot_be_installed(tmp_path: Path) -> None:
    result = check_node(tmp_path)
    assert result.returncode == 1
    assert "make test needs npm (Node.js >= 20)" in result.stderr
    assert "sudo apt-get install npm" in result.stderr


def test_the_npm_check_passes_with_npm_or_with_the_interop_tools_already_installed(tmp_path: Path) -> None:
    assert check_node(tmp_path, npm=True).returncode == 0
    assert check_node(tmp_path).returncode == 1
    interop = tmp_path / "repo" / "tests" / "interop"
    (interop / "node_modules").mkdir()
    lock = subprocess.run(["sha256sum", str(interop / "package-lock.json")], capture_output=True, text=True, check=True)
    (interop / "node_modules" / ".thoughtline-lock.sha256").write_text(lock.stdout.split()[0] + "\n")
    assert check_node(tmp_path).returncode == 0


def test_make_test_checks_for_npm_before_installing_anything(tmp_path: Path) -> None:
    commands = make_dry_run("test", tmp_path / "venv")
    assert commands.index("sh .ci/check-node") < commands.index("pip install")
