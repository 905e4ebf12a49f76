"""SPEC §2 through the real `mcp` client against a real server on 127.0.0.1, on both endpoints."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.support import ThreadServer, mcp_client, structured, text

pytestmark = pytest.mark.anyio

ENDPOINTS = [("/mcp-compat", "legacy"), ("/mcp", "2026-07-28")]


@pytest.fixture(params=ENDPOINTS, ids=["compat-2025", "modern-2026"])
async def client(request: pytest.FixtureRequest, server: ThreadServer) -> AsyncIterator[Client]:
    path, mode = request.param
    async with mcp_client(server.base_url, path=path, mode=mode) as connected:
        yield connected


async def think(client: Client, **args: Any) -> Any:
    base: dict[str, Any] = {"thought": "step", "nextThoughtNeeded": True, "thoughtNumber": 1, "totalThoughts": 3}
    return await client.call_tool("sequentialthinking", {**base, **args})


async def count(client: Client, seq: str) -> int:
    page = structured(await client.call_tool("get_thought_history", {"sequenceId": seq}))
    return int(page["sequence"]["thoughtHistoryLength"])


async def error_code(result: Any) -> str:
    assert result.is_error
    return text(result).split(":", 1)[0]


async def test_tool_list_declares_schemas_and_annotations(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert {"sequentialthinking", "get_thought_history", "delete_thought_sequence"} <= set(tools)
    write, read, delete = tools["sequentialthinking"], tools["get_thought_history"], tools["delete_thought_sequence"]
    assert write.annotations is not None
    assert (write.annotations.read_only_hint, write.annotations.idempotent_hint) == (False, False)
    assert read.annotations is not None
    assert (read.annotations.read_only_hint, read.annotations.idempotent_hint) == (True, True)
    assert delete.annotations is not None
    assert delete.annotations.destructive_hint is True
    for tool in (write, read, delete):
        assert tool.output_schema is not None
        assert tool.output_schema["type"] == "object"
    assert set(write.input_schema["required"]) == {"thought", "nextThoughtNeeded", "thoughtNumber", "totalThoughts"}


async def test_first_thought_creates_an_unguessable_sequence_and_does_not_echo_the_thought(client: Client) -> None:
    result = await think(client, thought="Plan the migration")
    data = structured(result)
    assert re.fullmatch(r"seq_[0-9a-f]{32}", data["sequenceId"])
    assert data == {
        "sequenceId": data["sequenceId"],
        "thoughtNumber": 1,
        "totalThoughts": 3,
        "nextThoughtNeeded": True,
        "branches": [],
        "thoughtHistoryLength": 1,
    }
    assert text(result) == f"Thought 1/3\n\nPlan the migration\n\nSequence: {data['sequenceId']} · 1 thought stored"
    other = structured(await think(client))
    assert other["sequenceId"] != data["sequenceId"]


async def test_thought_number_above_total_raises_the_total(client: Client) -> None:
    seq = structured(await think(client))["sequenceId"]
    result = await think(client, sequenceId=seq, thoughtNumber=5, totalThoughts=3)
    assert structured(result)["totalThoughts"] == 5
    assert text(result).startswith("Thought 5/5\nNote: thoughtNumber 5 was above totalThoughts 3")


async def test_string_arguments_are_coerced(client: Client) -> None:
    seq = structured(await think(client))["sequenceId"]
    data = structured(
        await think(client, sequenceId=seq, thoughtNumber="2", totalThoughts="4", nextThoughtNeeded="false")
    )
    assert (data["thoughtNumber"], data["totalThoughts"], data["nextThoughtNeeded"]) == (2, 4, False)


async def test_branches_have_scoped_numbers_and_nested_forks(client: Client) -> None:
    seq = structured(await think(client, thought="root"))["sequenceId"]
    await think(client, sequenceId=seq, thoughtNumber=2, thought="main two")
    start = await think(client, sequenceId=seq, thoughtNumber=2, branchId="alt", branchFromThought=1, thought="alt two")
    assert text(start).startswith("Branch alt from thought 1 · 2/3")
    assert structured(start)["branches"] == ["alt"]
    cont = await think(client, sequenceId=seq, thoughtNumber=3, branchId="alt", thought="alt three")
    assert text(cont).startswith("Branch alt · 3/3")
    nested = await think(
        client,
        sequenceId=seq,
        thoughtNumber=4,
        branchId="deep",
        branchFromThought=3,
        branchFromBranchId="alt",
        thought="deep four",
    )
    assert structured(nested)["branches"] == ["alt", "deep"]
    collapsed = await think(
        client, sequenceId=seq, thoughtNumber=2, branchId="shallow", branchFromThought=1, branchFromBranchId="alt"
    )
    assert not collapsed.is_error
    page = structured(await client.call_tool("get_thought_history", {"sequenceId": seq}))
    branches = {b["branchId"]: b for b in page["sequence"]["branches"]}
    assert branches["alt"]["parentBranchId"] is None
    assert branches["deep"]["parentBranchId"] == "alt"
    assert branches["shallow"]["parentBranchId"] is None  # thought 1 seen from alt is main's
    assert [t.get("branchId") for t in page["thoughts"]] == [None, None, "alt", "alt", "deep", "shallow"]


async def test_revision_resolves_on_the_branch_then_its_ancestors(client: Client) -> None:
    seq = structured(await think(client, thought="a"))["sequenceId"]
    await think(client, sequenceId=seq, thoughtNumber=2, branchId="b", branchFromThought=1)
    result = await think(client, sequenceId=seq, thoughtNumber=3, branchId="b", isRevision=True, revisesThought=1)
    assert text(result).startswith("Branch b · Revision of thought 1 · 3/3")
    page = structured(await client.call_tool("get_thought_history", {"sequenceId": seq}))
    last = page["thoughts"][-1]
    assert (last["isRevision"], last["revisesThought"], last["revisesIndex"]) == (True, 1, 1)


async def test_writing_after_the_final_thought_reopens_with_a_note(client: Client) -> None:
    seq = structured(await think(client, nextThoughtNeeded=False))["sequenceId"]
    page = structured(await client.call_tool("get_thought_history", {"sequenceId": seq}))
    assert page["sequence"]["completed"] is True
    result = await think(client, sequenceId=seq, thoughtNumber=2)
    assert structured(result)["reopened"] is True
    assert "Note: this sequence was completed; this thought reopens it" in text(result)


async def test_reopened_is_flagged_only_when_the_write_changes_an_ended_status(client: Client) -> None:
    async def status(seq: str) -> str:
        return str((await header(client, seq))["status"])

    done = structured(await think(client, thought="root", totalThoughts=2))["sequenceId"]
    await think(client, sequenceId=done, thoughtNumber=2, totalThoughts=2, nextThoughtNeeded=False)
    final_again = await think(client, sequenceId=done, thoughtNumber=3, nextThoughtNeeded=False)
    assert "reopened" not in structured(final_again)
    assert "Note: this sequence" not in text(final_again)
    assert await status(done) == "completed"

    dropped = structured(await think(client, thought="root"))["sequenceId"]
    await client.call_tool("manage_sequence", {"action": "abandon", "sequenceId": dropped})
    revived = await think(client, sequenceId=dropped, thoughtNumber=2)
    assert structured(revived)["reopened"] is True
    assert "Note: this sequence was abandoned; this thought reopens it" in text(revived)
    assert await status(dropped) == "active"

    closed = structured(await think(client, thought="root"))["sequenceId"]
    await client.call_tool("manage_sequence", {"action": "complete", "sequenceId": closed})
    reopened = await think(client, sequenceId=closed, thoughtNumber=2)
    assert structured(reopened)["reopened"] is True
    assert "nextThoughtNeeded was false" not in text(reopened)
    assert "Note: this sequence was completed; this thought reopens it" in text(reopened)


async def test_reused_number_is_flagged_and_later_references_mean_the_newest(client: Client) -> None:
    seq = structured(await think(client, thought="first one"))["sequenceId"]
    reused = await think(client, sequenceId=seq, thoughtNumber=1, thought="second one")
    assert structured(reused)["thoughtNumberReused"] is True
    assert "Note: thought 1 already exists on the main path" in text(reused)
    await think(client, sequenceId=seq, thoughtNumber=2, isRevision=True, revisesThought=1)
    page = structured(await client.call_tool("get_thought_history", {"sequenceId": seq}))
    assert page["thoughts"][-1]["revisesIndex"] == 2


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ({"sequenceId": "seq_" + "f" * 32}, "sequence_not_found"),
        ({"isRevision": True}, "revision_target_required"),
        ({"isRevision": True, "revisesThought": 7}, "revision_target_not_found"),
        ({"revisesThought": 1}, "invalid_input"),
        ({"branchFromThought": 1}, "branch_id_required"),
        ({"branchId": "nope"}, "branch_not_found"),
        ({"branchId": "x", "branchFromThought": 9}, "branch_point_not_found"),
        ({"branchId": "x", "branchFromThought": 1, "branchFromBranchId": "ghost"}, "branch_not_found"),
        ({"branchId": "b", "branchFromThought": 2}, "branch_conflict"),
        ({"branchId": "\u200b", "branchFromThought": 1}, "invalid_input"),
        ({"branchId": " b "}, "invalid_input"),
        ({"threads": ["unknown-topic"]}, "thread_not_found"),
        ({"parentSequenceId": "seq_" + "e" * 32}, "sequence_not_found"),
        ({"thoughtNumber": "many"}, "invalid_input"),
        ({"thought": ""}, "invalid_input"),
        ({"surprise": 1}, "invalid_input"),
    ],
)
async def test_every_refusal_names_its_code_and_writes_nothing(client: Client, args: dict[str, Any], code: str) -> None:
    seq = structured(await think(client))["sequenceId"]
    await think(client, sequenceId=seq, thoughtNumber=2)
    await think(client, sequenceId=seq, thoughtNumber=3, branchId="b", branchFromThought=1)
    before = await count(client, seq)
    result = await think(client, **{"sequenceId": seq, "thoughtNumber": 4, **args})
    assert await error_code(result) == code
    assert re.match(rf"^{code}: \S", text(result))
    assert await count(client, seq) == before


async def test_request_id_retry_returns_the_original_result_and_writes_nothing(client: Client) -> None:
    first = await think(client, requestId="req-1", thought="once")
    again = await think(client, requestId="req-1", thought="once")
    assert structured(again) == structured(first)
    assert text(again) == text(first)
    seq = structured(first)["sequenceId"]
    assert await count(client, seq) == 1
    conflict = await think(client, requestId="req-1", thought="different")
    assert await error_code(conflict) == "idempotency_conflict"
    assert await count(client, seq) == 1


async def test_parent_and_child_sequences_link_both_ways(client: Client) -> None:
    parent = structured(await think(client, thought="orchestrator"))["sequenceId"]
    child = structured(await think(client, thought="sub-agent", parentSequenceId=parent))["sequenceId"]
    child_page = structured(await client.call_tool("get_thought_history", {"sequenceId": child}))
    parent_page = structured(await client.call_tool("get_thought_history", {"sequenceId": parent}))
    assert child_page["sequence"]["parentSequenceId"] == parent
    assert parent_page["sequence"]["childSequenceIds"] == [child]


async def header(client: Client, seq: str) -> dict[str, Any]:
    page = structured(await client.call_tool("get_thought_history", {"sequenceId": seq}))
    return dict(page["sequence"])


async def test_a_parent_link_is_set_once_and_never_makes_a_sequence_its_own_ancestor(client: Client) -> None:
    parent = structured(await think(client, thought="orchestrator"))["sequenceId"]
    child = structured(await think(client, thought="sub-agent", parentSequenceId=parent))["sequenceId"]
    other = structured(await think(client, thought="another orchestrator"))["sequenceId"]
    refusals = [
        (parent, parent, "cannot be its own parent"),
        (parent, child, "its own ancestor"),
        (child, other, f"already has parent {parent}"),
    ]
    for seq, named, phrase in refusals:
        before = await count(client, seq)
        result = await think(client, sequenceId=seq, thoughtNumber=2, parentSequenceId=named)
        assert await error_code(result) == "invalid_input"
        assert phrase in text(result)
        assert await count(client, seq) == before
    assert (await header(client, parent))["parentSequenceId"] is None
    assert (await header(client, parent))["childSequenceIds"] == [child]
    assert (await header(client, child))["parentSequenceId"] == parent
    again = await think(client, sequenceId=child, thoughtNumber=2, parentSequenceId=parent)
    assert not again.is_error
    assert (await header(client, other))["childSequenceIds"] == []


async def test_a_sub_agent_keeps_writing_with_its_recorded_parent_after_the_parent_is_deleted(client: Client) -> None:
    parent = structured(await think(client, thought="orchestrator"))["sequenceId"]
    child = structured(await think(client, thought="sub-agent", parentSequenceId=parent))["sequenceId"]
    other = structured(await think(client, thought="another orchestrator"))["sequenceId"]
    await client.call_tool("delete_thought_sequence", {"sequenceId": parent, "confirm": True})
    again = await think(client, sequenceId=child, thoughtNumber=2, parentSequenceId=parent)
    assert not again.is_error, text(again)
    # The link stays set once: it is shown as deleted, and no later call re-parents the sub-agent.
    shown = await header(client, child)
    assert (shown["parentSequenceId"], shown["parentDeleted"]) == (parent, True)
    page = await client.call_tool("get_thought_history", {"sequenceId": child})
    assert f"Sub-agent of {parent} (deleted)" in text(page)
    listed = structured(await client.call_tool("manage_sequence", {"action": "list"}))["sequences"]
    assert [s.get("parentDeleted") for s in listed if s["sequenceId"] == child] == [True]
    moved = await think(client, sequenceId=child, thoughtNumber=3, parentSequenceId=other)
    assert await error_code(moved) == "invalid_input"
    assert f"already has parent {parent}" in text(moved)
    assert await count(client, child) == 2
    # A sequence that never had that parent cannot take a deleted one.
    fresh = await think(client, thought="late sub-agent", parentSequenceId=parent)
    assert await error_code(fresh) == "sequence_not_found"
    assert "parentDeleted" not in await header(client, other)


async def test_delete_needs_confirm_and_removes_everything(client: Client) -> None:
    seq = structured(await think(client))["sequenceId"]
    await think(client, sequenceId=seq, thoughtNumber=2, branchId="b", branchFromThought=1)
    refused = await client.call_tool("delete_thought_sequence", {"sequenceId": seq, "confirm": False})
    assert await error_code(refused) == "invalid_input"
    assert await count(client, seq) == 2
    done = structured(await client.call_tool("delete_thought_sequence", {"sequenceId": seq, "confirm": "true"}))
    assert done == {"sequenceId": seq, "deleted": True, "deletedThoughts": 2}
    gone = await client.call_tool("get_thought_history", {"sequenceId": seq})
    assert await error_code(gone) == "sequence_not_found"
    again = structured(await client.call_tool("delete_thought_sequence", {"sequenceId": seq, "confirm": True}))
    assert again == {"sequenceId": seq, "deleted": False, "deletedThoughts": 0}
    continued = await think(client, sequenceId=seq, thoughtNumber=3)
    assert await error_code(continued) == "sequence_not_found"


async def test_unknown_tool_is_a_protocol_error_naming_the_tools(client: Client) -> None:
    with pytest.raises(MCPError) as err:
        await client.call_tool("no_such_tool", {})
    assert err.value.code == -32602
    assert "sequentialthinking" in err.value.message


async def test_unknown_resource_is_invalid_params_with_the_uri(client: Client) -> None:
    with pytest.raises(MCPError) as err:
        await client.read_resource("ui://nothing/here.html")
    assert err.value.code == -32602
    assert err.value.data == {"uri": "ui://nothing/here.html"}


async def test_write_and_history_tools_link_the_app_resource_which_is_served(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    for name in ("sequentialthinking", "get_thought_history"):
        meta = tools[name].meta
        assert meta is not None
        assert meta["ui"]["resourceUri"] == "ui://sequential-thinking/process.html"
    assert tools["delete_thought_sequence"].meta is None
    listed = (await client.list_resources()).resources
    assert [r.uri for r in listed] == ["ui://sequential-thinking/process.html"]
    read = await client.read_resource("ui://sequential-thinking/process.html")
    content = read.contents[0]
    assert content.mime_type == "text/html;profile=mcp-app"
    assert getattr(content, "text", "").lstrip().lower().startswith("<!doctype html>")
    assert content.meta is not None
    assert content.meta["ui"]["csp"]["connectDomains"] == []


async def test_the_thread_and_kind_limits_the_schema_states_are_the_ones_enforced(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    props = tools["sequentialthinking"].input_schema["properties"]
    assert (props["threads"]["maxItems"], props["threads"]["items"]["maxLength"]) == (16, 64)
    assert (props["kind"]["minLength"], props["kind"]["maxLength"]) == (1, 64)
    assert await error_code(await think(client, threads=["t" * 64] * 16)) == "thread_not_found"
    too_many = await think(client, threads=[f"t{i}" for i in range(17)])
    assert await error_code(too_many) == "invalid_input"
    assert "at most 16 per call" in text(too_many)
    # No thread can have a 65-character name, so "create it first" would be advice that cannot work.
    too_long = await think(client, threads=["ok", "y" * 65])
    assert await error_code(too_long) == "invalid_input"
    assert "thread names are at most 64 characters" in text(too_long)
    assert "configure_thread" not in text(too_long)
    assert await error_code(await think(client, kind="")) == "invalid_input"
