"""Threads on the other tools: joins and events on `sequentialthinking`, history, filters, deletion, library off."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from mcp.shared.exceptions import MCPError

from tests.thread_support import Served, call, connected, create, refused, served, think
from thoughtline.config import Settings
from thoughtline.library.embed import MiniLMEmbedder

pytestmark = pytest.mark.anyio

FIRST = {"thought": "t", "nextThoughtNeeded": True, "thoughtNumber": 1, "totalThoughts": 2}


@pytest.fixture
def app(settings: Settings) -> Iterator[Served]:
    with served(settings) as running:
        yield running


async def test_threads_on_any_call_join_the_sequence_as_agent(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "Postgres")
        await create(client, "Hiring")
        seq = await think(client, threads=["postgres"])
        await think(client, "second", 2, sequenceId=seq, threads=["HIRING", "Postgres"])
        history = await call(client, "get_thought_history", sequenceId=seq)
        brief = await call(client, "thread_briefing", name="hiring")
    assert history["sequence"]["threads"] == ["Hiring", "Postgres"]
    assert [(m["sequenceId"], m["addedBy"]) for m in brief["members"]] == [(seq, "agent")]


@pytest.mark.parametrize("existing_sequence", [False, True], ids=["new-sequence", "existing-sequence"])
@pytest.mark.parametrize(
    ("threads", "code"),
    [(["nope"], "thread_not_found"), (["pg", "nope"], "thread_not_found"), (["old"], "thread_archived")],
)
async def test_an_unknown_or_archived_thread_writes_nothing(
    app: Served, existing_sequence: bool, threads: list[str], code: str
) -> None:
    async with connected(app) as client:
        await create(client, "pg")
        await create(client, "old")
        await call(client, "configure_thread", action="archive", name="old")
        extra = {}
        if existing_sequence:
            extra = {"sequenceId": await think(client), "thoughtNumber": 2}
        before = app.counts()
        got, message = await refused(client, "sequentialthinking", **{**FIRST, **extra, "threads": threads})
    assert got == code
    assert "configure_thread" in message
    assert app.counts() == before


async def test_a_member_of_an_archived_thread_keeps_naming_it_while_a_new_join_is_refused(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "arch")
        member = await think(client, threads=["arch"])
        pinned = await think(client)
        await call(client, "configure_thread", action="pin", name="arch", sequenceId=pinned)
        outsider = await think(client)
        await call(client, "configure_thread", action="archive", name="arch")
        for seq in (member, pinned):
            await think(client, "still on it", 2, sequenceId=seq, threads=["arch"])
        before = app.counts()
        got, message = await refused(
            client, "sequentialthinking", **{**FIRST, "thoughtNumber": 2, "sequenceId": outsider, "threads": ["arch"]}
        )
        brief = await call(client, "thread_briefing", name="arch")
    assert got == "thread_archived"
    assert "takes no new sequences" in message
    assert app.counts() == before
    assert sorted(m["sequenceId"] for m in brief["members"]) == sorted([member, pinned])


async def test_a_refused_join_stores_no_request_id_so_a_retry_after_creating_the_thread_writes_once(
    app: Served,
) -> None:
    async with connected(app) as client:
        await create(client, "old")
        await call(client, "configure_thread", action="archive", name="old")
        before = app.counts()
        sent = {**FIRST, "requestId": "req-1", "threads": ["pg"]}
        first = await refused(client, "sequentialthinking", **sent)
        retried = await refused(client, "sequentialthinking", **sent)
        archived = await refused(client, "sequentialthinking", **{**FIRST, "requestId": "req-2", "threads": ["old"]})
        after_refusals = app.counts()
        await create(client, "pg")
        written = await call(client, "sequentialthinking", **sent)
        again = await call(client, "sequentialthinking", **sent)
    assert (first[0], retried[0], archived[0]) == ("thread_not_found", "thread_not_found", "thread_archived")
    assert after_refusals == before
    assert again == written
    counts = app.counts()
    assert (counts["sequences"], counts["thoughts"], counts["thread_members"], counts["requests"]) == (1, 1, 1, 1)


async def test_history_lists_only_confirmed_threads_never_a_proposed_or_rejected_one(app: Served) -> None:
    async with connected(app) as client:
        for name in ("joined", "pinned", "proposed", "unpinned"):
            await create(client, name)
        seq = await think(client, threads=["joined"])
        await call(client, "configure_thread", action="pin", name="pinned", sequenceId=seq)
        await call(client, "configure_thread", action="pin", name="unpinned", sequenceId=seq)
        await call(client, "configure_thread", action="unpin", name="unpinned", sequenceId=seq)
        app.execute(
            "INSERT INTO thread_proposals(thread, sequence_id, similarity, proposed_at) "
            "SELECT t.id, s.id, 0.9, 1 FROM threads t, sequences s WHERE t.name = 'proposed'"
        )
        history = await call(client, "get_thought_history", sequenceId=seq)
    assert history["sequence"]["threads"] == ["joined", "pinned"]
    assert app.counts()["thread_proposals"] == 1


async def test_an_event_is_stored_on_the_thought_and_returned_by_history(app: Served) -> None:
    async with connected(app) as client:
        seq = await think(client, "We pick Postgres", event="decision")
        await think(client, "plain", 2, sequenceId=seq)
        page = await call(client, "get_thought_history", sequenceId=seq)
    assert [t.get("event") for t in page["thoughts"]] == ["decision", None]
    assert "event" not in page["thoughts"][1]


@pytest.mark.parametrize("kind", ["conclusion", "update"])
async def test_derived_event_kinds_are_refused_as_input_and_named_as_derived(app: Served, kind: str) -> None:
    async with connected(app) as client:
        got, message = await refused(client, "sequentialthinking", **FIRST, event=kind)
    assert got == "invalid_input"
    assert "derived" in message
    assert app.counts()["thoughts"] == 0


async def test_an_unknown_event_kind_is_invalid_input_listing_the_kinds(app: Served) -> None:
    async with connected(app) as client:
        got, message = await refused(client, "sequentialthinking", **FIRST, event="eureka")
    assert got == "invalid_input"
    assert "blocker_cleared" in message


async def test_a_completed_sequence_is_queued_for_matching_in_the_same_write(app: Served) -> None:
    async with connected(app) as client:
        done = await think(client, "finished", done=True)
        open_seq = await think(client, "still going")
        managed = await think(client, "completed by hand")
        await call(client, "manage_sequence", action="complete", sequenceId=managed)
    queued = app.query("SELECT s.public_id FROM thread_match_queue q JOIN sequences s ON s.id = q.sequence_id")
    assert sorted(r[0] for r in queued) == sorted([done, managed])
    assert open_seq not in [r[0] for r in queued]


async def test_deleting_a_sequence_removes_its_memberships_and_proposals(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "pg")
        await create(client, "other")
        gone = await think(client, threads=["pg"])
        kept = await think(client, threads=["pg"])
        app.execute(
            "INSERT INTO thread_proposals(thread, sequence_id, similarity, proposed_at) "
            "SELECT t.id, s.id, 0.9, 1 FROM threads t, sequences s WHERE t.name = 'other'"
        )
        await call(client, "delete_thought_sequence", sequenceId=gone, confirm=True)
        brief = await call(client, "thread_briefing", name="pg")
        listed = await call(client, "configure_thread", action="list")
    assert [m["sequenceId"] for m in brief["members"]] == [kept]
    assert {t["name"]: t["pendingProposals"] for t in listed["threads"]} == {"other": 1, "pg": 0}
    assert app.counts()["thread_members"] == 1


async def test_a_pending_proposal_goes_when_the_sequence_joins_at_write_time(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "pg")
        seq = await think(client)
        app.execute(
            "INSERT INTO thread_proposals(thread, sequence_id, similarity, proposed_at) "
            "SELECT t.id, s.id, 0.9, 1 FROM threads t, sequences s"
        )
        await think(client, "joins", 2, sequenceId=seq, threads=["pg"])
    assert app.counts()["thread_proposals"] == 0


async def test_manage_sequence_list_filters_by_thread(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "pg")
        member = await think(client, "member", threads=["pg"])
        await think(client, "outsider")
        listed = await call(client, "manage_sequence", action="list", thread="PG")
        everything = await call(client, "manage_sequence", action="list")
        unknown = await refused(client, "manage_sequence", action="list", thread="nope")
    assert [s["sequenceId"] for s in listed["sequences"]] == [member]
    assert len(everything["sequences"]) == 2
    assert unknown[0] == "thread_not_found"


async def test_search_with_a_thread_returns_only_its_members(settings: Settings, embedder: MiniLMEmbedder) -> None:
    with served(settings, embedder_factory=lambda: embedder) as app:
        async with connected(app) as client:
            await create(client, "pg")
            member = await think(client, "Postgres replication lag after the cut-over", threads=["pg"])
            await think(client, "Postgres replication lag on the staging cluster")
            await think(client, "Postgres replication lag in the reporting replica")
            unfiltered = await call(client, "search_thoughts", query="postgres replication lag")
            filtered = await call(client, "search_thoughts", query="postgres replication lag", thread="pg")
            unknown = await refused(client, "search_thoughts", query="postgres", thread="nope")
            await call(client, "configure_thread", action="archive", name="pg")
            archived = await call(client, "search_thoughts", query="postgres replication lag", thread="pg")
    assert len({r["sequenceId"] for r in unfiltered["results"]}) == 3
    assert [r["sequenceId"] for r in filtered["results"]] == [member]
    assert [r["sequenceId"] for r in archived["results"]] == [member]
    assert unknown[0] == "thread_not_found"


async def test_with_the_library_off_no_thread_tool_exists(settings: Settings) -> None:
    with served(settings.with_overrides(library=False)) as app:
        async with connected(app) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            with pytest.raises(MCPError, match="Unknown tool 'configure_thread'"):
                await client.call_tool("configure_thread", {"action": "list"})
            # sequentialthinking keeps its own arguments: events are stored, and a name that no
            # thread tool could have created is simply unknown.
            seq = await think(client, "decided", event="decision")
            page = await call(client, "get_thought_history", sequenceId=seq)
            joined = await refused(client, "sequentialthinking", **FIRST, threads=["pg"])
    assert not names & {"configure_thread", "thread_briefing", "review_proposals", "search_thoughts"}
    assert "sequentialthinking" in names
    assert page["thoughts"][0]["event"] == "decision"
    assert joined[0] == "thread_not_found"


async def test_with_the_library_off_a_thread_refusal_says_threads_are_off_not_to_use_configure_thread(
    settings: Settings,
) -> None:
    with served(settings) as on:
        async with connected(on) as client:
            await create(client, "old")
            await call(client, "configure_thread", action="archive", name="old")
    with served(settings.with_overrides(library=False)) as off:
        async with connected(off) as client:
            schema = next(t for t in (await client.list_tools()).tools if t.name == "sequentialthinking").input_schema
            unknown = await refused(client, "sequentialthinking", **FIRST, threads=["a;b"])
            archived = await refused(client, "sequentialthinking", **FIRST, threads=["old"])
        counts = off.counts()
    assert "Threads are off on this server" in schema["properties"]["threads"]["description"]
    assert unknown == (
        "thread_not_found",
        "thread 'a;b' does not exist; threads are off on this server (THOUGHTLINE_LIBRARY=off); "
        "drop 'threads' from the call.",
    )
    assert archived[0] == "thread_archived"
    assert archived[1].startswith("thread 'old' is archived and takes no new sequences; threads are off")
    assert "configure_thread" not in unknown[1] + archived[1]
    assert (counts["sequences"], counts["thoughts"]) == (0, 0)
