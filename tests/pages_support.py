"""Test support for the library pages: the real app on loopback, a seeded store, sign-in links.

The app is built by `create_app` as `thoughtline serve` builds it; the clock is the only part
replaced (GitHub too, when a test signs in with it: see `oauth_support.running_stack`). Seeding
goes through the real MCP client; proposals, which only the background matcher makes, are planted
in the store file as the thread tests do.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw
from mcp import Client

from tests.oauth_support import FakeClock, RunningServer, serve
from tests.support import TOKEN, mcp_client, structured
from thoughtline.config import Settings
from thoughtline.identity import OWNER_KEY
from thoughtline.pages.session import one_time_link
from thoughtline.storage.router import store_path
from thoughtline.web.app import create_app

SCRIPT_TITLE = "Cache invalidation for the <script>alert('x')</script> gateway"


@dataclass
class Library:
    """A running server, its settings and clock, and the ids of the seeded sequences."""

    server: RunningServer
    settings: Settings
    clock: FakeClock
    ids: dict[str, str]

    @property
    def url(self) -> str:
        return self.server.url

    def link(self) -> str:
        """A fresh one-time sign-in link, minted as `thoughtline open` mints it."""
        return one_time_link(self.settings, self.clock, self.url)

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> None:
        """One write on the owner's store file."""
        conn = apsw.Connection(str(store_path(self.settings.data_dir, OWNER_KEY)))
        try:
            conn.execute(sql, params)
        finally:
            conn.close()


async def think(client: Client, sequence_id: str | None = None, **args: Any) -> str:
    """One sequentialthinking call; returns the sequence id."""
    if sequence_id:
        args["sequenceId"] = sequence_id
    result = await client.call_tool("sequentialthinking", args)
    return str(structured(result)["sequenceId"])


async def seed(client: Client, threads: bool = True) -> dict[str, str]:
    """A thread, a branched and revised sequence in it, and two plain ones (no thread: library off)."""
    member: dict[str, Any] = {}
    if threads:
        await client.call_tool(
            "configure_thread", {"action": "create", "name": "caching", "description": "Cache work."}
        )
        member["threads"] = ["caching"]
    step: dict[str, Any] = {"totalThoughts": 3, "nextThoughtNeeded": True}
    plan = await think(client, thought=SCRIPT_TITLE, thoughtNumber=1, **member, **step)
    await think(client, plan, thought="Redis eviction blocks the rollout", thoughtNumber=2, event="blocker", **step)
    await think(
        client,
        plan,
        thought="Try write-through instead",
        thoughtNumber=1,
        branchId="write-through",
        branchFromThought=1,
        totalThoughts=2,
        nextThoughtNeeded=True,
    )
    await think(
        client,
        plan,
        thought="Invalidate on publish, not on read",
        thoughtNumber=3,
        isRevision=True,
        revisesThought=1,
        totalThoughts=3,
        nextThoughtNeeded=False,
    )
    done: dict[str, Any] = {"totalThoughts": 1, "nextThoughtNeeded": False, "thoughtNumber": 1}
    schema = await think(client, thought="Database migration ordering for the billing tables", **done)
    tokens = await think(client, thought="Rotate the signing tokens every quarter", **done)
    return {"plan": plan, "schema": schema, "tokens": tokens}


@contextlib.asynccontextmanager
async def running_library(tmp_path: Path, **settings: Any) -> AsyncIterator[Library]:
    """The app with a seeded owner store, served on 127.0.0.1."""
    config = Settings(data_dir=tmp_path / "data", api_token=TOKEN, **settings)
    clock = FakeClock(time.time())
    with serve(create_app(config, clock=clock)) as server:
        async with mcp_client(server.url, TOKEN) as client:
            ids = await seed(client, threads=config.library)
        yield Library(server, config, clock, ids)


def plant_proposals(library: Library, *sequence_keys: str) -> None:
    """Proposals of `caching` for the named seeded sequences (what the matcher would suggest)."""
    for key in sequence_keys:
        library.execute(
            "INSERT INTO thread_proposals(thread, sequence_id, similarity, proposed_at) "
            "SELECT t.id, s.id, 0.8, 1 FROM threads t, sequences s WHERE t.name = 'caching' AND s.public_id = ?",
            (library.ids[key],),
        )
