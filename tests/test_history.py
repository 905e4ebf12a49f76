"""History paging: cursors never skip or repeat, refuse tampering, and honour size limits."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client

from tests.support import ThreadServer, mcp_client, structured, text

pytestmark = pytest.mark.anyio


async def write(client: Client, seq: str | None, number: int, body: str = "", **extra: Any) -> str:
    args: dict[str, Any] = {
        "thought": body or f"thought {number}",
        "nextThoughtNeeded": True,
        "thoughtNumber": number,
        "totalThoughts": 10,
        **extra,
    }
    if seq:
        args["sequenceId"] = seq
    return str(structured(await client.call_tool("sequentialthinking", args))["sequenceId"])


async def read_all(client: Client, seq: str, **args: Any) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    cursor = None
    for _ in range(100):
        page = structured(
            await client.call_tool(
                "get_thought_history", {"sequenceId": seq, **args, **({"cursor": cursor} if cursor else {})}
            )
        )
        seen += page["thoughts"]
        cursor = page["nextCursor"]
        if cursor is None:
            return seen
    raise AssertionError("paging did not end")


async def test_paging_returns_every_thought_once_including_ones_written_meanwhile(server: ThreadServer) -> None:
    async with mcp_client(server.base_url) as client:
        seq = await write(client, None, 1)
        for n in range(2, 8):
            await write(client, seq, n)
        first = structured(await client.call_tool("get_thought_history", {"sequenceId": seq, "limit": 3}))
        for n in range(8, 10):
            await write(client, seq, n)
        rest = await read_all(client, seq, limit=3)
        indexes = [t["index"] for t in first["thoughts"]]
        cursor = first["nextCursor"]
        while cursor:
            page = structured(
                await client.call_tool("get_thought_history", {"sequenceId": seq, "limit": 3, "cursor": cursor})
            )
            indexes += [t["index"] for t in page["thoughts"]]
            cursor = page["nextCursor"]
        assert indexes == list(range(1, 10))
        assert [t["index"] for t in rest] == list(range(1, 10))


async def test_last_page_has_a_null_cursor_and_desc_runs_newest_first(server: ThreadServer) -> None:
    async with mcp_client(server.base_url) as client:
        seq = await write(client, None, 1)
        await write(client, seq, 2)
        page = structured(await client.call_tool("get_thought_history", {"sequenceId": seq, "limit": 2}))
        assert page["nextCursor"] is None
        desc = await read_all(client, seq, order="desc", limit=1)
        assert [t["thoughtNumber"] for t in desc] == [2, 1]


async def test_max_characters_bounds_a_page_but_always_returns_one_thought(server: ThreadServer) -> None:
    async with mcp_client(server.base_url) as client:
        seq = await write(client, None, 1, "a" * 300)
        await write(client, seq, 2, "b" * 300)
        page = structured(await client.call_tool("get_thought_history", {"sequenceId": seq, "maxCharacters": 100}))
        assert len(page["thoughts"]) == 1
        assert page["nextCursor"] is not None
        everything = await read_all(client, seq, maxCharacters=100)
        assert [len(t["thought"]) for t in everything] == [300, 300]


async def test_branch_filter_reads_main_or_one_branch_and_refuses_unknown(server: ThreadServer) -> None:
    async with mcp_client(server.base_url) as client:
        seq = await write(client, None, 1)
        await write(client, seq, 2)
        await write(client, seq, 2, branchId="alt", branchFromThought=1)
        main = await read_all(client, seq, branchId="main")
        alt = await read_all(client, seq, branchId="alt")
        assert [t.get("branchId") for t in main] == [None, None]
        assert [t["branchId"] for t in alt] == ["alt"]
        unknown = await client.call_tool("get_thought_history", {"sequenceId": seq, "branchId": "ghost"})
        assert unknown.is_error
        assert text(unknown).startswith("branch_not_found:")


async def test_tampered_foreign_and_mismatched_cursors_are_refused(server: ThreadServer) -> None:
    async with mcp_client(server.base_url) as client:
        seq = await write(client, None, 1)
        await write(client, seq, 2)
        other = await write(client, None, 1)
        await write(client, other, 2)
        cursor = structured(await client.call_tool("get_thought_history", {"sequenceId": seq, "limit": 1}))[
            "nextCursor"
        ]
        assert cursor
        for args in (
            {"sequenceId": seq, "cursor": cursor[:-2] + ("AA" if not cursor.endswith("AA") else "BB")},
            {"sequenceId": other, "cursor": cursor},
            {"sequenceId": seq, "cursor": cursor, "order": "desc"},
            {"sequenceId": seq, "cursor": "not-a-cursor"},
            {"sequenceId": seq, "limit": 101},
        ):
            result = await client.call_tool("get_thought_history", args)
            assert result.is_error, args
            assert text(result).startswith("invalid_input:")


async def test_transcript_text_lists_title_branches_and_thoughts(server: ThreadServer) -> None:
    async with mcp_client(server.base_url) as client:
        seq = await write(client, None, 1, "Why is the   cache cold?")
        await write(client, seq, 2, "Try warming", branchId="warm", branchFromThought=1)
        transcript = text(await client.call_tool("get_thought_history", {"sequenceId": seq}))
        lines = transcript.splitlines()
        assert lines[0] == "Why is the cache cold?"
        assert "Branch warm: from thought 1 of the main path" in lines
        assert "#2 · Thought 2/10 · branch warm" in lines


async def test_a_parent_with_more_sub_agents_than_are_listed_says_how_many_there_are(server: ThreadServer) -> None:
    async with mcp_client(server.base_url) as client:
        parent = await write(client, None, 1, "orchestrator")
        children = [await write(client, None, 1, f"sub-agent {i}", parentSequenceId=parent) for i in range(103)]
        result = await client.call_tool("get_thought_history", {"sequenceId": parent})
        child_page = structured(
            await client.call_tool("get_thought_history", {"sequenceId": children[0], "branchId": "main"})
        )
    header = structured(result)["sequence"]
    assert header["childSequenceIds"] == children[:100]
    assert header["childSequenceCount"] == 103
    assert "Sub-agent sequences: 103 (the first 100 are listed in childSequenceIds)" in text(result)
    assert child_page["sequence"]["childSequenceCount"] == 0
