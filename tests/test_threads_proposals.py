"""Thread proposals through the real MCP client: matching after commit, review, and every refusal."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

import apsw
import pytest
from mcp import Client

from tests.sample_notes import DRIP, HOSE
from tests.support import structured, text
from tests.thread_support import Served, call, connected, create, refused, served, think
from thoughtline.config import Settings
from thoughtline.identity import OWNER_KEY
from thoughtline.library.embed import MiniLMEmbedder
from thoughtline.storage import threads as thread_store
from thoughtline.storage.router import store_path

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
# A leak that is a garden job and a billing dispute at once: it belongs to two threads.
WATER_BILL = (
    "Water bill",
    "The household water bill jumped this quarter: meter readings, the utility's charges and a leak refund claim.",
)
BILL_LEAK = [
    "The water bill doubled this quarter; the water meter keeps spinning with every tap in the house closed.",
    "The leak is outside: a split garden hose by the spigot and a cracked drip irrigation line by the tomatoes.",
    "Fixed the hose and the drip line, then sent the utility the meter readings to claim a leak refund on the bill.",
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


async def test_the_next_page_hint_of_a_thread_filtered_list_works_when_followed_literally(app: Served) -> None:
    async with connected(app) as client:
        await threads(client)
        written = {await write(client, HOSE), await write(client, DRIP)}
        first = await client.call_tool("review_proposals", {"action": "list", "thread": GARDEN[0], "limit": 1})
        hint = re.search(
            r"call review_proposals action 'list' with cursor '([^']+)', thread '([^']+)' to continue", text(first)
        )
        assert hint is not None, text(first)
        second = await call(client, "review_proposals", action="list", cursor=hint.group(1), thread=hint.group(2))
    seen = [p["sequenceId"] for p in structured(first)["proposals"] + second["proposals"]]
    assert sorted(seen) == sorted(written)


async def test_a_list_page_that_is_not_the_whole_list_says_it_is_one_page_of_how_many(app: Served) -> None:
    async with connected(app) as client:
        await threads(client)
        await write(client, HOSE)
        await write(client, DRIP)
        first = await client.call_tool("review_proposals", {"action": "list", "thread": GARDEN[0], "limit": 1})
        whole = await client.call_tool("review_proposals", {"action": "list", "thread": GARDEN[0]})
    assert text(first).splitlines()[0] == f"1 of 2 pending proposals for thread {GARDEN[0]!r} on this page:"
    assert text(whole).splitlines()[0] == f"2 pending proposals for thread {GARDEN[0]!r}:"
    assert structured(first)["pendingCount"] == structured(whole)["pendingCount"] == 2


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


async def test_a_sequence_that_fits_two_threads_is_proposed_to_both(app: Served) -> None:
    async with connected(app) as client:
        await threads(client)
        await create(client, *WATER_BILL)
        both = await write(client, BILL_LEAK)
        run = await write(client, RUN)
        await write(client, BREAD)
        listed = await proposals(client)
    assert sorted((p["thread"], p["sequenceId"]) for p in listed) == sorted(
        [("Garden irrigation", both), ("Water bill", both), ("Marathon training", run)]
    )
    # Each proposal carries its own thread's similarity and evidence.
    assert all(0.0 < p["similarity"] <= 1.0 and p["evidence"] in BILL_LEAK for p in listed if p["sequenceId"] == both)


async def test_a_new_thread_backfills_a_sequence_another_thread_already_has(app: Served) -> None:
    async with connected(app) as client:
        await threads(client)
        both = await write(client, BILL_LEAK)
        first = await proposals(client)
        await create(client, *WATER_BILL)
        listed = await proposals(client)
    assert [(p["thread"], p["sequenceId"]) for p in first] == [("Garden irrigation", both)]
    assert sorted((p["thread"], p["sequenceId"]) for p in listed) == [("Garden irrigation", both), ("Water bill", both)]


async def test_a_rejected_pair_stays_unproposed_while_the_other_thread_keeps_its_proposal(app: Served) -> None:
    async with connected(app) as client:
        await threads(client)
        await create(client, *WATER_BILL)
        both = await write(client, BILL_LEAK)
        (bill,) = await proposals(client, thread="Water bill")
        await call(client, "review_proposals", action="reject", proposalId=bill["proposalId"])
        # A new description re-runs the backfill; completing the sequence again re-queues it.
        await call(
            client,
            "configure_thread",
            action="set_description",
            name="Water bill",
            description=WATER_BILL[1] + " Refund.",
        )
        await think(client, "The utility confirmed the leak refund on the bill.", 4, done=True, sequenceId=both)
        listed = await proposals(client)
    assert [(p["thread"], p["sequenceId"]) for p in listed] == [("Garden irrigation", both)]


async def test_an_archived_thread_gets_no_share_of_a_two_thread_sequence(app: Served) -> None:
    async with connected(app) as client:
        await threads(client)
        await create(client, *WATER_BILL)
        await call(client, "configure_thread", action="archive", name="Water bill")
        both = await write(client, BILL_LEAK)
        listed = await proposals(client)
        await call(client, "configure_thread", action="unarchive", name="Water bill")
        # Unarchiving resumes a pending backfill, never one that already ran for this description.
        again = await proposals(client, thread="Water bill")
    assert [(p["thread"], p["sequenceId"]) for p in listed] == [("Garden irrigation", both)]
    assert app.query(
        "SELECT count(*) FROM thread_proposals p JOIN threads t ON t.id = p.thread WHERE t.name = ?", (WATER_BILL[0],)
    ) == [(len(again),)]


async def test_the_word_statistics_come_from_the_stores_own_keyword_index(app: Served) -> None:
    async with connected(app) as client:
        await threads(client)
        hose = await write(client, HOSE)
        await write(client, DRIP)
        await write(client, RUN)
        before = _statistics(app)
        await call(client, "delete_thought_sequence", sequenceId=hose, confirm=True)
        after = _statistics(app)
    for bodies, (documents, frequency, seen) in ((3 * 3, before), (2 * 3, after)):
        assert documents == bodies
        # Every term of every stored thought is in the index's vocabulary, counted once per thought
        # (body column only: a neighbour's text in a thought's search context is not its own).
        assert frequency == seen
    assert before[1]["leak"] == 2  # the hose's "leak" and the drip line's "leaking": one index term
    assert after[1]["leak"] == 1
    assert "spigot" in before[1]
    assert "spigot" not in after[1]
    assert "autumn" not in before[1]  # a description's word no thought holds


def _statistics(app: Served) -> tuple[int, dict[str, int], dict[str, int]]:
    """The store's term statistics as matching reads them, and the per-thought counts of its bodies."""
    conn = apsw.Connection(str(store_path(app.settings.data_dir, OWNER_KEY)), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        seen: Counter[str] = Counter()
        for (body,) in conn.execute("SELECT body FROM thoughts"):
            seen.update(set(thread_store.terms(conn, str(body))))
        wanted = set(seen) | set(thread_store.terms(conn, RUNNING[1]))
        stats = thread_store.term_statistics(conn, wanted)
    finally:
        conn.close()
    return stats.documents, stats.frequency, dict(seen)


async def test_a_sequence_of_a_word_or_two_is_never_proposed_there_is_too_little_to_judge(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "Big", "A thread with many members")
        await create(client, *GARDEN)
        await write(client, ["threads"])
        await write(client, ["garden hose leak"])
        fuller = await write(client, BILL_LEAK)
        listed = await proposals(client)
    assert {p["sequenceId"] for p in listed} == {fuller}
