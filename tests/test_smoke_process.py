"""Smoke run against a real `python -m thoughtline serve` process on 127.0.0.1, both endpoints."""

from __future__ import annotations

import pytest

from tests.support import ChildServer, mcp_client, structured

pytestmark = pytest.mark.anyio


async def test_a_real_server_process_serves_both_eras_from_one_store(live_server: ChildServer) -> None:
    args = {"thought": "smoke", "nextThoughtNeeded": True, "thoughtNumber": 1, "totalThoughts": 2}
    async with mcp_client(live_server.base_url, path="/mcp-compat", mode="legacy") as old:
        assert {t.name for t in (await old.list_tools()).tools} >= {"sequentialthinking", "search_thoughts"}
        seq = structured(await old.call_tool("sequentialthinking", args))["sequenceId"]
    async with mcp_client(live_server.base_url, path="/mcp", mode="2026-07-28") as new:
        final = {**args, "sequenceId": seq, "thoughtNumber": 2, "nextThoughtNeeded": False}
        assert structured(await new.call_tool("sequentialthinking", final))["thoughtHistoryLength"] == 2
        page = structured(await new.call_tool("get_thought_history", {"sequenceId": seq}))
    assert [t["thought"] for t in page["thoughts"]] == ["smoke", "smoke"]
    assert page["sequence"]["completed"] is True
