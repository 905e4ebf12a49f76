"""`thread_briefing` (SPEC §5.3) through the real MCP client: events, open items, state, lifecycle, since."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from mcp import Client

from tests.support import text
from tests.thread_support import Served, call, connected, create, refused, served, think
from thoughtline.config import Settings

pytestmark = pytest.mark.anyio


@pytest.fixture
def app(settings: Settings) -> Iterator[Served]:
    with served(settings.with_overrides(thread_dormant_days=14.0, thread_closed_days=45.0)) as running:
        yield running


def iso_at(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).isoformat().replace("+00:00", "Z")


async def step(client: Client, seq: str, number: int, thought: str, **args: Any) -> None:
    await think(client, thought, number, sequenceId=seq, **args)


async def test_events_come_from_tags_and_the_final_thought_and_revision_fallbacks(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "pg", "Move billing to Postgres 16. It is big.")
        seq = await think(client, "Plan the cut-over", threads=["pg"])
        await step(client, seq, 2, "Use logical replication", event="decision")
        await step(client, seq, 3, "Just thinking aloud")
        await step(
            client, seq, 4, "Replication, on reflection, needs PK on every table", isRevision=True, revisesThought=2
        )
        await step(client, seq, 5, "Cut over on Friday night", done=True)
        brief = await call(client, "thread_briefing", name="PG")
    kinds = [(e["kind"], e["thoughtNumber"]) for e in brief["events"]]
    assert kinds == [("conclusion", 5), ("update", 4), ("decision", 2)]
    assert set(brief) == {
        "thread",
        "openBlockers",
        "openBlockerCount",
        "openQuestions",
        "openQuestionCount",
        "decisions",
        "latestConclusion",
        "events",
        "members",
    }
    assert set(brief["thread"]) == {
        "name",
        "type",
        "typeSource",
        "description",
        "headline",
        "status",
        "lifecycle",
        "state",
        "memberCount",
        "lastActivityAt",
    }
    event = brief["events"][0]
    assert set(event) == {"kind", "at", "sequenceId", "thoughtNumber", "branchId", "text"}
    assert (event["sequenceId"], event["branchId"], event["text"]) == (seq, None, "Cut over on Friday night")
    assert brief["latestConclusion"]["text"] == "Cut over on Friday night"
    assert [d["text"] for d in brief["decisions"]] == ["Use logical replication"]
    assert brief["thread"]["headline"] == "Move billing to Postgres 16."
    assert brief["thread"]["state"] == "ongoing"
    assert brief["members"] == [
        {
            "sequenceId": seq,
            "title": "Plan the cut-over",
            "status": "completed",
            "updatedAt": brief["members"][0]["updatedAt"],
            "addedBy": "agent",
            "addedAt": brief["members"][0]["addedAt"],
        }
    ]


async def test_a_cleared_blocker_closes_in_its_own_sequence_first(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "pg")
        a = await think(client, "Disk quota blocks the copy", threads=["pg"], event="blocker")
        b = await think(client, "Vendor contract blocks go-live", threads=["pg"], event="blocker")
        blocked = await call(client, "thread_briefing", name="pg")
        await step(client, a, 2, "Quota raised", event="blocker_cleared")
        one_left = await call(client, "thread_briefing", name="pg")
        await step(client, a, 3, "Nothing else blocks here", event="blocker_cleared")
        cleared = await call(client, "thread_briefing", name="pg")
    assert blocked["thread"]["state"] == "blocked"
    assert [x["text"] for x in blocked["openBlockers"]] == [
        "Vendor contract blocks go-live",
        "Disk quota blocks the copy",
    ]
    assert [(x["sequenceId"], x["text"]) for x in one_left["openBlockers"]] == [(b, "Vendor contract blocks go-live")]
    # no open blocker left in sequence a: the clear falls back to the thread's most recent one
    assert cleared["openBlockers"] == []
    assert cleared["thread"]["state"] == "ongoing"


async def test_a_clock_stepped_back_never_dates_a_thought_before_the_one_it_follows(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "pg")
        seq = await think(client, "Staging is down, the deploy is blocked", threads=["pg"], event="blocker")
        app.clock.advance(-1 / 24)  # the server's clock steps back an hour (NTP)
        await step(client, seq, 2, "Staging is back", event="blocker_cleared")
        brief = await call(client, "thread_briefing", name="pg")
    created = [row[0] for row in app.query("SELECT created_at FROM thoughts ORDER BY position")]
    assert created[1] == created[0]
    assert brief["openBlockers"] == []
    assert brief["thread"]["state"] == "ongoing"


async def test_questions_make_a_thread_uncertain_until_answered_and_resolution_resolves(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "pg")
        seq = await think(client, "Do we need downtime?", threads=["pg"], event="question")
        asked = await call(client, "thread_briefing", name="pg")
        await step(client, seq, 2, "No: replication keeps it online", event="answer")
        await step(client, seq, 3, "Migrated with no downtime", event="resolution")
        resolved = await call(client, "thread_briefing", name="pg")
        await step(client, seq, 4, "Replica lag spiked after cut-over", event="setback")
        setback = await call(client, "thread_briefing", name="pg")
    assert asked["thread"]["state"] == "uncertain"
    assert [q["text"] for q in asked["openQuestions"]] == ["Do we need downtime?"]
    assert resolved["openQuestions"] == []
    assert resolved["thread"]["state"] == "resolved"
    assert setback["thread"]["state"] == "uncertain"


async def test_lifecycle_turns_dormant_then_closed_and_an_idle_thread_is_stable(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "pg")
        seq = await think(client, "Decided on pgbouncer", threads=["pg"], event="decision")
        fresh = await call(client, "thread_briefing", name="pg")
        app.clock.advance(14)
        dormant = await call(client, "thread_briefing", name="pg")
        app.clock.advance(31)
        closed = await call(client, "thread_briefing", name="pg")
        await step(client, seq, 2, "Back at it")
        active = await call(client, "thread_briefing", name="pg")
        listed = await call(client, "configure_thread", action="list")
    assert [b["thread"]["lifecycle"] for b in (fresh, dormant, closed, active)] == [
        "active",
        "dormant",
        "closed",
        "active",
    ]
    assert [b["thread"]["state"] for b in (fresh, dormant, closed, active)] == [
        "ongoing",
        "stable",
        "stable",
        "ongoing",
    ]
    assert listed["threads"][0]["lifecycle"] == "active"


async def test_periods_come_from_settings_and_may_be_fractions_of_a_day(settings: Settings) -> None:
    with served(settings.with_overrides(thread_dormant_days=0.5, thread_closed_days=1.5)) as app:
        async with connected(app) as client:
            await create(client, "pg")
            app.clock.advance(0.5)
            dormant = await call(client, "thread_briefing", name="pg")
            app.clock.advance(1)
            closed = await call(client, "thread_briefing", name="pg")
    assert (dormant["thread"]["lifecycle"], closed["thread"]["lifecycle"]) == ("dormant", "closed")


async def test_an_archived_thread_still_briefs_and_reads_closed(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "pg")
        await think(client, "Wrapped up", threads=["pg"], done=True)
        await call(client, "configure_thread", action="archive", name="pg")
        brief = await call(client, "thread_briefing", name="pg")
    assert (brief["thread"]["status"], brief["thread"]["lifecycle"], brief["thread"]["state"]) == (
        "archived",
        "closed",
        "stable",
    )
    assert brief["latestConclusion"]["text"] == "Wrapped up"


async def test_since_reports_new_events_new_members_and_the_state_then_and_now(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "pg")
        first = await think(client, "Plan", threads=["pg"])
        await step(client, first, 2, "Chose pg_dump", event="decision")
        app.clock.advance(1)
        since = iso_at(app.clock.now())
        app.clock.advance(1)
        await step(client, first, 3, "pg_dump is too slow for 2 TB", event="blocker")
        second = await think(client, "Second look")
        await call(client, "configure_thread", action="pin", name="pg", sequenceId=second)
        brief = await call(client, "thread_briefing", name="pg", since=since)
        plain = await call(client, "thread_briefing", name="pg")
    changed = brief["changedSince"]
    assert [e["text"] for e in changed["newEvents"]] == ["pg_dump is too slow for 2 TB"]
    assert [(m["sequenceId"], m["addedBy"]) for m in changed["newMembers"]] == [(second, "user")]
    assert (changed["stateThen"], changed["stateNow"]) == ("ongoing", "blocked")
    assert "changedSince" not in plain


async def test_events_are_newest_first_and_limited_by_events_limit(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "pg")
        seq = await think(client, "obs 1", threads=["pg"], event="observation")
        for n in range(2, 13):
            await step(client, seq, n, f"obs {n}", event="observation" if n % 2 else "decision")
        limited = await call(client, "thread_briefing", name="pg", eventsLimit=3)
        default = await call(client, "thread_briefing", name="pg")
        as_string = await call(client, "thread_briefing", name="pg", eventsLimit="2")
    assert [e["text"] for e in limited["events"]] == ["obs 12", "obs 11", "obs 10"]
    assert len(default["events"]) == 12
    assert len(as_string["events"]) == 2
    assert [d["text"] for d in default["decisions"]] == ["obs 12", "obs 10", "obs 8", "obs 6", "obs 4", "obs 2"]


async def test_decisions_keep_the_ten_newest_events_default_to_twenty_and_text_is_clipped(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "pg")
        seq = await think(client, "d1 " + "x" * 400, threads=["pg"], event="decision")
        for n in range(2, 26):
            await step(client, seq, n, f"d{n}", event="decision")
        brief = await call(client, "thread_briefing", name="pg", eventsLimit=100)
        default = await call(client, "thread_briefing", name="pg")
    assert [d["text"] for d in brief["decisions"]] == [f"d{n}" for n in range(25, 15, -1)]
    assert len(brief["events"]) == 25
    assert len(brief["events"][-1]["text"]) == 280
    assert [e["text"] for e in default["events"]] == [f"d{n}" for n in range(25, 5, -1)]


async def test_events_on_a_branch_name_their_branch(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "pg")
        seq = await think(client, "Plan", threads=["pg"])
        await step(client, seq, 2, "Try a fork", branchFromThought=1, branchId="alt", event="milestone")
        brief = await call(client, "thread_briefing", name="pg")
    assert [(e["kind"], e["branchId"]) for e in brief["events"]] == [("milestone", "alt")]


async def test_the_headline_falls_back_to_the_latest_conclusion_or_decision(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "pg")
        empty = await call(client, "thread_briefing", name="pg")
        await think(client, "We go with Postgres 16", threads=["pg"], event="decision")
        brief = await call(client, "thread_briefing", name="pg")
    assert empty["thread"]["headline"] == "pg"
    assert brief["thread"]["headline"] == "We go with Postgres 16"
    assert len(brief["thread"]["headline"]) <= 160


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ({"name": "nope"}, "thread_not_found"),
        ({"name": "pg", "eventsLimit": 101}, "invalid_input"),
        ({"name": "pg", "eventsLimit": 0}, "invalid_input"),
        ({"name": "pg", "since": "yesterday"}, "invalid_input"),
        ({"name": "pg", "extra": 1}, "invalid_input"),
        ({}, "invalid_input"),
    ],
)
async def test_briefing_errors(app: Served, args: dict[str, object], code: str) -> None:
    async with connected(app) as client:
        await create(client, "pg")
        got, message = await refused(client, "thread_briefing", **args)
    assert got == code
    assert message


async def test_text_result_is_a_readable_briefing(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "pg", "Move billing.")
        await think(client, "Vendor blocks us", threads=["pg"], event="blocker")
        result = await client.call_tool("thread_briefing", {"name": "pg"})
    body = text(result)
    assert "Thread 'pg'" in body
    assert "blocked" in body
    assert "Open blockers:" in body
    assert "Vendor blocks us" in body
