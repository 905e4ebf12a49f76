"""Matching under a backlog: every pending backfill advances in one step, a list answers within its
budget and says what is left, and matching reaches sequences an unarchive or an import brings back."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.sample_notes import HOSE
from tests.support import structured, text
from tests.thread_support import MovableClock, Served, call, connected, create, served, write_sequence
from thoughtline.config import Settings
from thoughtline.identity import OWNER_KEY
from thoughtline.library import matching, review
from thoughtline.library.embed import MiniLMEmbedder
from thoughtline.library.proposals import TUNING
from thoughtline.library.term_cache import TermCache
from thoughtline.storage import proposals as proposal_store
from thoughtline.storage import transfer
from thoughtline.storage.router import StoreRouter

pytestmark = pytest.mark.anyio

LEAKS = ("Leaks", "Every water leak in the house and garden: hoses, drip lines, taps.")
GARDEN = ("Garden irrigation", "The drip irrigation line and the garden hose leak; tracking the hunt and the repairs.")
WATER = ("Water bill", "The water bill jumped because of a leaking garden hose and drip line.")


@pytest.fixture
def app(settings: Settings, embedder: MiniLMEmbedder) -> Iterator[Served]:
    # No post-commit drain: what a list leaves undone stays undone until the next list.
    quiet = dataclasses.replace(settings, background_work=False)
    with served(quiet, embedder_factory=lambda: embedder) as running:
        yield running


async def listed(client: Client, **args: Any) -> dict[str, Any]:
    return await call(client, "review_proposals", action="list", **args)


async def test_a_list_out_of_budget_says_matching_is_left_and_a_later_list_finishes_it(
    app: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with connected(app) as client:
        seq = await write_sequence(client, HOSE)
        await create(client, *GARDEN)
        monkeypatch.setattr(review, "MATCH_BUDGET_SECONDS", 0.0)
        early = await client.call_tool("review_proposals", {"action": "list"})
        monkeypatch.undo()
        later = await listed(client)
    assert structured(early)["proposals"] == []
    assert structured(early)["matchingPending"] == {"threads": 1, "sequences": 1}
    assert "Matching is still running for 1 thread and 1 completed sequence" in text(early)
    assert "list again shortly" in text(early)
    assert [(p["thread"], p["sequenceId"]) for p in later["proposals"]] == [(GARDEN[0], seq)]
    assert "matchingPending" not in later


async def test_one_matching_step_advances_every_pending_backfill(app: Served, embedder: MiniLMEmbedder) -> None:
    async with connected(app) as client:
        seq = await write_sequence(client, HOSE)
        await listed(client)  # the completion is matched (no thread yet): only backfills remain
        app.clock.advance(0.01)
        for thread in (LEAKS, GARDEN, WATER):
            await create(client, *thread)
    router = StoreRouter(app.settings.data_dir, "wal", MovableClock())
    try:
        opened = await router.get(OWNER_KEY)
        memo = matching._Memo(TermCache())
        plan = await opened.read(lambda conn: matching._plan(conn, memo))
        assert plan is not None
        descriptions = await matching._Descriptions(embedder, None).vectors([t.description for t in plan.threads])
        picks = matching._decide(plan, descriptions, TUNING, memo)
        await opened.write(matching._commit(plan, picks))
        left = await opened.read(proposal_store.pending_work)
    finally:
        await router.close_all()
    assert len(plan.backfills) == 3
    assert left == proposal_store.PendingWork(threads=0, sequences=0)
    stored = app.query("SELECT id FROM sequences WHERE public_id = ?", (seq,))[0][0]
    assert [s for s, _ in plan.batch] == [stored]


async def test_a_sequence_completed_while_its_thread_was_archived_is_proposed_after_unarchive(app: Served) -> None:
    async with connected(app) as client:
        await create(client, *GARDEN)
        await listed(client)  # its backfill is done: nothing pending carries over the archive
        await call(client, "configure_thread", action="archive", name=GARDEN[0])
        app.clock.advance(0.01)
        seq = await write_sequence(client, HOSE)
        while_archived = await listed(client)
        app.clock.advance(0.01)
        await call(client, "configure_thread", action="unarchive", name=GARDEN[0])
        after = await listed(client, thread=GARDEN[0])
    assert while_archived["proposals"] == []
    assert [p["sequenceId"] for p in after["proposals"]] == [seq]


async def test_an_unarchive_never_proposes_a_rejected_pair_again(app: Served) -> None:
    async with connected(app) as client:
        await create(client, *GARDEN)
        await write_sequence(client, HOSE)
        [proposal] = (await listed(client))["proposals"]
        await call(client, "review_proposals", action="reject", proposalId=proposal["proposalId"])
        await call(client, "configure_thread", action="archive", name=GARDEN[0])
        app.clock.advance(0.01)
        await call(client, "configure_thread", action="unarchive", name=GARDEN[0])
        after = await listed(client)
    assert after["proposals"] == []


async def test_imported_sequences_are_proposed_to_the_threads_the_store_already_has(
    app: Served, settings: Settings, embedder: MiniLMEmbedder, tmp_path: Path
) -> None:
    # The other machine's store: one completed sequence about the garden leak, no threads.
    other = dataclasses.replace(settings, data_dir=tmp_path / "other", background_work=False)
    with served(other, embedder_factory=lambda: embedder) as source:
        async with connected(source) as client:
            seq = await write_sequence(client, HOSE)
    router = StoreRouter(other.data_dir, "wal", MovableClock())
    try:
        records = list(await (await router.get(OWNER_KEY)).read(lambda conn: list(transfer.iter_export(conn))))
    finally:
        await router.close_all()
    async with connected(app) as client:
        await create(client, *GARDEN)
        await listed(client)  # the thread's own backfill is done before the import
        target = StoreRouter(app.settings.data_dir, "wal", MovableClock())
        try:
            numbered = [(i, json.loads(json.dumps(r))) for i, r in enumerate(records, start=1)]
            now = int(app.clock.now() * 1000)
            await (await target.get(OWNER_KEY)).write(lambda conn: transfer.import_records(conn, numbered, now))
        finally:
            await target.close_all()
        after = await listed(client, thread=GARDEN[0])
    assert [p["sequenceId"] for p in after["proposals"]] == [seq]
