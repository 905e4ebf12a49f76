"""Helpers for the thread tests: a movable clock, a served app, calls and row counts of the real store file."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import apsw
from mcp import Client

from tests.support import ThreadServer, mcp_client, serve_in_thread, structured, text
from thoughtline.config import Settings
from thoughtline.identity import OWNER_KEY
from thoughtline.storage.router import store_path
from thoughtline.web.app import create_app

DAY = 86_400.0
_COUNTS = (
    "SELECT 'sequences', count(*) FROM sequences UNION ALL SELECT 'thoughts', count(*) FROM thoughts "
    "UNION ALL SELECT 'threads', count(*) FROM threads UNION ALL SELECT 'thread_members', count(*) FROM thread_members "
    "UNION ALL SELECT 'thread_proposals', count(*) FROM thread_proposals "
    "UNION ALL SELECT 'thread_rejections', count(*) FROM thread_rejections "
    "UNION ALL SELECT 'requests', count(*) FROM requests"
)


# A valid thread name of compatibility characters whose folded key runs past 1,000 characters and
# does not compress: a cursor that carries it is long (itsdangerous compresses what it can).
WIDEST_NAME = (
    "\u332e\u3332\u3304\u3321\U0001f244\u2a0c\u3313\u222d\u3308\u330c\U0001d1bd\u334f\ufdfa"
    "\u337f\u3304\u3351\u3311\u332c\u3319\u222d\u3302\u3350\u3340\U0001d163\u3333\u3316"
    "\U0001f241\u3300\u3316\ufdfb\u333b\u3351\u3320\u3312\u330f\u3356\u3344\u3339\U0001d1be"
    "\u3348\u3332\u3304\u3324\U0001f240\u332b\u3341\u3354\u3334\U0001d164\u3348\U0001d1c0\u321e"
    "\u321e\u331a\u330b\U0001f240\ufdfb\U0001f243\u330c\u3315\u3317\u332c\u3316\u331b"
)


class MovableClock:
    """A clock the test moves by hand (starts at a fixed instant)."""

    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.value = now

    def now(self) -> float:
        return self.value

    def advance(self, days: float) -> None:
        self.value += days * DAY


@dataclass
class Served:
    """A running app with its clock and settings."""

    server: ThreadServer
    clock: MovableClock
    settings: Settings

    def counts(self) -> dict[str, int]:
        """Rows per table in the owner's store, read straight from the SQLite file."""
        return {str(name): int(n) for name, n in self.query(_COUNTS)}

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Rows of one read query on the owner's store."""
        conn = apsw.Connection(str(store_path(self.settings.data_dir, OWNER_KEY)), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            return list(conn.execute(sql, params))
        finally:
            conn.close()

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> None:
        """One write on the owner's store (to plant rows only another feature creates, e.g. proposals)."""
        conn = apsw.Connection(str(store_path(self.settings.data_dir, OWNER_KEY)))
        try:
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute(sql, params)
        finally:
            conn.close()


@contextlib.contextmanager
def served(settings: Settings, clock: MovableClock | None = None, **app_args: Any) -> Iterator[Served]:
    """The app on 127.0.0.1 with a movable clock (by default one at a fixed instant)."""
    clock = clock or MovableClock()
    with serve_in_thread(create_app(settings, clock=clock, **app_args)) as running:
        yield Served(running, clock, settings)


@contextlib.asynccontextmanager
async def connected(app: Served) -> AsyncIterator[Client]:
    """A real MCP client on the compat endpoint."""
    async with mcp_client(app.server.base_url) as client:
        yield client


async def call(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    """A successful call's structured content."""
    return structured(await client.call_tool(tool, args))


async def refused(client: Client, tool: str, **args: Any) -> tuple[str, str]:
    """(code, message) of a refused call."""
    result = await client.call_tool(tool, args)
    assert result.is_error, result
    code, _, message = text(result).partition(": ")
    return code, message


async def think(client: Client, thought: str = "step", number: int = 1, done: bool = False, **args: Any) -> str:
    """Write one thought; returns its sequence id."""
    base: dict[str, Any] = {
        "thought": thought,
        "nextThoughtNeeded": not done,
        "thoughtNumber": number,
        "totalThoughts": max(number, 3),
    }
    return str((await call(client, "sequentialthinking", **{**base, **args}))["sequenceId"])


async def create(client: Client, name: str, description: str = "") -> dict[str, Any]:
    """Create a thread; returns its thread object."""
    thread: dict[str, Any] = (
        await call(client, "configure_thread", action="create", name=name, description=description)
    )["thread"]
    return thread


async def write_sequence(client: Client, thoughts: list[str]) -> str:
    """A whole sequence; its last thought completes it (and so queues it for matching)."""
    seq = await think(client, thoughts[0], 1, totalThoughts=len(thoughts))
    for number, thought in enumerate(thoughts[1:], start=2):
        await think(client, thought, number, done=number == len(thoughts), sequenceId=seq, totalThoughts=len(thoughts))
    return seq
