"""Logs carry no thought text and no token, on success and on every kind of failure."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.support import TOKEN, mcp_client, start_child, stop_child, structured

pytestmark = pytest.mark.anyio

SECRET_TEXT = "zebra-cobalt-7731 private reasoning"


async def test_server_logs_hold_neither_thought_text_nor_tokens(tmp_path: Path) -> None:
    child = start_child(tmp_path / "data", extra_env={"THOUGHTLINE_LOG_LEVEL": "debug"})
    try:
        async with mcp_client(child.base_url) as client:
            args = {"thought": SECRET_TEXT, "nextThoughtNeeded": True, "thoughtNumber": 1, "totalThoughts": 2}
            seq = structured(await client.call_tool("sequentialthinking", args))["sequenceId"]
            await client.call_tool("sequentialthinking", {**args, "sequenceId": seq, "thoughtNumber": "bad"})
            await client.call_tool("sequentialthinking", {**args, "thought": SECRET_TEXT * 3000})
            await client.call_tool("sequentialthinking", {**args, "branchId": SECRET_TEXT, "sequenceId": seq})
            await client.call_tool("get_thought_history", {"sequenceId": seq})
        async with httpx.AsyncClient() as http:
            await http.post(
                child.base_url + "/mcp-compat?token=" + TOKEN,
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                headers={"Authorization": f"Bearer {TOKEN}x", "Accept": "application/json, text/event-stream"},
            )
    finally:
        stop_child(child)
    log = child.log()
    assert "POST /mcp-compat 200" in log  # the access log did run
    assert SECRET_TEXT not in log
    assert "zebra-cobalt" not in log
    assert TOKEN not in log
    assert TOKEN[:20] not in log
