"""Drive the library tools the way the server does: a real store router, registry and principal.

The tool registry is the one the MCP endpoints call; only the HTTP transport is skipped, so
these tests can write and search many sequences quickly.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mcp_types as types

from tests.support import text
from thoughtline.clock import Clock
from thoughtline.identity import Principal, reset_principal, set_principal
from thoughtline.library.embed import Embedder
from thoughtline.mcp.core_tools import core_tools
from thoughtline.mcp.library_tools import Library
from thoughtline.mcp.tools import ToolRegistry
from thoughtline.storage.router import StoreRouter

GOLDEN = Path(__file__).parent


class FixedClock:
    """A clock tests move by hand."""

    def __init__(self, now: float = 1_775_000_000.0) -> None:
        self.t = now

    def now(self) -> float:
        """The current fake time in unix seconds."""
        return self.t


@dataclass
class LibraryHarness:
    """A registry with the core and library tools over stores in one data directory."""

    registry: ToolRegistry
    router: StoreRouter
    library: Library
    clock: FixedClock
    sequence_ids: dict[str, str] = field(default_factory=dict)

    async def call(self, name: str, args: Mapping[str, Any], user: str = "owner") -> types.CallToolResult:
        """Call one tool as `user`."""
        token = set_principal(Principal(user_key=user, via="token"))
        try:
            return await self.registry.call(name, dict(args))
        finally:
            reset_principal(token)

    async def ok(self, name: str, args: Mapping[str, Any], user: str = "owner") -> dict[str, Any]:
        """Call a tool that must succeed; its structured content."""
        result = await self.call(name, args, user)
        assert not result.is_error, text(result)
        assert isinstance(result.structured_content, dict)
        return result.structured_content

    async def write_sequence(self, thoughts: list[str], user: str = "owner", step_seconds: float = 60.0) -> str:
        """Write a whole sequence through `sequentialthinking`; returns its id."""
        seq: str | None = None
        for number, thought in enumerate(thoughts, start=1):
            args: dict[str, Any] = {
                "thought": thought,
                "thoughtNumber": number,
                "totalThoughts": len(thoughts),
                "nextThoughtNeeded": number < len(thoughts),
            }
            if seq is not None:
                args["sequenceId"] = seq
            seq = str((await self.ok("sequentialthinking", args, user))["sequenceId"])
            self.clock.t += step_seconds
        assert seq is not None
        return seq

    async def load_golden(self, user: str = "owner") -> None:
        """Write every golden sequence and give it its recorded status."""
        spec = json.loads((GOLDEN / "sequences.json").read_text())
        for key, item in spec.items():
            seq = await self.write_sequence(item["thoughts"], user)
            self.sequence_ids[key] = seq
            action = {"paused": "pause", "abandoned": "abandon", "active": "resume"}.get(item["status"])
            if action:
                await self.ok("manage_sequence", {"action": action, "sequenceId": seq}, user)


@asynccontextmanager
async def library_harness(
    data_dir: Path, embedder: Embedder, discovery: bool = True, suggest: bool = False, **library_options: Any
) -> AsyncIterator[LibraryHarness]:
    """A harness whose stores live in `data_dir`; closes every store at the end.

    `library_options` go to `Library` (e.g. `background=False`, as on Lambda); `suggest` turns on
    related earlier reasoning on the write tool (`library.related`), as the server has it.
    """
    clock = FixedClock()
    typed_clock: Clock = clock
    router = StoreRouter(data_dir, "wal", typed_clock)
    library = Library(lambda: embedder, **library_options)
    router.on_open.append(library.attach)
    router.on_close.append(library.detach)
    tools = core_tools(related=library.related if suggest else None)
    registry = ToolRegistry([*tools, *library.tools(discovery)], router, typed_clock)
    try:
        yield LibraryHarness(registry, router, library, clock)
    finally:
        await library.idle()
        await router.close_all()


# Fields of a reasoning-set thought that `sequentialthinking` takes as they are.
REASONING_FIELDS = (
    "thoughtNumber",
    "totalThoughts",
    "nextThoughtNeeded",
    "branchId",
    "branchFromThought",
    "branchFromBranchId",
    "isRevision",
    "revisesThought",
    "needsMoreThoughts",
)


ResultKey = tuple[str, str | None, int]


async def load_reasoning(h: LibraryHarness, data: Mapping[str, Any], user: str = "owner") -> dict[str, ResultKey]:
    """Write a reasoning-set split (bench/data/reasoning) through the tools.

    Returns where each dataset thought landed as a search result names it:
    (sequenceId, branchId or None, thoughtNumber).
    """
    where: dict[str, ResultKey] = {}
    start = h.clock.t
    for seq in sorted(data["sequences"], key=lambda s: -float(s.get("daysAgo", 0))):
        h.clock.t = start - float(seq.get("daysAgo", 0)) * 86_400
        sequence_id: str | None = None
        for thought in seq["thoughts"]:
            args: dict[str, Any] = {"thought": thought["thought"]}
            args.update({k: thought[k] for k in REASONING_FIELDS if k in thought})
            if sequence_id is not None:
                args["sequenceId"] = sequence_id
            sequence_id = str((await h.ok("sequentialthinking", args, user))["sequenceId"])
            where[thought["id"]] = (sequence_id, thought.get("branchId"), int(thought["thoughtNumber"]))
            h.clock.t += 60
        action = {"paused": "pause", "abandoned": "abandon", "active": "resume"}.get(str(seq.get("status")))
        if action and sequence_id:
            await h.ok("manage_sequence", {"action": action, "sequenceId": sequence_id}, user)
    h.clock.t = start
    # Measure the steady state a user searches in: every thought embedded (a search itself embeds
    # only a bounded batch, and the background work may still be catching up).
    opened = await h.router.get(user)
    while await h.library.backfill(opened, limit=256):
        pass
    return where
