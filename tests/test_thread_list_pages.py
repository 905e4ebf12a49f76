"""The thread list is paged by name on every surface: configure_thread list, GET /api/v1/threads, /library/threads."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.api_support import api_client, body, refusal
from tests.pages_support import running_library
from tests.support import TOKEN, mcp_client, text
from tests.test_pages_signin import signed_in
from tests.thread_support import WIDEST_NAME, Served, call, connected, create, refused, served
from thoughtline.config import Settings
from thoughtline.library.threads import DEFAULT_THREAD_PAGE, MAX_THREAD_PAGE

pytestmark = pytest.mark.anyio

NAMES = ["Echo", "alpha", "Delta", "bravo", "charlie"]


@pytest.fixture
def app(settings: Settings) -> Iterator[Served]:
    with served(settings) as running:
        yield running


async def test_list_pages_through_every_thread_by_name_with_a_count_of_all(app: Served) -> None:
    async with connected(app) as client:
        for name in NAMES:
            await create(client, name)
        await call(client, "configure_thread", action="archive", name="Delta")
        pages = [await call(client, "configure_thread", action="list", includeArchived=True, limit=2)]
        while pages[-1]["nextCursor"]:
            more = {"includeArchived": True, "limit": 2, "cursor": pages[-1]["nextCursor"]}
            pages.append(await call(client, "configure_thread", action="list", **more))
        first = text(await client.call_tool("configure_thread", {"action": "list", "limit": 2}))
        active = await call(client, "configure_thread", action="list")
    assert [[t["name"] for t in p["threads"]] for p in pages] == [["alpha", "bravo"], ["charlie", "Delta"], ["Echo"]]
    assert {p["threadCount"] for p in pages} == {5}
    assert first.startswith("4 threads by name; 2 listed here. For the next page call configure_thread action 'list'")
    assert ([t["name"] for t in active["threads"]], active["threadCount"], active["nextCursor"]) == (
        ["alpha", "bravo", "charlie", "Echo"],
        4,
        None,
    )


async def test_a_cursor_is_refused_with_another_include_archived_or_a_bad_limit(app: Served) -> None:
    async with connected(app) as client:
        for name in NAMES:
            await create(client, name)
        page = await call(client, "configure_thread", action="list", limit=1)
        other = await refused(
            client, "configure_thread", action="list", includeArchived=True, cursor=page["nextCursor"]
        )
        forged = await refused(client, "configure_thread", action="list", cursor="not-a-cursor")
        too_many = await refused(client, "configure_thread", action="list", limit=MAX_THREAD_PAGE + 1)
    assert other == (
        "invalid_input",
        "'cursor' was issued for another 'includeArchived'; pass the same one, or start again.",
    )
    assert forged[0] == too_many[0] == "invalid_input"
    assert "limit" in too_many[1]


async def test_the_api_pages_the_same_threads_as_the_tool(app: Served) -> None:
    async with connected(app) as client:
        for name in NAMES:
            await create(client, name)
        tool = await call(client, "configure_thread", action="list", limit=3)
    async with api_client(app) as api:
        rest = body(await api.get("/threads", params={"limit": "3"}))
        rest_next = body(await api.get("/threads", params={"limit": "3", "cursor": rest["nextCursor"]}))
        bad = refusal(await api.get("/threads", params={"limit": str(MAX_THREAD_PAGE + 1)}), 400)
    assert rest == {k: v for k, v in tool.items() if k != "action"}
    assert [t["name"] for t in rest["threads"]] == ["alpha", "bravo", "charlie"]
    assert rest["threadCount"] == 5
    assert [t["name"] for t in rest_next["threads"]] == ["Delta", "Echo"]
    assert rest_next["nextCursor"] is None
    assert bad[0] == "invalid_input"


async def test_the_threads_page_shows_a_page_of_threads_and_links_to_the_next(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, httpx.AsyncClient() as http:
        async with mcp_client(library.url, TOKEN) as client:
            for i in range(DEFAULT_THREAD_PAGE + 1):
                await client.call_tool("configure_thread", {"action": "create", "name": f"t{i:03d}"})
        await signed_in(library, http)
        first = await http.get(library.url + "/library/threads")
        link = re.search(r'href="(/library/threads\?cursor=[^"]+)">Next page', first.text)
        assert link
        second = await http.get(library.url + link.group(1).replace("&amp;", "&"))
    # The seeded store already holds 'caching', which sorts first.
    assert first.text.count('class="row"') == DEFAULT_THREAD_PAGE
    assert f"{DEFAULT_THREAD_PAGE + 2} threads" in first.text
    assert re.findall(r'class="title" href="/library/threads/([^"]+)"', second.text) == ["t049", "t050"]
    assert "Next page" not in second.text


async def test_the_cursor_after_the_longest_folding_name_is_accepted_on_the_tool_and_rest(app: Served) -> None:
    widest = WIDEST_NAME
    async with connected(app) as client:
        await create(client, widest)
        await create(client, "\U00020000zz")  # sorts after it
        page = await call(client, "configure_thread", action="list", limit=1)
        assert len(page["nextCursor"]) > 500
        more = await call(client, "configure_thread", action="list", limit=1, cursor=page["nextCursor"])
    async with api_client(app) as api:
        rest = body(await api.get("/threads", params={"limit": 1, "cursor": page["nextCursor"]}), 200)
    assert [t["name"] for t in page["threads"]] == [widest]
    assert [t["name"] for t in more["threads"]] == [t["name"] for t in rest["threads"]] == ["\U00020000zz"]
