"""Branches stay bounded: a sequence holds at most MAX_BRANCHES, and a write result lists a few."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client

from tests.support import ThreadServer, mcp_client, structured, text
from thoughtline.domain.arguments import LISTED_BRANCHES, MAX_BRANCHES

pytestmark = pytest.mark.anyio


async def think(client: Client, seq: str | None, number: int, **extra: Any) -> Any:
    args: dict[str, Any] = {
        "thought": f"thought {number}",
        "nextThoughtNeeded": True,
        "thoughtNumber": number,
        "totalThoughts": 3,
        **extra,
    }
    if seq:
        args["sequenceId"] = seq
    return await client.call_tool("sequentialthinking", args)


async def test_a_sequence_refuses_a_branch_past_the_cap_and_keeps_its_branches_writable(server: ThreadServer) -> None:
    async with mcp_client(server.base_url) as client:
        seq = str(structured(await think(client, None, 1))["sequenceId"])
        for i in range(MAX_BRANCHES):
            last = structured(await think(client, seq, 2, branchId=f"b{i:03d}", branchFromThought=1))
        assert last["branches"] == [f"b{i:03d}" for i in range(MAX_BRANCHES - LISTED_BRANCHES, MAX_BRANCHES)]
        assert last["branchCount"] == MAX_BRANCHES

        refused = await think(client, seq, 2, branchId="one-too-many", branchFromThought=1)
        assert refused.is_error
        assert text(refused).startswith("invalid_input: sequence ")
        assert f"({MAX_BRANCHES})" in text(refused)
        assert "omit sequenceId" in text(refused)

        # An old branch is still written to, and its id is listed first (in creation order).
        old = structured(await think(client, seq, 3, branchId="b000"))
        assert old["branches"][0] == "b000"
        assert len(old["branches"]) == LISTED_BRANCHES
        assert old["branches"][1:] == [f"b{i:03d}" for i in range(MAX_BRANCHES - LISTED_BRANCHES + 1, MAX_BRANCHES)]

        history = structured(await client.call_tool("get_thought_history", {"sequenceId": seq, "limit": 1}))
        assert len(history["sequence"]["branches"]) == MAX_BRANCHES
        assert "one-too-many" not in {b["branchId"] for b in history["sequence"]["branches"]}


async def test_a_result_with_few_branches_lists_them_all_without_a_count(server: ThreadServer) -> None:
    async with mcp_client(server.base_url) as client:
        seq = str(structured(await think(client, None, 1))["sequenceId"])
        result = structured(await think(client, seq, 2, branchId="alt", branchFromThought=1))
        assert result["branches"] == ["alt"]
        assert "branchCount" not in result
