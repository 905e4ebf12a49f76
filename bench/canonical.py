"""The reference point: the canonical `@modelcontextprotocol/server-sequential-thinking` over stdio.

It keeps thoughts in memory and never touches the disk, so it shows what the same tool call costs
with no durability at all. npm's cache lives in `bench/.node/` (gitignored) so the package is
downloaded once, not into the user's home directory.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from bench.rpc import THOUGHT_TEXT, think_arguments

PACKAGE = "@modelcontextprotocol/server-sequential-thinking"
NODE_DIR = Path(__file__).resolve().parent / ".node"


@dataclass(frozen=True)
class CanonicalRun:
    """Timed calls, or why there are none."""

    samples_ns: list[int]
    skipped: str | None = None
    version: str | None = None


def _installed_version() -> str | None:
    for package_json in (NODE_DIR / "npm-cache" / "_npx").glob("*/node_modules/" + PACKAGE + "/package.json"):
        text = package_json.read_text()
        marker = '"version":'
        at = text.find(marker)
        if at >= 0:
            return text[at + len(marker) :].split('"')[1]
    return None


def measure_canonical(n: int, warmup: int, log_path: Path) -> CanonicalRun:
    """`n` sequential `sequentialthinking` calls through the `mcp` SDK's stdio client, after `warmup`.

    The server's stderr goes to `log_path` so stdout stays the report.
    """
    npx = shutil.which("npx")
    if npx is None or shutil.which("node") is None:
        return CanonicalRun([], skipped="node/npx not found on PATH; install Node.js 18+ to include this line")
    NODE_DIR.mkdir(parents=True, exist_ok=True)
    env = {
        "DISABLE_THOUGHT_LOGGING": "true",
        "npm_config_cache": str(NODE_DIR / "npm-cache"),
        "npm_config_update_notifier": "false",
        "npm_config_fund": "false",
        "npm_config_audit": "false",
    }
    for key in ("PATH", "HOME", "https_proxy", "HTTPS_PROXY", "http_proxy", "HTTP_PROXY", "no_proxy", "NO_PROXY"):
        if key in os.environ:
            env[key] = os.environ[key]
    params = StdioServerParameters(command=npx, args=["-y", PACKAGE], env=env)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w") as errlog:
        try:
            samples = asyncio.run(_drive(params, errlog, n, warmup))
        except OSError as exc:
            return CanonicalRun([], skipped=f"could not start {PACKAGE} via npx: {exc}")
    return CanonicalRun(samples, version=_installed_version())


async def _drive(params: StdioServerParameters, errlog: TextIO, n: int, warmup: int) -> list[int]:
    samples: list[int] = []
    async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
        for i in range(warmup + n):
            args = think_arguments(THOUGHT_TEXT, i + 1)
            start = time.perf_counter_ns()
            result = await client.call_tool("sequentialthinking", args)
            elapsed = time.perf_counter_ns() - start
            if result.is_error:
                raise RuntimeError(f"canonical server refused a call: {result.content}")
            if i >= warmup:
                samples.append(elapsed)
    return samples
