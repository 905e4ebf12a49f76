"""Tool texts count in words a reader expects: "1 thought", "2 thoughts", never "1 thoughts"."""

from __future__ import annotations

import pytest

from tests.support import ThreadServer, mcp_client, structured, text
from thoughtline.domain.wording import counted


def test_a_count_of_one_is_singular_and_every_other_count_plural() -> None:
    assert counted(1, "thought") == "1 thought"
    assert counted(0, "thought") == "0 thoughts"
    assert counted(2, "sequence") == "2 sequences"


@pytest.mark.anyio
async def test_a_one_thought_sequence_and_a_one_member_thread_read_in_the_singular(server: ThreadServer) -> None:
    async with mcp_client(server.base_url) as client:
        first = {"thought": "Pick a cache policy", "nextThoughtNeeded": True, "thoughtNumber": 1, "totalThoughts": 2}
        seq = structured(await client.call_tool("sequentialthinking", first))["sequenceId"]
        history = text(await client.call_tool("get_thought_history", {"sequenceId": seq}))
        assert "· 1 thought\n" in history + "\n"
        listed = text(await client.call_tool("manage_sequence", {"action": "list"}))
        assert "(1 thought)" in listed
        await client.call_tool("configure_thread", {"action": "create", "name": "caching"})
        pinned = text(
            await client.call_tool("configure_thread", {"action": "pin", "name": "caching", "sequenceId": seq})
        )
        assert "· 1 sequence" in pinned
        assert "1 sequences" not in pinned
        briefing = text(await client.call_tool("thread_briefing", {"name": "caching"}))
        assert "· 1 sequence" in briefing
        assert "1 sequences" not in briefing
        await client.call_tool("sequentialthinking", {**first, "sequenceId": seq, "thoughtNumber": 2})
        assert "(2 thoughts)" in text(await client.call_tool("manage_sequence", {"action": "list"}))
