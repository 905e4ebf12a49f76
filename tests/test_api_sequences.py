"""`/api/v1/sequences` through a real server: the list and its cursor, history, delete, lifecycle actions."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from mcp import Client

from tests.api_support import api_client, body, refusal
from tests.support import structured, text
from tests.thread_support import Served, call, connected, create, refused, served, think
from thoughtline.config import Settings

pytestmark = pytest.mark.anyio
MISSING = "seq_" + "0" * 32


@pytest.fixture
def app(settings: Settings) -> Iterator[Served]:
    with served(settings) as running:
        yield running


async def sequences_apart(app: Served, client: Client, count: int) -> list[str]:
    """Start `count` sequences a millisecond apart (distinct times, so each order is decided by time)."""
    written = []
    for i in range(count):
        app.clock.advance(0.001)
        written.append(await think(client, f"sequence {i}"))
    return written


async def test_the_list_pages_through_every_sequence_once_newest_first(app: Served) -> None:
    async with connected(app) as client:
        written = await sequences_apart(app, client, 5)
    async with api_client(app) as api:
        first = body(await api.get("/sequences", params={"limit": "2"}))
        seen = [s["sequenceId"] for s in first["sequences"]]
        cursor = first["nextCursor"]
        while cursor:
            page = body(await api.get("/sequences", params={"limit": "2", "cursor": cursor}))
            seen += [s["sequenceId"] for s in page["sequences"]]
            cursor = page["nextCursor"]
    assert seen == list(reversed(written))
    assert set(first["sequences"][0]) >= {"sequenceId", "title", "status", "thoughtHistoryLength", "updatedAt"}


async def test_the_list_filters_by_status_and_thread_like_manage_sequence(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "pg")
        member = await think(client, "in the thread", threads=["pg"])
        done = await think(client, "finished", done=True)
        tool = await call(client, "manage_sequence", action="list", thread="pg")
    async with api_client(app) as api:
        in_thread = body(await api.get("/sequences", params={"thread": "PG"}))
        completed = body(await api.get("/sequences", params={"status": "completed"}))
        unknown = refusal(await api.get("/sequences", params={"thread": "nope"}), 404)
        bad_status = refusal(await api.get("/sequences", params={"status": "done"}), 400)
        too_many = refusal(await api.get("/sequences", params={"limit": "51"}), 400)
        other_digits = refusal(await api.get("/sequences", params={"limit": "\u0662"}), 400)
    assert [s["sequenceId"] for s in in_thread["sequences"]] == [member]
    assert in_thread["sequences"] == tool["sequences"]
    assert [s["sequenceId"] for s in completed["sequences"]] == [done]
    assert unknown[0] == "thread_not_found"
    assert bad_status == ("invalid_input", "'status' must be one of active, paused, completed, abandoned; got 'done'.")
    assert too_many[0] == "invalid_input"
    assert other_digits[0] == "invalid_input"
    assert "digits 0-9" in other_digits[1]


async def test_a_list_cursor_is_refused_when_edited_reused_with_other_filters_or_of_another_purpose(
    app: Served,
) -> None:
    async with connected(app) as client:
        for i in range(3):
            await think(client, f"sequence {i}")
        seq = await think(client, "one")
        await think(client, "two", 2, sequenceId=seq)
        history = await call(client, "get_thought_history", sequenceId=seq, limit=1)
    async with api_client(app) as api:
        cursor = body(await api.get("/sequences", params={"limit": "1"}))["nextCursor"]
        forged = refusal(await api.get("/sequences", params={"cursor": cursor[:-2] + "xx"}), 400)
        other = refusal(await api.get("/sequences", params={"cursor": cursor, "status": "active"}), 400)
        foreign = refusal(await api.get("/sequences", params={"cursor": history["nextCursor"]}), 400)
        crossed = refusal(await api.get(f"/sequences/{seq}", params={"cursor": cursor}), 400)
    assert forged[0] == other[0] == foreign[0] == crossed[0] == "invalid_input"
    assert "issued for another tool or list" in foreign[1]
    assert "issued for another tool or list" in crossed[1]
    assert "'cursor'" in forged[1]
    assert "filters" in other[1]


async def test_a_sequences_kind_is_read_back_everywhere_and_set_once(app: Served) -> None:
    async with connected(app) as client:
        seq = await think(client, "Trace the flaky invoice export", kind="debug")
        plain = await think(client, "Plan the invoice rewrite")
        await think(client, "Same label again", 2, sequenceId=seq, kind="debug")
        relabel = await refused(
            client,
            "sequentialthinking",
            thought="Call it a plan",
            nextThoughtNeeded=True,
            thoughtNumber=3,
            totalThoughts=3,
            sequenceId=seq,
            kind="plan",
        )
        history = await client.call_tool("get_thought_history", {"sequenceId": seq})
        listed = await client.call_tool("manage_sequence", {"action": "list"})
        found = {by: await call(client, "search_thoughts", query="invoice", by=by) for by in ("thought", "sequence")}
    async with api_client(app) as api:
        rest_list = body(await api.get("/sequences"))
        rest_history = body(await api.get(f"/sequences/{seq}"))
    assert relabel[0] == "invalid_input"
    assert f"sequence {seq} already has kind 'debug'" in relabel[1]
    assert structured(history)["sequence"]["kind"] == rest_history["sequence"]["kind"] == "debug"
    assert f"Sequence {seq} · active · kind: debug · 2 thoughts" in text(history)
    kinds = {s["sequenceId"]: s["kind"] for s in structured(listed)["sequences"]}
    assert kinds == {s["sequenceId"]: s["kind"] for s in rest_list["sequences"]} == {seq: "debug", plain: None}
    assert f"{seq} [active · kind: debug]" in text(listed)
    for by, result in found.items():
        assert {r["sequenceId"]: r["kind"] for r in result["results"]} == {seq: "debug", plain: None}, by


async def test_a_walk_in_created_order_meets_every_sequence_once_while_sequences_change_between_pages(
    app: Served,
) -> None:
    async with connected(app) as client:
        written = await sequences_apart(app, client, 7)
        async with api_client(app) as api:
            seen: list[str] = []
            first = body(await api.get("/sequences", params={"limit": "2", "order": "created"}))
            seen += [s["sequenceId"] for s in first["sequences"]]
            # Between two pages: pause one not listed yet, write to another, start a new one.
            app.clock.advance(0.001)
            body(await api.post(f"/sequences/{written[4]}/pause"))
            await think(client, "more", 2, sequenceId=written[5])
            app.clock.advance(0.001)
            started = await think(client, "a new sequence")
            cursor = first["nextCursor"]
            while cursor:
                page = body(await api.get("/sequences", params={"limit": "2", "order": "created", "cursor": cursor}))
                seen += [s["sequenceId"] for s in page["sequences"]]
                cursor = page["nextCursor"]
    assert seen == [*written, started]


async def test_a_list_cursor_is_refused_with_the_other_order_and_an_unknown_order_is_refused(app: Served) -> None:
    async with connected(app) as client:
        for i in range(3):
            await think(client, f"sequence {i}")
    async with api_client(app) as api:
        by_update = body(await api.get("/sequences", params={"limit": "1"}))["nextCursor"]
        by_creation = body(await api.get("/sequences", params={"limit": "1", "order": "created"}))["nextCursor"]
        crossed = refusal(await api.get("/sequences", params={"cursor": by_update, "order": "created"}), 400)
        back = refusal(await api.get("/sequences", params={"cursor": by_creation, "order": "updated"}), 400)
        unknown = refusal(await api.get("/sequences", params={"order": "newest"}), 400)
    again = "; pass the same 'order', or start again."
    assert crossed == ("invalid_input", "'cursor' was issued for 'order' 'updated'" + again)
    assert back == ("invalid_input", "'cursor' was issued for 'order' 'created'" + again)
    assert unknown == ("invalid_input", "'order' must be one of updated, created; got 'newest'.")


async def test_history_is_the_tools_shape_and_pages_with_its_cursor(app: Served) -> None:
    async with connected(app) as client:
        seq = await think(client, "one")
        await think(client, "two", 2, sequenceId=seq)
        await think(client, "alt", 3, sequenceId=seq, branchId="alt", branchFromThought=1)
        tool = await call(client, "get_thought_history", sequenceId=seq, limit=2)
        tool_next = await call(client, "get_thought_history", sequenceId=seq, limit=2, cursor=tool["nextCursor"])
        branch = await call(client, "get_thought_history", sequenceId=seq, branchId="alt", order="desc")
    async with api_client(app) as api:
        rest = body(await api.get(f"/sequences/{seq}", params={"limit": "2"}))
        rest_next = body(await api.get(f"/sequences/{seq}", params={"limit": "2", "cursor": rest["nextCursor"]}))
        rest_branch = body(await api.get(f"/sequences/{seq}", params={"branchId": "alt", "order": "desc"}))
        missing = refusal(await api.get(f"/sequences/{MISSING}"), 404)
        no_branch = refusal(await api.get(f"/sequences/{seq}", params={"branchId": "zzz"}), 404)
        bad_limit = refusal(await api.get(f"/sequences/{seq}", params={"limit": "101"}), 400)
        repeated = refusal(await api.get(f"/sequences/{seq}?limit=1&limit=2"), 400)
    assert rest == tool
    assert rest_next == tool_next
    assert rest_branch == branch
    assert [missing[0], no_branch[0], bad_limit[0]] == ["sequence_not_found", "branch_not_found", "invalid_input"]
    assert "'limit' is given 2 times" in repeated[1]


async def test_delete_needs_confirm_and_removes_the_sequence(app: Served) -> None:
    async with connected(app) as client:
        seq = await think(client, "to delete")
        await think(client, "second", 2, sequenceId=seq)
    async with api_client(app) as api:
        unconfirmed = refusal(await api.delete(f"/sequences/{seq}"), 400)
        kept = app.counts()["thoughts"]
        deleted = body(await api.delete(f"/sequences/{seq}", params={"confirm": "true"}))
        again = refusal(await api.delete(f"/sequences/{seq}", params={"confirm": "true"}), 404)
    assert unconfirmed[0] == "invalid_input"
    assert kept == 2
    assert deleted == {"sequenceId": seq, "deleted": True, "deletedThoughts": 2}
    assert again[0] == "sequence_not_found"
    assert app.counts()["thoughts"] == 0


async def test_lifecycle_actions_set_the_status_and_resume_returns_the_last_thought(app: Served) -> None:
    async with connected(app) as client:
        seq = await think(client, "start")
        await think(client, "where I stopped", 2, sequenceId=seq)
    async with api_client(app) as api:
        paused = body(await api.post(f"/sequences/{seq}/pause"))
        resumed = body(await api.post(f"/sequences/{seq}/resume"))
        completed = body(await api.post(f"/sequences/{seq}/complete"))
        abandoned = body(await api.post(f"/sequences/{seq}/abandon"))
        unknown = refusal(await api.post(f"/sequences/{seq}/archive"), 400)
        missing = refusal(await api.post(f"/sequences/{MISSING}/pause"), 404)
        wrong_method = refusal(await api.get(f"/sequences/{seq}/pause"), 405)
    assert [paused["status"], resumed["status"], completed["status"], abandoned["status"]] == [
        "paused",
        "active",
        "completed",
        "abandoned",
    ]
    assert resumed["lastThought"]["thought"] == "where I stopped"
    assert "lastThought" not in paused
    assert unknown[1] == "'action' must be one of pause, resume, complete, abandon; got 'archive'."
    assert missing[0] == "sequence_not_found"
    assert wrong_method[0] == "method_not_allowed"


async def test_a_history_cursor_of_another_branch_or_order_is_refused_in_words_not_python_values(
    app: Served,
) -> None:
    async with connected(app) as client:
        seq = await think(client, "one")
        await think(client, "two", 2, sequenceId=seq)
    async with api_client(app) as api:
        cursor = body(await api.get(f"/sequences/{seq}", params={"limit": "1"}))["nextCursor"]
        code, message = refusal(
            await api.get(f"/sequences/{seq}", params={"limit": "1", "order": "desc", "cursor": cursor}), 400
        )
    assert code == "invalid_input"
    assert "None" not in message
    assert "=" not in message
    assert "no 'branchId' (every thought) in asc order" in message


async def test_rest_not_found_errors_point_at_rest_routes_not_mcp_tools(app: Served) -> None:
    async with api_client(app) as api:
        body(await api.post("/threads", json={"name": "real"}), 201)
        thread = refusal(await api.get("/threads/ghost"), 404)
        pinned = refusal(await api.put(f"/threads/real/members/{MISSING}"), 404)
        history = refusal(await api.get(f"/sequences/{MISSING}"), 404)
        proposal = refusal(await api.post("/proposals/prp_99/accept"), 404)
    assert "GET /api/v1/threads" in thread[1]
    assert "GET /api/v1/sequences" in pinned[1]
    assert "GET /api/v1/sequences" in history[1]
    assert "GET /api/v1/proposals" in proposal[1]
    for message in (thread[1], pinned[1], history[1], proposal[1]):
        assert not any(tool in message for tool in ("configure_thread", "manage_sequence", "review_proposals"))
        assert "sequentialthinking" not in message
