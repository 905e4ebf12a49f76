"""A briefing stays bounded however long a thread runs: newest open items and members, with counts of all."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from mcp import Client

from tests.api_support import api_client, body
from tests.pages_support import running_library
from tests.support import TOKEN, mcp_client, text
from tests.test_pages_signin import signed_in
from tests.thread_support import Served, call, connected, create, served, think
from thoughtline.config import Settings
from thoughtline.library.briefing import MAX_MEMBERS, MAX_OPEN_ITEMS
from thoughtline.storage.history import THREADS_SHOWN

pytestmark = pytest.mark.anyio

MEMBERS = MAX_MEMBERS + 3
QUESTIONS = MAX_OPEN_ITEMS + 2


@pytest.fixture
def app(settings: Settings) -> Iterator[Served]:
    with served(settings) as running:
        yield running


async def _fill(client: Client) -> list[str]:
    """MEMBERS sequences in 'big', each opening a blocker; the first QUESTIONS also ask a question."""
    ids = []
    for i in range(MEMBERS):
        seq = await think(client, f"Blocker {i}: the deploy is stuck", threads=["big"], event="blocker")
        if i < QUESTIONS:
            await think(client, f"Question {i}: why?", 2, sequenceId=seq, event="question")
        ids.append(seq)
    return ids


async def test_a_briefing_lists_the_newest_open_items_and_members_with_counts_of_all(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "big", "A long-running thread.")
        ids = await _fill(client)
        brief = await call(client, "thread_briefing", name="big", since="2020-01-01T00:00:00Z", eventsLimit=1)
        shown = text(await client.call_tool("thread_briefing", {"name": "big"}))
    async with api_client(app) as api:
        rest = body(await api.get("/threads/big/briefing", params={"since": "2020-01-01T00:00:00Z", "eventsLimit": 1}))
    assert rest == brief
    assert (brief["openBlockerCount"], brief["openQuestionCount"]) == (MEMBERS, QUESTIONS)
    newest_blockers = [f"Blocker {i}: the deploy is stuck" for i in range(MEMBERS - 1, MEMBERS - 11, -1)]
    assert [e["text"] for e in brief["openBlockers"]] == newest_blockers
    assert [e["text"] for e in brief["openQuestions"]] == [f"Question {i}: why?" for i in range(11, 1, -1)]
    assert brief["thread"]["memberCount"] == MEMBERS
    assert [m["sequenceId"] for m in brief["members"]] == ids[::-1][:MAX_MEMBERS]
    changed = brief["changedSince"]
    assert changed["newMemberCount"] == MEMBERS
    assert [m["sequenceId"] for m in changed["newMembers"]] == ids[::-1][:MAX_MEMBERS]
    assert f"Open blockers (the newest {MAX_OPEN_ITEMS} of {MEMBERS}; 13 older left out):" in shown
    assert f"Open questions (the newest {MAX_OPEN_ITEMS} of {QUESTIONS}; 2 older left out):" in shown
    assert f"Members (the {MAX_MEMBERS} most recently updated of {MEMBERS}; list the rest with manage_sequence" in shown


async def test_a_small_thread_lists_everything_and_says_nothing_is_left_out(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "small")
        await think(client, "Stuck on the vendor", threads=["small"], event="blocker")
        brief = await call(client, "thread_briefing", name="small")
        shown = text(await client.call_tool("thread_briefing", {"name": "small"}))
    assert (brief["openBlockerCount"], brief["openQuestionCount"], len(brief["members"])) == (1, 0, 1)
    assert "left out" not in shown
    assert "Open blockers:" in shown
    assert "Members:" in shown


async def test_the_thread_page_shows_the_bounded_briefing_and_links_to_every_member(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, httpx.AsyncClient() as http:
        async with mcp_client(library.url, TOKEN) as client:
            await client.call_tool("configure_thread", {"action": "create", "name": "big"})
            await _fill(client)
        await signed_in(library, http)
        page = await http.get(library.url + "/library/threads/big")
    blockers = page.text.split('id="blockers-h"')[1].split("</section>")[0]
    assert blockers.count("the deploy is stuck") == MAX_OPEN_ITEMS
    assert f"Open blockers (newest {MAX_OPEN_ITEMS} of {MEMBERS})" in page.text
    assert f'href="/library?thread=big">All {MEMBERS} members</a>' in page.text


async def test_a_history_header_names_the_first_threads_and_counts_them_all(app: Served) -> None:
    names = [f"t{i:02d}" for i in range(THREADS_SHOWN + 2)]
    async with connected(app) as client:
        for name in names:
            await create(client, name)
        seq = await think(client, "In many threads", threads=names[:16])
        for name in names[16:]:
            await call(client, "configure_thread", action="pin", name=name, sequenceId=seq)
        page = await call(client, "get_thought_history", sequenceId=seq, limit=1)
        shown = text(await client.call_tool("get_thought_history", {"sequenceId": seq, "limit": 1}))
    async with api_client(app) as api:
        rest = body(await api.get(f"/sequences/{seq}", params={"limit": "1"}))
    assert rest == page
    assert page["sequence"]["threads"] == names[:THREADS_SHOWN]
    assert page["sequence"]["threadCount"] == THREADS_SHOWN + 2
    assert f"In {THREADS_SHOWN + 2} threads (the first {THREADS_SHOWN} by name are listed in threads)" in shown
