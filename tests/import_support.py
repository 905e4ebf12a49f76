"""Helpers for the import and check tests: a store written through the real tools, its export, and the
`thoughtline` command run in this process on real files."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import apsw
import pytest

from tests.support import TOKEN, mcp_client, serve_in_thread, structured
from thoughtline.cli import main
from thoughtline.config import Settings
from thoughtline.identity import OWNER_KEY
from thoughtline.storage.router import store_path
from thoughtline.web.app import create_app


@dataclass(frozen=True)
class Ran:
    """One `thoughtline` run: exit code and what it printed."""

    code: int
    out: str
    err: str


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> Ran:
    """`thoughtline <argv>` in this process (real files, real stores), with its output captured."""
    capsys.readouterr()
    code = main(list(argv))
    printed = capsys.readouterr()
    return Ran(code, printed.out, printed.err)


def step(n: int, body: str, seq: str | None = None, done: bool = False, **extra: Any) -> dict[str, Any]:
    args: dict[str, Any] = {"thought": body, "nextThoughtNeeded": not done, "thoughtNumber": n, "totalThoughts": 3}
    return {**args, **({"sequenceId": seq} if seq else {}), **extra}


async def _write(settings: Settings) -> tuple[str, str]:
    with serve_in_thread(create_app(settings)) as running:
        async with mcp_client(running.base_url) as client:

            async def tool(name: str, args: dict[str, Any]) -> dict[str, Any]:
                return structured(await client.call_tool(name, args))

            await tool("configure_thread", {"action": "create", "name": "Hiring", "description": "Two hires."})
            a = (await tool("sequentialthinking", step(1, "Plan the loop", threads=["Hiring"])))["sequenceId"]
            await tool("sequentialthinking", step(2, "Try a take-home", a, branchId="alt", branchFromThought=1))
            await tool("sequentialthinking", step(3, "Plan it better", a, isRevision=True, revisesThought=1))
            b = (await tool("sequentialthinking", step(1, "Unrelated note", done=True)))["sequenceId"]
            await tool("configure_thread", {"action": "pin", "name": "Hiring", "sequenceId": b})
            await tool("configure_thread", {"action": "unpin", "name": "Hiring", "sequenceId": b})
    return a, b


def written_store(data: Path) -> tuple[str, str]:
    """A store with two sequences (a branch, a revision), a thread, a member and a rejection."""
    return anyio.run(_write, Settings(data_dir=data, api_token=TOKEN))


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def write_lines(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))  # escaped: a lone surrogate can travel
    return path


def query(data: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    conn = apsw.Connection(str(store_path(data, OWNER_KEY)), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return list(conn.execute(sql, params))
    finally:
        conn.close()


def execute(data: Path, sql: str, params: tuple[Any, ...] = ()) -> None:
    """A write straight into the store file: planting rows no tool would write."""
    conn = apsw.Connection(str(store_path(data, OWNER_KEY)))
    try:
        conn.execute(sql, params)
    finally:
        conn.close()
