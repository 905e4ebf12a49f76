"""SPEC §5.4 through the real `mcp` client: a new sequence's second thought names related earlier ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client

from tests.oauth_support import TOKEN as OWNER_TOKEN
from tests.oauth_support import running_stack, sign_in
from tests.related_notes import BREAD, INVOICE, LEAK, NUMBERED, OPENING, RESTATED, UNRELATED
from tests.support import TOKEN, mcp_client, serve_in_thread, structured, text
from thoughtline.config import Settings
from thoughtline.library.related import THRESHOLD
from thoughtline.web.app import create_app

pytestmark = pytest.mark.anyio


async def write(client: Client, thoughts: list[str], *, final: bool = True) -> list[dict[str, Any]]:
    """Write one sequence; returns each call's whole result (structured content and text)."""
    out: list[dict[str, Any]] = []
    seq: str | None = None
    for n, thought in enumerate(thoughts, start=1):
        args: dict[str, Any] = {
            "thought": thought,
            "thoughtNumber": n,
            "totalThoughts": len(thoughts),
            "nextThoughtNeeded": not (final and n == len(thoughts)),
        }
        if seq is not None:
            args["sequenceId"] = seq
        result = await client.call_tool("sequentialthinking", args)
        data = structured(result)
        seq = str(data["sequenceId"])
        out.append({"structured": data, "text": text(result)})
    return out


async def earlier_then_opening(base_url: str, token: str = TOKEN) -> tuple[str, list[dict[str, Any]]]:
    """An earlier leak sequence, an unrelated one, then a new sequence opening on the leak."""
    async with mcp_client(base_url, token) as client:
        leak = await write(client, LEAK)
        await write(client, BREAD)
        opening = await write(client, OPENING, final=False)
    return str(leak[0]["structured"]["sequenceId"]), opening


def serve(tmp_path: Path, **changes: Any) -> Any:
    return serve_in_thread(create_app(Settings(data_dir=tmp_path / "data", api_token=TOKEN, **changes)))


@pytest.mark.parametrize("background", [True, False], ids=["background-on", "background-off"])
async def test_the_second_thought_names_the_related_earlier_sequence(tmp_path: Path, background: bool) -> None:
    with serve(tmp_path, background_work=background) as server:
        leak_id, opening = await earlier_then_opening(server.base_url)
    first, second = opening
    assert "related" not in first["structured"]
    related = second["structured"]["related"]
    assert [r["sequenceId"] for r in related] == [leak_id]
    card = related[0]
    assert card["title"] == LEAK[0]
    assert card["status"] == "completed"
    assert card["snippet"] == LEAK[2]  # its conclusion
    assert card["updatedAt"].endswith("Z")
    assert THRESHOLD <= card["similarity"] <= 1.0
    line = f'Related earlier reasoning: "{LEAK[0][:79].rstrip()}…" ({leak_id}); read it with get_thought_history.'
    assert line in second["text"].splitlines()
    # The line sits with the notes, before the thought.
    assert second["text"].index(line) < second["text"].index(OPENING[1])


@pytest.mark.parametrize("background", [True, False], ids=["background-on", "background-off"])
async def test_a_restarted_server_catches_up_on_the_store_it_did_not_write(tmp_path: Path, background: bool) -> None:
    with serve(tmp_path) as server:
        async with mcp_client(server.base_url) as client:
            leak = await write(client, LEAK)
            await write(client, BREAD)
    with serve(tmp_path, background_work=background) as server:  # a fresh process: nothing in memory
        async with mcp_client(server.base_url) as client:
            opening = await write(client, OPENING, final=False)
    assert [r["sequenceId"] for r in opening[1]["structured"]["related"]] == [leak[0]["structured"]["sequenceId"]]


async def test_an_unrelated_opening_carries_no_related_field(tmp_path: Path) -> None:
    with serve(tmp_path) as server:
        async with mcp_client(server.base_url) as client:
            await write(client, LEAK)
            await write(client, BREAD)
            opening = await write(client, UNRELATED, final=False)
    assert all("related" not in call["structured"] for call in opening)
    assert all("Related earlier reasoning" not in call["text"] for call in opening)


async def test_an_opening_of_reasoning_scaffolding_is_told_of_no_earlier_sequence(tmp_path: Path) -> None:
    with serve(tmp_path) as server:
        async with mcp_client(server.base_url) as client:
            await write(client, INVOICE)  # holds every word of RESTATED
            restated = await write(client, RESTATED, final=False)
            await write(client, ["first step, check the garden hose"], final=False)
            numbered = await write(client, NUMBERED, final=False)
    for opening in (restated, numbered):
        assert all("related" not in call["structured"] for call in opening)
        assert all("Related earlier reasoning" not in call["text"] for call in opening)


