"""Result and error texts say the right thing in the right words (real app, real MCP client)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.support import structured, text
from tests.thread_support import Served, call, connected, create, refused, served, think
from thoughtline.config import Settings
from thoughtline.library.related_open import Related
from thoughtline.mcp.core_tools import related_line

pytestmark = pytest.mark.anyio


@pytest.fixture
def app(settings: Settings) -> Iterator[Served]:
    with served(settings) as running:
        yield running


async def test_a_missing_action_is_called_required_on_every_tool_that_takes_one(app: Served) -> None:
    async with connected(app) as client:
        await think(client, "one")
        before = app.counts()
        said = [await refused(client, tool) for tool in ("manage_sequence", "configure_thread", "review_proposals")]
    for code, message in said:
        assert code == "invalid_input"
        assert message.startswith("'action' is required: one of ")
        assert "None" not in message
    assert app.counts() == before


async def test_rename_without_new_name_asks_for_the_new_name(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "pg")
        code, message = await refused(client, "configure_thread", action="rename", name="pg")
    assert code == "invalid_input"
    assert message == "'newName' is required with rename: the thread's new name, 1-64 characters."


async def test_a_main_path_revision_refusal_mentions_no_fork_point(app: Served) -> None:
    async with connected(app) as client:
        seq = await think(client, "one")
        code, message = await refused(
            client,
            "sequentialthinking",
            thought="fix",
            thoughtNumber=2,
            totalThoughts=2,
            nextThoughtNeeded=True,
            sequenceId=seq,
            isRevision=True,
            revisesThought=99,
        )
    assert code == "revision_target_not_found"
    assert "fork point" not in message
    assert "written on the main path" in message


async def test_a_cursor_from_another_tool_is_called_one_issued_for_another_tool_or_list(app: Served) -> None:
    async with connected(app) as client:
        for name in ("a", "b"):
            await create(client, name)
        seq = await think(client, "one")
        threads_cursor = (await call(client, "configure_thread", action="list", limit=1))["nextCursor"]
        history = await refused(client, "get_thought_history", sequenceId=seq, cursor=threads_cursor)
        listing = await refused(client, "manage_sequence", action="list", cursor=threads_cursor)
        edited = await refused(client, "get_thought_history", sequenceId=seq, cursor=threads_cursor[:-2] + "xx")
    for code, message in (history, listing):
        assert code == "invalid_input"
        assert "'cursor' was issued for another tool or list" in message
    assert "edited or foreign" in edited[1]


async def test_unknown_argument_names_are_cut_and_counted_like_values(app: Served) -> None:
    async with connected(app) as client:
        long_name = await client.call_tool("get_thought_history", {"sequenceId": "seq_" + "0" * 32, "x" * 200_000: 1})
        many = await client.call_tool("search_thoughts", {"query": "q", **{f"extra{i}": 1 for i in range(50)}})
    assert long_name.is_error
    assert many.is_error
    assert len(text(long_name)) < 400
    assert "'" + "x" * 40 + "'…" in text(long_name)
    assert "and 45 more" in text(many)
    assert len(text(many)) < 600


def iso_at(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).isoformat().replace("+00:00", "Z")


async def test_counts_of_one_read_in_the_singular_and_a_nested_branch_is_of_branch_a(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "pg")
        since = iso_at(app.clock.now())
        app.clock.advance(1)
        seq = await think(client, "Plan", threads=["pg"], event="decision")
        briefing = await client.call_tool("thread_briefing", {"name": "pg", "since": since})
        await think(client, "two", 2, sequenceId=seq)
        await think(client, "A 3", 3, sequenceId=seq, branchId="A", branchFromThought=2)
        await think(client, "B 4", 4, sequenceId=seq, branchId="B", branchFromThought=3, branchFromBranchId="A")
        history = text(await client.call_tool("get_thought_history", {"sequenceId": seq}))
    assert "1 new event, 1 new member;" in text(briefing)
    assert "Branch A: from thought 2 of the main path" in history
    assert "Branch B: from thought 3 of branch A" in history


def test_the_related_line_reads_it_for_one_sequence_and_them_for_several() -> None:
    def related(n: int) -> Related:
        return Related(f"seq_{n}", f"Title {n}", "active", "2026-01-01T00:00:00Z", "snippet", 0.9)

    assert related_line([related(1)]).endswith("; read it with get_thought_history.")
    assert related_line([related(1), related(2)]).endswith("; read them with get_thought_history.")


# --- sequentialthinking results --------------------------------------------------------------


async def test_a_nested_branch_first_write_names_its_parent_branch(app: Served) -> None:
    async with connected(app) as client:
        seq = await think(client, "one")
        await think(client, "two", 2, sequenceId=seq)
        await think(client, "A 1", 1, sequenceId=seq, branchId="A", branchFromThought=2)
        await think(client, "A 2", 2, sequenceId=seq, branchId="A")
        nested = await client.call_tool(
            "sequentialthinking",
            {
                "thought": "B 1",
                "thoughtNumber": 1,
                "totalThoughts": 2,
                "nextThoughtNeeded": True,
                "sequenceId": seq,
                "branchId": "B",
                "branchFromThought": 2,
                "branchFromBranchId": "A",
            },
        )
    assert text(nested).splitlines()[0] == "Branch B from thought 2 of branch A · 1/2"


async def test_a_write_to_a_paused_sequence_says_it_is_active_again_without_calling_it_reopened(app: Served) -> None:
    async with connected(app) as client:
        seq = await think(client, "one")
        await call(client, "manage_sequence", action="pause", sequenceId=seq)
        args: dict[str, Any] = {"thought": "two", "thoughtNumber": 2, "totalThoughts": 3, "nextThoughtNeeded": True}
        written = await client.call_tool("sequentialthinking", {**args, "sequenceId": seq})
        history = await call(client, "get_thought_history", sequenceId=seq)
    assert "Note: this sequence was paused; this thought makes it active again." in text(written).splitlines()
    assert "reopened" not in structured(written)
    assert history["sequence"]["status"] == "active"


async def test_manage_sequence_declares_itself_a_write_tool_that_is_not_idempotent(app: Served) -> None:
    async with connected(app) as client:
        tools = {t.name: t.annotations for t in (await client.list_tools()).tools}
    manage, delete = tools["manage_sequence"], tools["delete_thought_sequence"]
    assert manage is not None
    assert delete is not None
    assert (manage.read_only_hint, manage.destructive_hint, manage.idempotent_hint) == (False, False, False)
    assert (delete.read_only_hint, delete.destructive_hint) == (False, True)


async def test_the_threads_schema_says_a_lone_name_string_is_taken_as_a_list_and_it_is(app: Served) -> None:
    async with connected(app) as client:
        tools = {t.name: t.input_schema for t in (await client.list_tools()).tools}
        await create(client, "pg")
        seq = await think(client, "one", threads="pg")
        history = await call(client, "get_thought_history", sequenceId=seq)
    described = tools["sequentialthinking"]["properties"]["threads"]["description"]
    assert 'One name sent as a plain string ("billing") is taken as a list of that one name.' in described
    assert history["sequence"]["threads"] == ["pg"]
