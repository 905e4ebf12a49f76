"""The reasoning set replayed: loading a split of bench/data/reasoning and writing it through the tools.

Shared by the benches that write the set as an agent would (`eval_reasoning`, `eval_related`,
`related_latency`): a split is loaded by name or from part files, its sequences are written oldest
`daysAgo` first, each sequence's thoughts in an order the tool accepts, through the real tool
registry (`core_tools` + `Library` over a `StoreRouter`) as a signed-in principal, under a clock
set by hand to when each sequence was written.
"""

from __future__ import annotations

import contextlib
import glob
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from thoughtline.identity import Principal, reset_principal, set_principal
from thoughtline.mcp.core_tools import core_tools
from thoughtline.mcp.library_tools import Library
from thoughtline.mcp.tools import ToolRegistry
from thoughtline.storage.router import StoreRouter

DATA = Path(__file__).resolve().parent / "data" / "reasoning"
NOW = 1_775_000_000.0
# Fields of a dataset thought that `sequentialthinking` takes as they are.
PASSED = ("thoughtNumber", "totalThoughts", "nextThoughtNeeded", "branchId", "branchFromThought",
          "branchFromBranchId", "isRevision", "revisesThought", "needsMoreThoughts")  # fmt: skip


class Clock:
    """The replay's clock: NOW until it is set to a sequence's written time, then moved by hand."""

    def __init__(self) -> None:
        self.t = NOW

    def now(self) -> float:
        return self.t

    def written(self, seq: Mapping[str, Any]) -> None:
        """Set the clock to when `seq` was written (`daysAgo` before NOW)."""
        self.t = NOW - float(seq.get("daysAgo", 0)) * 86_400


def load_split(spec: str) -> dict[str, Any]:
    """A split by name, or every part file matching a glob merged into one split (ids are unique per part)."""
    if "/" not in spec and not spec.endswith(".json"):
        loaded: dict[str, Any] = json.loads((DATA / f"{spec}.json").read_text())
        return loaded
    paths = sorted(glob.glob(spec))
    if not paths:
        raise SystemExit(f"no split file matches {spec!r}: give a split name or a path to JSON parts")
    parts = [json.loads(Path(p).read_text()) for p in paths]
    merged: dict[str, Any] = {"split": parts[0].get("split", "parts"), "topics": [], "sequences": [], "questions": []}
    for part in parts:
        for key in ("topics", "sequences", "questions"):
            merged[key].extend(part.get(key, []))
    return merged


def oldest_first(data: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A split's sequences in the order they were written (largest `daysAgo` first)."""
    return sorted(data["sequences"], key=lambda s: -float(s.get("daysAgo", 0)))


def write_order(thoughts: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The thoughts in file order, except that a branch waits until its branch point is on the main path.

    (A writer may list a branch before the step it forks from; the tool rightly refuses that.)
    """
    out: list[Mapping[str, Any]] = []
    waiting: list[Mapping[str, Any]] = []
    main: set[int] = set()
    for thought in thoughts:
        if thought.get("branchId") and thought.get("branchFromThought") not in main:
            waiting.append(thought)
            continue
        out.append(thought)
        if not thought.get("branchId"):
            main.add(int(thought["thoughtNumber"]))
            ready = [w for w in waiting if w.get("branchFromThought") in main]
            out.extend(ready)
            waiting = [w for w in waiting if w not in ready]
    return out + waiting


async def write_sequence(
    registry: ToolRegistry, seq: Mapping[str, Any]
) -> AsyncIterator[tuple[Mapping[str, Any], dict[str, Any]]]:
    """Write one dataset sequence with `sequentialthinking`; yields each thought with the tool's result.

    Raises:
        RuntimeError: the tool refused a thought; the message names the dataset thought.
    """
    sequence_id: str | None = None
    for thought in write_order(seq["thoughts"]):
        args: dict[str, Any] = {"thought": thought["thought"], **{k: thought[k] for k in PASSED if k in thought}}
        if sequence_id is not None:
            args["sequenceId"] = sequence_id
        result = await registry.call("sequentialthinking", args)
        out = result.structured_content
        if result.is_error or not isinstance(out, dict):
            raise RuntimeError(f"writing {thought['id']} failed: {result.content}")
        sequence_id = str(out["sequenceId"])
        yield thought, out


@dataclass(frozen=True)
class Replay:
    """A replay under way: the registry to call (as the replay's user) and its clock."""

    registry: ToolRegistry
    clock: Clock


@contextlib.asynccontextmanager
async def replaying(data_dir: Path, user: str, library: Library, *, related: bool = False) -> AsyncIterator[Replay]:
    """The real tools over stores under `data_dir`, called as `user`, with `library`'s after-commit work.

    `related` turns on related earlier reasoning on the write tool. On leaving, the library's
    work stops (what runs finishes) and every store closes.
    """
    clock = Clock()
    router = StoreRouter(data_dir, "wal", clock)
    router.on_open.append(library.attach)
    router.on_close.append(library.detach)
    tools = core_tools(related=library.related if related else None)
    registry = ToolRegistry([*tools, *library.tools(True)], router, clock)
    token = set_principal(Principal(user_key=user, via="token"))
    try:
        yield Replay(registry, clock)
    finally:
        reset_principal(token)
        await library.close()
        await router.close_all()