async def test_a_sequence_never_names_itself_even_when_it_repeats_an_earlier_opening(tmp_path: Path) -> None:
    with serve(tmp_path) as server:
        async with mcp_client(server.base_url) as client:
            first = await write(client, LEAK)
            again = await write(client, LEAK)
    own = again[0]["structured"]["sequenceId"]
    named = [r["sequenceId"] for r in again[1]["structured"]["related"]]
    assert named == [first[0]["structured"]["sequenceId"]]
    assert own not in named
    assert "related" not in first[1]["structured"]  # nothing earlier to name


async def test_a_new_sequence_on_a_deleted_ones_row_does_not_inherit_its_words(tmp_path: Path) -> None:
    with serve(tmp_path) as server:
        async with mcp_client(server.base_url) as client:
            await write(client, LEAK)
            newest = await write(client, LEAK)  # the same leak again; then deleted, freeing its row
            deleted = newest[0]["structured"]["sequenceId"]
            gone = await client.call_tool("delete_thought_sequence", {"sequenceId": deleted, "confirm": True})
            assert structured(gone)["deleted"]
            opening = await write(client, ["Hallway paint.", "Three sample pots."], final=False)
    assert "related" not in opening[1]["structured"]


async def test_a_deleted_sequence_is_never_named(tmp_path: Path) -> None:
    with serve(tmp_path) as server:
        async with mcp_client(server.base_url) as client:
            kept = await write(client, LEAK)
            twin = await write(client, LEAK)
            await write(client, BREAD)  # so the twin's row is not the newest one
            await write(client, UNRELATED)  # with only three, two twins' shared words are too common to count
            twin_id = twin[0]["structured"]["sequenceId"]
            await client.call_tool("delete_thought_sequence", {"sequenceId": twin_id, "confirm": True})
            opening = await write(client, OPENING, final=False)
    assert [r["sequenceId"] for r in opening[1]["structured"]["related"]] == [kept[0]["structured"]["sequenceId"]]


@pytest.mark.parametrize("changes", [{"library": False}, {"related": False}], ids=["library-off", "related-off"])
async def test_nothing_is_suggested_when_switched_off(tmp_path: Path, changes: dict[str, Any]) -> None:
    with serve(tmp_path, **changes) as server:
        _, opening = await earlier_then_opening(server.base_url)
    assert all("related" not in call["structured"] for call in opening)
    assert all("Related earlier reasoning" not in call["text"] for call in opening)


@pytest.mark.parametrize(
    ("changes", "offered"),
    [({}, True), ({"library": False}, False), ({"related": False}, False)],
    ids=["on", "library-off", "related-off"],
)
async def test_the_tool_offers_related_only_where_it_can_be_returned(
    tmp_path: Path, changes: dict[str, Any], offered: bool
) -> None:
    with serve(tmp_path, **changes) as server:
        async with mcp_client(server.base_url, TOKEN) as client:
            [tool] = [t for t in (await client.list_tools()).tools if t.name == "sequentialthinking"]
    assert tool.output_schema is not None
    assert ("related" in tool.output_schema["properties"]) is offered
    assert ("`related`" in (tool.description or "")) is offered


async def test_another_users_sequences_are_never_suggested(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack:
        async with mcp_client(stack.thoughtline.url, OWNER_TOKEN) as owner:
            await write(owner, LEAK)  # the owner's store
        stack.fake.sign_in_as(2002, "friend")
        async with httpx.AsyncClient(base_url=stack.thoughtline.url) as http:
            signed = await sign_in(stack, http)
        friend_token = str(signed.tokens["access_token"])
        _, opening = await earlier_then_opening(stack.thoughtline.url, friend_token)
        async with mcp_client(stack.thoughtline.url, friend_token) as friend:
            other = await write(friend, OPENING, final=False)  # a second opening on the same leak
    own_leak = opening[1]["structured"]["related"]
    assert len(own_leak) == 1  # the friend's own earlier leak sequence, not the owner's
    named = {r["sequenceId"] for r in other[1]["structured"]["related"]}
    async with running_stack(tmp_path) as stack, mcp_client(stack.thoughtline.url, OWNER_TOKEN) as owner:
        for seq in named:
            missing = await owner.call_tool("get_thought_history", {"sequenceId": seq})
            assert missing.is_error  # every suggestion is in the friend's own store
