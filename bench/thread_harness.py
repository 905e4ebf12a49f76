"""The tools as the server runs them, in-process, for the thread benchmarks.

A real store router, Library, registry and principal over real SQLite files; only the HTTP
transport is skipped so thousands of calls stay quick.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from thoughtline.clock import Clock
from thoughtline.identity import Principal, reset_principal, set_principal
from thoughtline.library.briefing import Periods
from thoughtline.library.embed import Embedder
from thoughtline.mcp.core_tools import core_tools
from thoughtline.mcp.library_tools import Library
from thoughtline.mcp.proposal_tools import ProposalTools
from thoughtline.mcp.thread_tools import ThreadTools
from thoughtline.mcp.tools import ToolRegistry
from thoughtline.storage.router import StoreRouter

_FIELDS = (
    "thought",
    "thoughtNumber",
    "totalThoughts",
    "nextThoughtNeeded",
    "branchId",
    "branchFromThought",
    "isRevision",
    "revisesThought",
    "event",
)


class StepClock:
    """A clock that moves one minute per reading, so every write has its own time."""

    def __init__(self, start: float = 1_780_000_000.0) -> None:
        self.t = start

    def now(self) -> float:
        self.t += 60.0
        return self.t


@dataclass
class Harness:
    """A registry with every tool over stores in one data directory, called as the owner."""

    registry: ToolRegistry
    router: StoreRouter
    library: Library

    async def ok(self, name: str, args: Mapping[str, Any]) -> dict[str, Any]:
        """Call a tool that must succeed; its structured content."""
        token = set_principal(Principal(user_key="owner", via="token"))
        try:
            result = await self.registry.call(name, dict(args))
        finally:
            reset_principal(token)
        if result.is_error or not isinstance(result.structured_content, dict):
            raise RuntimeError(f"{name} failed: {result.content}")
        return result.structured_content

    async def timed(self, name: str, args: Mapping[str, Any]) -> float:
        """Milliseconds one successful call takes."""
        start = time.perf_counter()
        await self.ok(name, args)
        return (time.perf_counter() - start) * 1000


def sequence_calls(seq: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The `sequentialthinking` arguments of a labelled sequence's thoughts, in order."""
    return [{k: t[k] for k in _FIELDS if k in t} for t in seq["thoughts"]]


@asynccontextmanager
async def harness(data_dir: Path, embedder: Embedder) -> AsyncIterator[Harness]:
    """A harness whose stores live in `data_dir`; closes every store at the end."""
    clock: Clock = StepClock()
    router = StoreRouter(data_dir, "wal", clock)
    library = Library(lambda: embedder)
    # No background drain: `review_proposals list` does the matching, so a run is repeatable
    # (the drain would race the list over which thread vectors a sequence meets).
    router.on_close.append(library.detach)
    specs = [
        *core_tools(),
        *library.tools(True),
        *ThreadTools(Periods(14.0, 45.0)).tools(),
        *ProposalTools(library.embedder).tools(),
    ]
    try:
        yield Harness(ToolRegistry(specs, router, clock), router, library)
    finally:
        await library.idle()
        await router.close_all()
