"""`null` for an optional field means the field is left out, on every tool (strict-mode clients
send null for each unset field), and refused numbers are echoed short."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import ThreadServer, mcp_client, structured, text
from thoughtline.domain.arguments import parse_thought

pytestmark = pytest.mark.anyio

THOUGHT = {"thought": "Null fields", "nextThoughtNeeded": True, "thoughtNumber": 1, "totalThoughts": 2}


def minimal(tool: str, seq: str) -> dict[str, Any]:
    """The required arguments of each tool, for a call that succeeds."""
    calls: dict[str, dict[str, Any]] = {
        "sequentialthinking": {**THOUGHT, "sequenceId": seq, "thoughtNumber": 2},
        "get_thought_history": {"sequenceId": seq},
        "search_thoughts": {"query": "null fields"},
        "manage_sequence": {"action": "list"},
        "review_proposals": {"action": "list"},
        "configure_thread": {"action": "list"},
    }
    return calls.get(tool, {})


async def test_null_for_every_optional_field_of_every_tool_is_the_field_left_out(server: ThreadServer) -> None:
    async with mcp_client(server.base_url) as client:
        seq = str(structured(await client.call_tool("sequentialthinking", THOUGHT))["sequenceId"])
        tools = (await client.list_tools()).tools
        checked = []
        for tool in tools:
            args = minimal(tool.name, seq)
            if not args:
                continue  # destructive or needing a named thread: not called with nulls here
            required = set(tool.input_schema.get("required", []))
            nulls = {
                name: None for name in tool.input_schema["properties"] if name not in required and name not in args
            }
            result = await client.call_tool(tool.name, {**args, **nulls})
            assert not result.is_error, (tool.name, text(result))
            checked.append(tool.name)
        assert {"sequentialthinking", "get_thought_history", "search_thoughts"} <= set(checked)


@pytest.mark.parametrize(
    ("sent", "echo"), [(int("9" * 4000), "9" * 20 + "…"), (1e300, "1e+300")], ids=["4000 digits", "1e300"]
)
def test_an_out_of_range_number_is_echoed_at_most_20_characters_long(sent: Any, echo: str) -> None:
    with pytest.raises(Exception, match="must be from 1 to 1000000") as err:
        parse_thought({**THOUGHT, "thoughtNumber": sent})
    assert str(err.value).endswith(f"got {echo}.")
