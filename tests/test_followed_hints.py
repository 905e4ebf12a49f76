"""Next-step hints in tool results work when an agent follows them literally (real app, real MCP client)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client

from tests.support import structured, text
from tests.thread_support import Served, call, connected, create, refused, served, think
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


# --- get_thought_history and configure_thread list: the next-page hint ----------------------


def history_hint(result_text: str) -> dict[str, Any]:
    """The arguments the history text's next-page line names, exactly as it names them."""
    hint = re.search(r"call get_thought_history with sequenceId (\S+) and cursor (\S+) to continue", result_text)
    assert hint is not None, result_text
    return {"sequenceId": hint.group(1), "cursor": hint.group(2)}


async def walk_history_by_hint(client: Client, **first: Any) -> list[tuple[int, str | None]]:
    """Every page of history from a first call with `first`, then only what each page's text says to send."""
    result = await client.call_tool("get_thought_history", first)
    seen: list[tuple[int, str | None]] = []
    while True:
        assert not result.is_error, text(result)
        page = structured(result)
        seen += [(t["thoughtNumber"], t.get("branchId")) for t in page["thoughts"]]
        if page["nextCursor"] is None:
            assert "More thoughts follow" not in text(result)
            return seen
        result = await client.call_tool("get_thought_history", history_hint(text(result)))


async def branched(client: Client) -> str:
    """main 1 2 3, and branch b forking at 2 with 3 and 4."""
    seq = await think(client, "main 1")
    for n in (2, 3):
        await think(client, f"main {n}", number=n, sequenceId=seq)
    await think(client, "b 3", number=3, sequenceId=seq, branchId="b", branchFromThought=2)
    await think(client, "b 4", number=4, sequenceId=seq, branchId="b")
    return seq


async def test_history_pages_in_desc_order_or_on_one_branch_by_following_the_hint_alone(app: Served) -> None:
    async with connected(app) as client:
        seq = await branched(client)
        newest_first = await walk_history_by_hint(client, sequenceId=seq, limit=1, order="desc")
        main_only = await walk_history_by_hint(client, sequenceId=seq, limit=1, branchId="main")
        branch_desc = await walk_history_by_hint(client, sequenceId=seq, limit=1, branchId="b", order="desc")
    assert newest_first == [(4, "b"), (3, "b"), (3, None), (2, None), (1, None)]
    assert main_only == [(1, None), (2, None), (3, None)]
    assert branch_desc == [(4, "b"), (3, "b")]


async def test_a_history_cursor_still_takes_its_own_order_and_branch_and_refuses_others(app: Served) -> None:
    async with connected(app) as client:
        seq = await branched(client)
        page = await call(client, "get_thought_history", sequenceId=seq, limit=1, order="desc", branchId="main")
        cursor = page["nextCursor"]
        same = await call(client, "get_thought_history", sequenceId=seq, cursor=cursor, order="desc", branchId="main")
        asc = await refused(client, "get_thought_history", sequenceId=seq, cursor=cursor, order="asc")
        other = await refused(client, "get_thought_history", sequenceId=seq, cursor=cursor, branchId="b")
        every = await call(client, "get_thought_history", sequenceId=seq, limit=1)
        narrowed = await refused(
            client, "get_thought_history", sequenceId=seq, cursor=every["nextCursor"], branchId="main"
        )
    assert [t["thoughtNumber"] for t in same["thoughts"]] == [2, 1]
    for code, message in (asc, other, narrowed):
        assert code == "invalid_input"
        assert "leave them out: the cursor carries them" in message
    assert "the main path (branchId 'main') in desc order" in asc[1]
    assert "no 'branchId' (every thought) in asc order" in narrowed[1]


async def test_the_thread_list_hint_with_include_archived_reaches_every_page_when_followed(app: Served) -> None:
    async with connected(app) as client:
        for name in ("a", "b", "c"):
            await create(client, name)
        await call(client, "configure_thread", action="archive", name="b")
        result = await client.call_tool("configure_thread", {"action": "list", "includeArchived": True, "limit": 1})
        names: list[str] = []
        while True:
            assert not result.is_error, text(result)
            names += [t["name"] for t in structured(result)["threads"]]
            hint = re.search(r"with cursor '([^']+)'(, includeArchived true)?\.", text(result))
            if hint is None:
                break
            args: dict[str, Any] = {"action": "list", "cursor": hint.group(1)}
            if hint.group(2):
                args["includeArchived"] = True
            result = await client.call_tool("configure_thread", args)
    assert names == ["a", "b", "c"]
