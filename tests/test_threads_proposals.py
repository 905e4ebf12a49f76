"""Thread proposals through the real MCP client: matching after commit, review, and every refusal."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client

from tests.sample_notes import DRIP, HOSE
from tests.thread_support import Served, call, connected, create, refused, served, think
from thoughtline.config import Settings
from thoughtline.library.embed import MiniLMEmbedder

pytestmark = pytest.mark.anyio

GARDEN = (
    "Garden irrigation",
    "The backyard drip irrigation line and the garden hose are leaking; the water bill jumped. "
    "Tracking the hunt for the leak and the repairs.",
)
RUNNING = (
    "Marathon training",
    "Training for the autumn marathon: weekly mileage, long runs, the sore calf and race-day fueling.",
)
RUN = [
    "Long run of 28 km on Sunday for the marathon; my calf felt tight after 20 km.",
    "Plan: drop weekly mileage to 50 km, add calf raises, and take an energy gel every 40 minutes on long runs.",
    "Next long run at an easy pace to test the calf before the marathon taper starts.",
]
BREAD = [
    "Comparing a 70% and a 78% hydration sourdough to get a more open crumb.",
    "The 78% dough spread too much; I will shape it tighter and proof it in the fridge overnight.",
    "Cold proof worked: taller loaf, open crumb, crisp crust.",
]


@pytest.fixture
def app(settings: Settings, embedder: MiniLMEmbedder) -> Iterator[Served]:
    with served(settings, embedder_factory=lambda: embedder) as running:
        yield running


async def write(client: Client, thoughts: list[str], **first: Any) -> str:
    """Write a whole sequence (its last thought completes it); `first` goes on the first call."""
    seq = await think(client, thoughts[0], 1, done=len(thoughts) == 1, totalThoughts=len(thoughts), **first)
    for number, thought in enumerate(thoughts[1:], start=2):
        await think(client, thought, number, done=number == len(thoughts), sequenceId=seq, totalThoughts=len(thoughts))
    return seq


async def threads(client: Client) -> None:
    await create(client, *GARDEN)
    await create(client, *RUNNING)


async def proposals(client: Client, **args: Any) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = (await call(client, "review_proposals", action="list", **args))["proposals"]
    return listed


async def test_a_completing_write_is_proposed_in_a_list_right_after_it_and_not_confirmed(app: Served) -> None:
    async with connected(app) as client:
        await threads(client)
        hose = await write(client, HOSE)
        run = await write(client, RUN)
        await write(client, BREAD)
        listed = await proposals(client)
        history = await call(client, "get_thought_history", sequenceId=hose)
        brief = await call(client, "thread_briefing", name="Garden irrigation")
    assert sorted((p["thread"], p["sequenceId"]) for p in listed) == sorted(
        [("Garden irrigation", hose), ("Marathon training", run)]
    )
    garden = next(p for p in listed if p["sequenceId"] == hose)
    assert set(garden) == {"proposalId", "thread", "sequenceId", "title", "similarity", "evidence", "proposedAt"}
    assert garden["proposalId"].startswith("prp_")
    assert garden["title"] == HOSE[0][:160]
    assert 0.0 < garden["similarity"] <= 1.0
    assert garden["evidence"] in HOSE
    assert garden["proposedAt"].endswith("Z")
    # Never auto-confirmed: the sequence is in no thread until the proposal is accepted.
    assert history["sequence"]["threads"] == []
    assert brief["members"] == []


async def test_an_open_sequence_is_not_matched_until_it_completes(app: Served) -> None:
    async with connected(app) as client:
        await threads(client)
        app.clock.advance(0.01)  # a sequence started after the thread is left to its completion
        seq = await think(client, HOSE[0], 1, totalThoughts=3)
        await think(client, HOSE[1], 2, sequenceId=seq, totalThoughts=3)
        before = await proposals(client)
        await think(client, HOSE[2], 3, done=True, sequenceId=seq, totalThoughts=3)
        after = await proposals(client)
    assert before == []
    assert [p["sequenceId"] for p in after] == [seq]


async def test_accept_confirms_the_membership_as_review(app: Served) -> None:
    async with connected(app) as client:
        await threads(client)
        hose = await write(client, HOSE)
        (proposal,) = await proposals(client, thread="garden irrigation")
        accepted = await call(client, "review_proposals", action="accept", proposalId=proposal["proposalId"])
        brief = await call(client, "thread_briefing", name="Garden irrigation")
        history = await call(client, "get_thought_history", sequenceId=hose)
        again = await refused(client, "review_proposals", action="accept", proposalId=proposal["proposalId"])
        left = await proposals(client)
    assert accepted == {
        "action": "accept",
        "proposalId": proposal["proposalId"],
        "thread": "Garden irrigation",
        "sequenceId": hose,
        "member": True,
        "addedBy": "review",
    }
    assert [(m["sequenceId"], m["addedBy"]) for m in brief["members"]] == [(hose, "review")]
    assert history["sequence"]["threads"] == ["Garden irrigation"]
    assert again[0] == "proposal_not_found"
    assert left == []


async def test_a_rejected_pair_is_never_proposed_again(app: Served) -> None:
    async with connected(app) as client:
        await threads(client)
        hose = await write(client, HOSE)
        (proposal,) = await proposals(client)
        rejected = await call(client, "review_proposals", action="reject", proposalId=proposal["proposalId"])
        # A new description re-runs the thread's backfill; the sequence completing again re-queues it.
        await call(
            client,
            "configure_thread",
            action="set_description",
            name="Garden irrigation",
            description=GARDEN[1] + " Hose.",
        )
        after_description = await proposals(client)
        await think(client, "One more check of the hose: still dry.", 4, done=True, sequenceId=hose, totalThoughts=4)
        after_completion = await proposals(client)
        brief = await call(client, "thread_briefing", name="Garden irrigation")
    assert rejected["member"] is False
    assert rejected["sequenceId"] == hose
    assert after_description == []
    assert after_completion == []
    assert brief["members"] == []
    assert app.query("SELECT count(*) FROM thread_rejections")[0][0] == 1


async def test_members_are_never_proposed_however_they_joined(app: Served) -> None:
    async with connected(app) as client:
        await threads(client)
        await write(client, HOSE, threads=["Garden irrigation"])
        pinned = await write(client, DRIP)
        run = await write(client, RUN)
        await call(client, "configure_thread", action="pin", name="Garden irrigation", sequenceId=pinned)
        await call(
            client, "configure_thread", action="set_description", name="Garden irrigation", description=GARDEN[1] + "!"
        )
        listed = await proposals(client)
    assert [p["sequenceId"] for p in listed] == [run]


async def test_an_archived_thread_gets_no_proposals(app: Served) -> None:
    async with connected(app) as client:
        await threads(client)
        await call(client, "configure_thread", action="archive", name="Garden irrigation")
        await write(client, HOSE)
        await create(client, "Leaks", "Every water leak in the house and garden: hoses, drip lines, taps.")
        await call(client, "configure_thread", action="archive", name="Leaks")
        listed = await proposals(client)
        scoped = await proposals(client, thread="Leaks")
    assert all(p["thread"] not in ("Garden irrigation", "Leaks") for p in listed)
    assert scoped == []
    assert app.query("SELECT count(*) FROM thread_proposals")[0][0] == 0


async def test_an_archived_threads_pending_proposals_wait_until_it_is_unarchived(app: Served) -> None:
    async with connected(app) as client:
        await threads(client)
        await write(client, HOSE)
        [pending] = await proposals(client)
        thread = pending["thread"]
        archived = await call(client, "configure_thread", action="archive", name=thread)
        hidden = await proposals(client)
        before = app.counts()
        accepted = await refused(client, "review_proposals", action="accept", proposalId=pending["proposalId"])
        rejected = await refused(client, "review_proposals", action="reject", proposalId=pending["proposalId"])
        after = app.counts()
        restored = await call(client, "configure_thread", action="unarchive", name=thread)
        shown = await proposals(client)
    assert archived["thread"]["pendingProposals"] == 0
    assert hidden == []
    assert accepted[0] == rejected[0] == "thread_archived"
    assert "unarchive" in accepted[1]
    assert after == before
    assert restored["thread"]["pendingProposals"] == 1
    assert [p["proposalId"] for p in shown] == [pending["proposalId"]]


async def test_a_new_thread_is_matched_against_stored_sequences(app: Served) -> None:
    async with connected(app) as client:
        hose = await write(client, HOSE)
        drip = await write(client, DRIP)
        await write(client, BREAD)
        first = await proposals(client)
        await threads(client)
        listed = await proposals(client, thread="Garden irrigation")
    assert first == []
    assert sorted(p["sequenceId"] for p in listed) == sorted([hose, drip])


async def test_pages_follow_the_cursor_without_repeats(app: Served) -> None:
    async with connected(app) as client:
        await threads(client)
        written = {await write(client, HOSE), await write(client, DRIP), await write(client, RUN)}
        first = await call(client, "review_proposals", action="list", limit=2)
        second = await call(client, "review_proposals", action="list", limit=2, cursor=first["nextCursor"])
        scoped = await refused(
            client, "review_proposals", action="list", thread="Marathon training", cursor=first["nextCursor"]
        )
    seen = [p["sequenceId"] for p in first["proposals"] + second["proposals"]]
    assert len(first["proposals"]) == 2
    assert first["nextCursor"]
    assert sorted(seen) == sorted(written)
    assert second["nextCursor"] is None
    assert scoped[0] == "invalid_input"


@pytest.mark.parametrize(
    ("args", "code", "named"),
    [
        ({"action": "list", "thread": "nope"}, "thread_not_found", "nope"),
        ({"action": "list", "limit": 51}, "invalid_input", "limit"),
        ({"action": "list", "cursor": "not-a-cursor"}, "invalid_input", "cursor"),
        ({"action": "list", "proposalId": "prp_1"}, "invalid_input", "proposalId"),
        ({"action": "accept", "proposalId": "prp_999"}, "proposal_not_found", "prp_999"),
        ({"action": "reject", "proposalId": "prp_999"}, "proposal_not_found", "prp_999"),
        ({"action": "accept"}, "invalid_input", "proposalId"),
        ({"action": "reject", "proposalId": "seq_1"}, "invalid_input", "prp_"),
        ({"action": "approve"}, "invalid_input", "action"),
    ],
)
async def test_a_refused_review_names_the_problem_and_changes_nothing(
    app: Served, args: dict[str, Any], code: str, named: str
) -> None:
    async with connected(app) as client:
        await threads(client)
        await write(client, HOSE)
        await proposals(client)
        before = app.counts()
        got, message = await refused(client, "review_proposals", **args)
    assert got == code
    assert named in message
    assert app.counts() == before


async def test_a_tampered_cursor_is_refused(app: Served) -> None:
    async with connected(app) as client:
        await threads(client)
        await write(client, HOSE)
        await write(client, RUN)
        first = await call(client, "review_proposals", action="list", limit=1)
        cursor = first["nextCursor"]
        forged = cursor[:-2] + ("AA" if not cursor.endswith("AA") else "BB")
        got, message = await refused(client, "review_proposals", action="list", limit=1, cursor=forged)
    assert got == "invalid_input"
    assert "cursor" in message


async def test_a_cursor_from_another_tool_or_another_filter_is_refused(app: Served) -> None:
    async with connected(app) as client:
        await threads(client)
        await write(client, HOSE)
        await write(client, RUN)
        history = await call(client, "get_thought_history", sequenceId=await write(client, BREAD), limit=1)
        page = await call(client, "review_proposals", action="list", limit=1)
        foreign = await refused(client, "review_proposals", action="list", cursor=history["nextCursor"])
        filtered = await refused(
            client, "review_proposals", action="list", thread=GARDEN[0], limit=1, cursor=page["nextCursor"]
        )
    assert (foreign[0], filtered[0]) == ("invalid_input", "invalid_input")
    assert "start again without one" in foreign[1]
    assert "'thread'" in filtered[1]


async def test_listing_with_nothing_to_match_never_loads_the_model(
    settings: Settings, embedder: MiniLMEmbedder
) -> None:
    loads: list[int] = []

    def factory() -> MiniLMEmbedder:
        loads.append(1)
        return embedder

    with served(settings, embedder_factory=factory) as app:
        async with connected(app) as client:
            empty = await proposals(client)
            await threads(client)
            app.clock.advance(0.01)
            await think(client, "an open sequence, started after the threads")
            after_create = await proposals(client)
    assert empty == []
    assert after_create == []
    assert loads == []


async def test_deleting_a_sequence_removes_its_proposals(app: Served) -> None:
    async with connected(app) as client:
        await threads(client)
        hose = await write(client, HOSE)
        run = await write(client, RUN)
        assert len(await proposals(client)) == 2
        await call(client, "delete_thought_sequence", sequenceId=hose, confirm=True)
        listed = await proposals(client)
    assert [p["sequenceId"] for p in listed] == [run]
    assert app.query("SELECT count(*) FROM thread_proposals")[0][0] == 1
