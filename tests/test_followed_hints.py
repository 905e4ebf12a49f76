"""Next-step hints in tool results work when an agent follows them literally (real app, real MCP client)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client

from tests.support import structured, text
from tests.thread_support import Served, connected, served, think
from thoughtline.config import Settings
from thoughtline.domain.resuming import NextStep, continue_args, next_step

pytestmark = pytest.mark.anyio


@pytest.fixture
def app(settings: Settings) -> Iterator[Served]:
    with served(settings) as running:
        yield running


# --- pure rule -------------------------------------------------------------------------------


def test_the_next_step_is_on_the_last_thoughts_branch_above_that_scopes_highest_number() -> None:
    assert next_step(None, 2, 4) == NextStep(None, 5)
    assert next_step("q", 1, 1) == NextStep("q", 2)
    assert next_step(None, 3, 3) == NextStep(None, 4)
    assert continue_args("seq_1", NextStep("q", 2)) == "sequenceId seq_1, branchId q, thoughtNumber 2"
    assert continue_args("seq_1", NextStep(None, 5)) == "sequenceId seq_1, thoughtNumber 5"


# --- manage_sequence resume ------------------------------------------------------------------


async def follow_resume(client: Client, seq: str) -> dict[str, Any]:
    """Resume `seq`, then write the thought its hint names, with exactly the arguments it names."""
    resumed = await client.call_tool("manage_sequence", {"action": "resume", "sequenceId": seq})
    hint = re.search(r"Continue with sequentialthinking, (.+)\.$", text(resumed))
    assert hint is not None, text(resumed)
    args: dict[str, Any] = {"thought": "carrying on", "nextThoughtNeeded": True, "totalThoughts": 9}
    for part in hint.group(1).split(", "):
        name, _, value = part.partition(" ")
        args[name] = int(value) if name == "thoughtNumber" else value
    return structured(await client.call_tool("sequentialthinking", args))


async def test_resume_after_a_branch_thought_names_the_branch_and_its_next_number(app: Served) -> None:
    async with connected(app) as client:
        seq = await think(client, "main 1")
        for n in (2, 3, 4):
            await think(client, f"main {n}", number=n, sequenceId=seq)
        await think(client, "branch q 1", number=1, sequenceId=seq, branchId="q", branchFromThought=2)
        resumed = await client.call_tool("manage_sequence", {"action": "resume", "sequenceId": seq})
        assert f"Continue with sequentialthinking, sequenceId {seq}, branchId q, thoughtNumber 2." in text(resumed)
        written = await follow_resume(client, seq)
    assert "thoughtNumberReused" not in written
    on_branches = "SELECT b.name, t.number FROM thoughts t JOIN branches b ON b.id = t.branch ORDER BY t.position"
    assert app.query(on_branches) == [("q", 1), ("q", 2)]


async def test_resume_after_a_reused_number_continues_above_the_highest_number_not_the_last(app: Served) -> None:
    async with connected(app) as client:
        seq = await think(client, "main 1")
        for n in (2, 3, 4):
            await think(client, f"main {n}", number=n, sequenceId=seq)
        await think(client, "main 2 again, final", number=2, done=True, sequenceId=seq)
        resumed = await client.call_tool("manage_sequence", {"action": "resume", "sequenceId": seq})
        assert f"sequenceId {seq}, thoughtNumber 5." in text(resumed)
        written = await follow_resume(client, seq)
    assert "thoughtNumberReused" not in written
    assert written["thoughtNumber"] == 5
