"""`/api/v1/proposals` through a real server with the real model: list after matching, accept, reject."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.api_support import api_client, body, refusal
from tests.sample_notes import HOSE
from tests.test_threads_proposals import BREAD, GARDEN, RUN, RUNNING, write
from tests.thread_support import Served, call, connected, create, served
from thoughtline.config import Settings
from thoughtline.library.embed import MiniLMEmbedder

pytestmark = pytest.mark.anyio


@pytest.fixture
def app(settings: Settings, embedder: MiniLMEmbedder) -> Iterator[Served]:
    with served(settings, embedder_factory=lambda: embedder) as running:
        yield running


async def test_the_list_right_after_a_write_holds_its_proposals_as_the_tool_lists_them(app: Served) -> None:
    async with api_client(app) as api:
        body(await api.post("/threads", json={"name": GARDEN[0], "description": GARDEN[1]}), 201)
        body(await api.post("/threads", json={"name": RUNNING[0], "description": RUNNING[1]}), 201)
        async with connected(app) as client:
            hose = await write(client, HOSE)
            run = await write(client, RUN)
            await write(client, BREAD)
            rest = body(await api.get("/proposals"))
            tool = await call(client, "review_proposals", action="list")
    assert rest == {"proposals": tool["proposals"], "nextCursor": tool["nextCursor"], "pendingCount": 2}
    assert sorted((p["thread"], p["sequenceId"]) for p in rest["proposals"]) == sorted(
        [(GARDEN[0], hose), (RUNNING[0], run)]
    )


async def test_a_page_cursor_continues_and_is_bound_to_its_thread_filter(app: Served) -> None:
    async with connected(app) as client:
        await create(client, *GARDEN)
        await create(client, *RUNNING)
        await write(client, HOSE)
        await write(client, RUN)
    async with api_client(app) as api:
        first = body(await api.get("/proposals", params={"limit": "1"}))
        second = body(await api.get("/proposals", params={"limit": "1", "cursor": first["nextCursor"]}))
        other = refusal(
            await api.get("/proposals", params={"limit": "1", "cursor": first["nextCursor"], "thread": GARDEN[0]}), 400
        )
        unknown = refusal(await api.get("/proposals", params={"thread": "nope"}), 404)
        too_many = refusal(await api.get("/proposals", params={"limit": "51"}), 400)
    assert len(first["proposals"]) == len(second["proposals"]) == 1
    assert first["proposals"][0]["proposalId"] != second["proposals"][0]["proposalId"]
    assert second["nextCursor"] is None
    assert other[0] == too_many[0] == "invalid_input"
    assert "'thread'" in other[1]
    assert unknown[0] == "thread_not_found"


async def test_accept_confirms_the_member_and_reject_is_remembered(app: Served) -> None:
    async with connected(app) as client:
        await create(client, *GARDEN)
        await create(client, *RUNNING)
        hose = await write(client, HOSE)
        run = await write(client, RUN)
    async with api_client(app) as api:
        listed = {p["sequenceId"]: p["proposalId"] for p in body(await api.get("/proposals"))["proposals"]}
        accepted = body(await api.post(f"/proposals/{listed[hose]}/accept"))
        rejected = body(await api.post(f"/proposals/{listed[run]}/reject"))
        again = refusal(await api.post(f"/proposals/{listed[hose]}/accept"), 404)
        malformed = refusal(await api.post("/proposals/123/reject"), 400)
        brief = body(await api.get(f"/threads/{GARDEN[0]}/briefing"))
        left = body(await api.get("/proposals"))
    assert accepted == {
        "proposalId": listed[hose],
        "thread": GARDEN[0],
        "sequenceId": hose,
        "member": True,
        "addedBy": "review",
    }
    assert rejected == {"proposalId": listed[run], "thread": RUNNING[0], "sequenceId": run, "member": False}
    assert again[0] == "proposal_not_found"
    assert malformed[0] == "invalid_input"
    assert [(m["sequenceId"], m["addedBy"]) for m in brief["members"]] == [(hose, "review")]
    assert left["proposals"] == []


async def test_an_archived_threads_proposal_waits_with_a_conflict(app: Served) -> None:
    async with connected(app) as client:
        await create(client, *GARDEN)
        await write(client, HOSE)
    async with api_client(app) as api:
        (proposal,) = body(await api.get("/proposals"))["proposals"]
        body(await api.patch(f"/threads/{GARDEN[0]}", json={"status": "archived"}))
        code, message = refusal(await api.post(f"/proposals/{proposal['proposalId']}/accept"), 409)
    assert code == "thread_archived"
    assert 'PATCH /api/v1/threads/{name} and {"status": "active"}' in message
    assert "configure_thread" not in message


async def test_a_malformed_proposal_id_is_refused_in_the_routes_words(app: Served) -> None:
    async with api_client(app) as api:
        code, message = refusal(await api.post("/proposals/notanid/accept"), 400)
    assert code == "invalid_input"
    assert "'notanid' in the path is not a proposal id" in message
    assert "GET /api/v1/proposals" in message
    assert "action" not in message
    assert "proposalId" not in message
