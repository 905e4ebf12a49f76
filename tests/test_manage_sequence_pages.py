"""`manage_sequence` action `list` pages through a real MCP client: `cursor`, `order`, `nextCursor`, refusals."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client

from tests.api_support import api_client, body
from tests.support import structured, text
from tests.thread_support import WIDEST_NAME, Served, call, connected, create, refused, served, think
from thoughtline.config import Settings

pytestmark = pytest.mark.anyio


@pytest.fixture
def app(settings: Settings) -> Iterator[Served]:
    with served(settings) as running:
        yield running


async def apart(app: Served, client: Client, count: int, **args: Any) -> list[str]:
    """Start `count` sequences a millisecond apart, so each order is decided by time."""
    written = []
    for i in range(count):
        app.clock.advance(0.001)
        written.append(await think(client, f"sequence {i}", **args))
    return written


async def walk(client: Client, **args: Any) -> tuple[list[str], list[str]]:
    """Every page of `manage_sequence list` with `args`: the ids in the order listed, and each page's text."""
    seen: list[str] = []
    texts: list[str] = []
    cursor = None
    while True:
        result = await client.call_tool("manage_sequence", {"action": "list", **args, "cursor": cursor})
        assert not result.is_error, result
        page = structured(result)
        seen += [s["sequenceId"] for s in page["sequences"]]
        texts.append(text(result))
        cursor = page["nextCursor"]
        if cursor is None:
            return seen, texts


async def test_manage_sequence_list_walks_past_the_first_page_with_no_sequence_repeated_or_missed(app: Served) -> None:
    async with connected(app) as client:
        written = await apart(app, client, 7)
        seen, texts = await walk(client, limit=3)
        first = await call(client, "manage_sequence", action="list", limit=3)
    assert seen == list(reversed(written))
    assert len(texts) == 3
    assert f"cursor {first['nextCursor']!r}" in texts[0]
    assert "for the next page" in texts[0]
    assert "next page" not in texts[-1]


async def test_manage_sequence_list_walks_every_member_of_a_thread_in_created_order(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "pg")
        members = await apart(app, client, 5, threads=["pg"])
        await apart(app, client, 2)
        await think(client, "touched", 2, sequenceId=members[0])  # moves it to the top of order 'updated'
        seen, texts = await walk(client, thread="PG", order="created", limit=2)
    assert seen == members
    assert "thread 'PG'" in texts[0]
    assert "order 'created'" in texts[0]


async def test_manage_sequence_list_refuses_an_edited_foreign_or_mismatched_cursor_naming_the_fix(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "pg")
        await apart(app, client, 3, threads=["pg"])
        seq = await think(client, "one")
        await think(client, "two", 2, sequenceId=seq)
        cursor = (await call(client, "manage_sequence", action="list", limit=1))["nextCursor"]
        in_thread = (await call(client, "manage_sequence", action="list", limit=1, thread="pg"))["nextCursor"]
        history = (await call(client, "get_thought_history", sequenceId=seq, limit=1))["nextCursor"]
        edited = await refused(client, "manage_sequence", action="list", cursor=cursor[:-2] + "xx")
        other_status = await refused(client, "manage_sequence", action="list", cursor=cursor, status="active")
        dropped_thread = await refused(client, "manage_sequence", action="list", cursor=in_thread)
        other_order = await refused(client, "manage_sequence", action="list", cursor=cursor, order="created")
        foreign = await refused(client, "manage_sequence", action="list", cursor=history)
        misplaced = await refused(client, "manage_sequence", action="pause", sequenceId=seq, cursor=cursor)
        empty = await refused(client, "manage_sequence", action="list", cursor="")
    assert {edited[0], other_status[0], dropped_thread[0], other_order[0], foreign[0], misplaced[0], empty[0]} == {
        "invalid_input"
    }
    assert "start again without one" in edited[1]
    assert "issued for another tool or list" in foreign[1]
    assert other_status[1] == dropped_thread[1]
    assert "'status' or 'thread' filters; pass the same ones" in other_status[1]
    assert other_order[1] == "'cursor' was issued for 'order' 'updated'; pass the same 'order', or start again."
    assert "'cursor' is for action 'list'" in misplaced[1]
    assert "'cursor' is empty" in empty[1]


async def test_a_cursor_from_the_rest_list_continues_in_manage_sequence_list(app: Served) -> None:
    async with connected(app) as client:
        written = await apart(app, client, 4)
        async with api_client(app) as api:
            first = body(await api.get("/sequences", params={"limit": "2", "order": "created"}))
        rest = await call(client, "manage_sequence", action="list", cursor=first["nextCursor"], order="created")
    assert [s["sequenceId"] for s in first["sequences"] + rest["sequences"]] == written
    assert rest["nextCursor"] is None


async def test_the_cursor_of_a_thread_filter_with_the_longest_folding_name_is_accepted_on_the_tool_and_rest(
    app: Served,
) -> None:
    widest = WIDEST_NAME
    async with connected(app) as client:
        await create(client, widest)
        await apart(app, client, 2, threads=[widest])
        page = await call(client, "manage_sequence", action="list", thread=widest, limit=1)
        assert len(page["nextCursor"]) > 500
        more = await call(client, "manage_sequence", action="list", thread=widest, limit=1, cursor=page["nextCursor"])
    async with api_client(app) as api:
        rest = body(
            await api.get("/sequences", params={"thread": widest, "limit": 1, "cursor": page["nextCursor"]}), 200
        )
    assert len(more["sequences"]) == len(rest["sequences"]) == 1
    assert (
        more["sequences"][0]["sequenceId"] == rest["sequences"][0]["sequenceId"] != page["sequences"][0]["sequenceId"]
    )
