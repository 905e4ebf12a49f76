"""`configure_thread` (SPEC §5.3): every action and error through the real MCP client and server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # ships no type stubs; only `validate` is used
import pytest

from tests.support import mcp_client
from tests.thread_support import Served, call, connected, create, refused, served, think
from thoughtline.config import Settings

pytestmark = pytest.mark.anyio


@pytest.fixture
def app(settings: Settings) -> Iterator[Served]:
    with served(settings) as running:
        yield running


THREAD_FIELDS = {
    "name",
    "description",
    "type",
    "typeSource",
    "status",
    "lifecycle",
    "memberCount",
    "pendingProposals",
    "createdAt",
    "updatedAt",
    "lastActivityAt",
}


async def test_create_returns_the_thread_object_with_the_name_as_given(app: Served) -> None:
    async with connected(app) as client:
        result = await call(client, "configure_thread", action="create", name="Postgres Migration", description="Move.")
    thread = result["thread"]
    assert set(thread) == THREAD_FIELDS
    assert (thread["name"], thread["description"], thread["status"], thread["lifecycle"]) == (
        "Postgres Migration",
        "Move.",
        "active",
        "active",
    )
    assert (thread["memberCount"], thread["pendingProposals"]) == (0, 0)
    assert thread["createdAt"] == thread["updatedAt"] == thread["lastActivityAt"]


async def test_create_leaves_the_threads_backfill_pending(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "hiring", "Hiring a backend engineer.")
        await call(client, "configure_thread", action="set_description", name="hiring", description="Hiring two.")
    assert app.query("SELECT description_version, backfilled_version, backfill_after FROM threads") == [(2, 0, 0)]


@pytest.mark.parametrize("taken", ["postgres migration", "POSTGRES MIGRATION", "Postgres Migration"])
async def test_a_name_taken_in_any_case_is_thread_exists_and_writes_nothing(app: Served, taken: str) -> None:
    async with connected(app) as client:
        await create(client, "Postgres Migration")
        before = app.counts()
        code, message = await refused(client, "configure_thread", action="create", name=taken)
    assert code == "thread_exists"
    assert "'Postgres Migration'" in message
    assert app.counts() == before


async def test_names_compare_under_unicode_casefolding(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "Straße")
        code, _ = await refused(client, "configure_thread", action="create", name="STRASSE")
        briefing = await call(client, "thread_briefing", name="strasse")
    assert code == "thread_exists"
    assert briefing["thread"]["name"] == "Straße"


@pytest.mark.parametrize(
    ("name", "hint"),
    [("", "empty"), ("   ", "empty"), ("x" * 65, "at most 64"), (7, "string"), (" padded", "whitespace")],
)
async def test_a_bad_name_is_invalid_input_naming_the_problem(app: Served, name: Any, hint: str) -> None:
    async with connected(app) as client:
        code, message = await refused(client, "configure_thread", action="create", name=name)
    assert code == "invalid_input"
    assert hint in message
    assert app.counts()["threads"] == 0


async def test_a_64_character_name_is_accepted(app: Served) -> None:
    async with connected(app) as client:
        thread = await create(client, "n" * 64)
    assert thread["name"] == "n" * 64


async def test_list_hides_archived_threads_unless_asked(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "beta")
        await create(client, "alpha")
        await call(client, "configure_thread", action="archive", name="beta")
        shown = await call(client, "configure_thread", action="list")
        everything = await call(client, "configure_thread", action="list", includeArchived=True)
        as_string = await call(client, "configure_thread", action="list", includeArchived="true")
    assert [t["name"] for t in shown["threads"]] == ["alpha"]
    assert [(t["name"], t["status"]) for t in everything["threads"]] == [("alpha", "active"), ("beta", "archived")]
    assert as_string["threads"] == everything["threads"]


async def test_rename_keeps_memberships_and_refuses_a_taken_name(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "pg")
        await create(client, "other")
        seq = await think(client, threads=["pg"])
        renamed = await call(client, "configure_thread", action="rename", name="PG", newName="Postgres")
        history = await call(client, "get_thought_history", sequenceId=seq)
        taken = await refused(client, "configure_thread", action="rename", name="Postgres", newName="OTHER")
        recased = await call(client, "configure_thread", action="rename", name="postgres", newName="POSTGRES")
        missing = await refused(client, "configure_thread", action="rename", name="nope", newName="x")
    assert renamed["previousName"] == "pg"
    assert (renamed["thread"]["name"], renamed["thread"]["memberCount"]) == ("Postgres", 1)
    assert history["sequence"]["threads"] == ["Postgres"]
    assert taken[0] == "thread_exists"
    assert recased["thread"]["name"] == "POSTGRES"
    assert missing[0] == "thread_not_found"


async def test_set_description_replaces_it_and_needs_a_description(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "pg", "Old.")
        app.clock.advance(1)
        updated = await call(client, "configure_thread", action="set_description", name="pg", description="New one.")
        missing = await refused(client, "configure_thread", action="set_description", name="pg")
        unknown = await refused(client, "configure_thread", action="set_description", name="x", description="d")
        too_long = await refused(
            client, "configure_thread", action="set_description", name="pg", description="d" * 2001
        )
    assert updated["thread"]["description"] == "New one."
    assert updated["thread"]["updatedAt"] > updated["thread"]["createdAt"]
    assert (missing[0], unknown[0], too_long[0]) == ("invalid_input", "thread_not_found", "invalid_input")


async def test_archive_refuses_write_time_joins_until_unarchived(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "pg")
        archived = await call(client, "configure_thread", action="archive", name="pg")
        before = app.counts()
        code, message = await refused(
            client,
            "sequentialthinking",
            thought="t",
            nextThoughtNeeded=True,
            thoughtNumber=1,
            totalThoughts=1,
            threads=["pg"],
        )
        after = app.counts()
        restored = await call(client, "configure_thread", action="unarchive", name="pg")
        seq = await think(client, threads=["pg"])
        unknown = await refused(client, "configure_thread", action="archive", name="nope")
    assert (archived["thread"]["status"], archived["thread"]["lifecycle"]) == ("archived", "closed")
    assert code == "thread_archived"
    assert "unarchive" in message
    assert after == before
    assert restored["thread"]["status"] == "active"
    assert app.query(
        "SELECT count(*) FROM thread_members m JOIN sequences s ON s.id = m.sequence_id WHERE s.public_id = ?", (seq,)
    ) == [(1,)]
    assert unknown[0] == "thread_not_found"


async def test_archive_keeps_memberships(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "pg")
        await think(client, threads=["pg"])
        archived = await call(client, "configure_thread", action="archive", name="pg")
        await call(client, "configure_thread", action="unarchive", name="pg")
    assert archived["thread"]["memberCount"] == 1


async def test_delete_needs_confirm_and_removes_the_thread_but_never_a_sequence(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "pg")
        seq = await think(client, threads=["pg"])
        seq_rowid = app.query("SELECT id FROM sequences")[0][0]
        app.execute(
            "INSERT INTO thread_proposals(thread, sequence_id, similarity, proposed_at) "
            "SELECT id, ?, 0.9, 1 FROM threads",
            (seq_rowid,),
        )
        unconfirmed = await refused(client, "configure_thread", action="delete", name="pg")
        declined = await refused(client, "configure_thread", action="delete", name="pg", confirm=False)
        deleted = await call(client, "configure_thread", action="delete", name="PG", confirm=True)
        history = await call(client, "get_thought_history", sequenceId=seq)
        again = await refused(client, "configure_thread", action="delete", name="pg", confirm=True)
    assert (unconfirmed[0], declined[0]) == ("invalid_input", "invalid_input")
    assert deleted == {
        "action": "delete",
        "deleted": True,
        "name": "pg",
        "removedMemberships": 1,
        "removedProposals": 1,
    }
    assert history["sequence"]["threads"] == []
    counts = app.counts()
    assert (counts["threads"], counts["thread_members"], counts["thread_proposals"]) == (0, 0, 0)
    assert (counts["sequences"], counts["thoughts"]) == (1, 1)
    assert again[0] == "thread_not_found"


async def test_delete_takes_confirm_as_the_string_true_and_refuses_anything_else(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "pg")
        seq = await think(client, threads=["pg"])
        refusals = [
            await refused(client, "configure_thread", action="delete", name="pg", confirm=value)
            for value in ("yes", "false", 1, "1")
        ]
        kept = app.counts()
        deleted = await call(client, "configure_thread", action="delete", name="pg", confirm="true")
        history = await call(client, "get_thought_history", sequenceId=seq)
    assert {code for code, _ in refusals} == {"invalid_input"}
    assert all("'confirm'" in message for _, message in refusals)
    assert (kept["threads"], kept["thread_members"]) == (1, 1)
    assert deleted["deleted"] is True
    assert history["sequence"]["thoughtHistoryLength"] == 1
    assert app.counts()["threads"] == 0


async def test_pin_adds_a_user_member_and_unpin_removes_it_for_good(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "pg")
        seq = await think(client)
        original = await call(client, "get_thought_history", sequenceId=seq)
        app.clock.advance(1)
        pinned = await call(client, "configure_thread", action="pin", name="pg", sequenceId=seq)
        twice = await call(client, "configure_thread", action="pin", name="pg", sequenceId=seq)
        briefing = await call(client, "thread_briefing", name="pg")
        unpinned = await call(client, "configure_thread", action="unpin", name="pg", sequenceId=seq)
        history = await call(client, "get_thought_history", sequenceId=seq)
    assert (pinned["member"], pinned["changed"], pinned["thread"]["memberCount"]) == (True, True, 1)
    assert pinned["thread"]["lastActivityAt"] > pinned["thread"]["createdAt"]
    assert twice["changed"] is False
    assert [(m["sequenceId"], m["addedBy"]) for m in briefing["members"]] == [(seq, "user")]
    assert (unpinned["member"], unpinned["changed"], unpinned["thread"]["memberCount"]) == (False, True, 0)
    assert history["sequence"]["threads"] == []
    assert history["thoughts"] == original["thoughts"]  # membership never changes a thought
    assert app.counts()["thread_rejections"] == 1


async def test_pin_and_unpin_refuse_unknown_threads_and_sequences(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "pg")
        seq = await think(client)
        no_thread = await refused(client, "configure_thread", action="pin", name="nope", sequenceId=seq)
        no_seq = await refused(client, "configure_thread", action="pin", name="pg", sequenceId="seq_" + "0" * 32)
        bad_id = await refused(client, "configure_thread", action="unpin", name="pg", sequenceId="42")
        missing = await refused(client, "configure_thread", action="pin", name="pg")
    assert (no_thread[0], no_seq[0], bad_id[0], missing[0]) == (
        "thread_not_found",
        "sequence_not_found",
        "invalid_input",
        "invalid_input",
    )


async def test_unknown_actions_and_stray_arguments_are_invalid_input(app: Served) -> None:
    async with connected(app) as client:
        bad_action = await refused(client, "configure_thread", action="explode", name="x")
        no_action = await refused(client, "configure_thread", name="x")
        stray = await refused(client, "configure_thread", action="archive", name="x", description="d")
    assert bad_action[0] == no_action[0] == stray[0] == "invalid_input"
    assert "'description'" in stray[1]
    assert app.counts()["threads"] == 0


async def test_pending_proposals_counts_the_threads_proposal_rows(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "pg")
        await think(client)
        await think(client)
        app.execute(
            "INSERT INTO thread_proposals(thread, sequence_id, similarity, proposed_at) "
            "SELECT t.id, s.id, 0.8, 1 FROM threads t, sequences s"
        )
        listed = await call(client, "configure_thread", action="list")
    assert listed["threads"][0]["pendingProposals"] == 2


async def test_results_match_the_declared_output_schemas_on_both_endpoints(app: Served) -> None:
    for path, mode in (("/mcp-compat", "legacy"), ("/mcp", "2026-07-28")):
        async with mcp_client(app.server.base_url, path=path, mode=mode) as client:
            declared = {t.name: t.output_schema for t in (await client.list_tools()).tools}
            name = f"pg {mode}"
            results = [
                ("configure_thread", await call(client, "configure_thread", action="create", name=name)),
                ("configure_thread", await call(client, "configure_thread", action="list")),
            ]
            await think(client, "Blocked on the vendor", threads=[name], event="blocker")
            await think(client, "Done", threads=[name], done=True)
            results.append(("thread_briefing", await call(client, "thread_briefing", name=name, since="2020-01-01")))
            results.append(
                ("configure_thread", await call(client, "configure_thread", action="delete", name=name, confirm=True))
            )
        for tool, result in results:
            schema = declared[tool]
            assert schema is not None
            jsonschema.validate(result, schema)
    assert results[2][1]["latestConclusion"]["text"] == "Done"


async def test_the_thread_tools_declare_what_they_do_to_the_store(app: Served) -> None:
    async with connected(app) as client:
        tools = {t.name: t.annotations for t in (await client.list_tools()).tools}
    hints = {
        name: (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint)
        for name, a in tools.items()
        if a is not None and name in ("configure_thread", "review_proposals", "thread_briefing")
    }
    assert hints == {
        # configure_thread's delete removes a thread's memberships and proposals.
        "configure_thread": (False, True, False, False),
        "review_proposals": (False, False, False, False),
        "thread_briefing": (True, False, True, False),
    }
