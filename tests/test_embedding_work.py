"""Embedding after commits and at query time: bounded, never twice, never failing a search (issue 11).

The embedder is the real MiniLM behind a small counting wrapper (passed where the app takes its
embedder), so the tests see exactly which thought bodies were embedded and when.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.embedder_support import Wrapping
from tests.golden.harness import LibraryHarness, library_harness
from tests.support import TOKEN, mcp_client, serve_in_thread, text
from thoughtline.config import Settings
from thoughtline.identity import OWNER_KEY
from thoughtline.library.embed import MiniLMEmbedder, Vectors
from thoughtline.storage import vectors as vector_store
from thoughtline.storage.db import connect
from thoughtline.storage.router import store_path
from thoughtline.web.app import create_app

pytestmark = pytest.mark.anyio

NOTE = "Note "  # every stored thought starts so; queries never do


class CountingEmbedder(Wrapping):
    """Wraps an embedder: records each batch of thought bodies, and can hold one batch at a gate."""

    def __init__(self, inner: MiniLMEmbedder) -> None:
        super().__init__(inner)
        self.body_batches: list[list[str]] = []
        self.entered = threading.Event()
        self.release = threading.Event()
        self._hold = False
        self._lock = threading.Lock()

    def hold_next_batch(self) -> None:
        """The next batch of bodies waits in `embed` until `release` is set."""
        self._hold = True

    def embedded(self) -> list[str]:
        """Every body embedded so far, in order (repeats included)."""
        with self._lock:
            return [text for batch in self.body_batches for text in batch]

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Count, maybe wait at the gate, then embed for real."""
        bodies = [t for t in texts if t.startswith(NOTE)]
        if bodies:
            with self._lock:
                self.body_batches.append(bodies)
                hold, self._hold = self._hold, False
            if hold:
                self.entered.set()
                assert self.release.wait(60), "the test never released the held batch"
        return self._inner.embed(texts)


class StepClock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def note(i: int) -> str:
    return f"{NOTE}{i}: the ingest worker number {i} reported codeword{i} before it stopped."


def finds(out: dict[str, Any], i: int) -> bool:
    """Whether note `i` is among a search's results."""
    return any(r["snippet"].startswith(f"{NOTE}{i}:") for r in out["results"])


@pytest.fixture
def counting(embedder: MiniLMEmbedder) -> CountingEmbedder:
    return CountingEmbedder(embedder)


async def pending(h: LibraryHarness) -> int:
    opened = await h.router.get("owner")
    return await opened.read(vector_store.pending_count)


async def write_notes(h: LibraryHarness, count: int, start: int = 0) -> None:
    for i in range(start, start + count):
        await h.write_sequence([note(i)])


@pytest.fixture
async def lambda_like(tmp_path: Path, counting: CountingEmbedder) -> AsyncIterator[LibraryHarness]:
    """The library as a Lambda container runs it: nothing after commits, small inline batches."""
    async with library_harness(tmp_path / "data", counting, background=False, inline_max=8) as harness:
        yield harness


async def test_a_search_embeds_a_bounded_batch_and_finds_the_rest_by_keyword(
    lambda_like: LibraryHarness, counting: CountingEmbedder
) -> None:
    await write_notes(lambda_like, 20)
    out = await lambda_like.ok("search_thoughts", {"query": "codeword19"})
    assert len(counting.embedded()) <= 8
    assert out["unindexedThoughts"] == 20 - len(counting.embedded())
    assert finds(out, 19)  # not embedded yet: found by keyword


MIGRATION = "We chose PostgreSQL logical replication for the zero-downtime migration of the billing database"
MIGRATION_QUESTION = "how did we move the invoices DB to a new server without downtime"


async def test_a_search_never_abstains_while_thoughts_wait_for_vectors(
    lambda_like: LibraryHarness, counting: CountingEmbedder
) -> None:
    await write_notes(lambda_like, 20)
    await lambda_like.write_sequence([MIGRATION])  # the answer, written last: beyond the inline batch
    result = await lambda_like.call("search_thoughts", {"query": MIGRATION_QUESTION})
    out = result.structured_content
    assert out is not None
    assert out["abstained"] is False
    assert out["unindexedThoughts"] == 21 - len(counting.embedded()) > 0
    assert any(r["snippet"].startswith("We chose PostgreSQL") for r in out["results"])
    assert "Note: 13 recent thoughts are not indexed for meaning yet" in text(result)


async def test_a_search_with_every_thought_indexed_may_still_abstain(
    lambda_like: LibraryHarness, counting: CountingEmbedder
) -> None:
    # The control of the test above: the same store, all embedded, and a question it holds nothing for.
    await write_notes(lambda_like, 4)
    out = await lambda_like.ok("search_thoughts", {"query": MIGRATION_QUESTION})
    assert "unindexedThoughts" not in out
    assert out == {"results": [], "abstained": True, "by": "thought"}


class SlowFirstBatch(CountingEmbedder):
    """Moves the library's clock as embedding would take: the first batch also loads the model."""

    def __init__(self, inner: MiniLMEmbedder, clock: StepClock) -> None:
        super().__init__(inner)
        self.clock = clock

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed for real, and charge 5 s for the first batch of bodies, 0.2 s for each later one."""
        out = super().embed(texts)
        if any(t.startswith(NOTE) for t in texts):
            self.clock.t += 5.0 if len(self.body_batches) == 1 else 0.2
        return out


async def test_loading_the_model_is_not_charged_to_a_searchs_embedding_budget(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    clock = StepClock()
    slow = SlowFirstBatch(embedder, clock)
    async with library_harness(tmp_path / "data", slow, background=False, monotonic=clock) as h:
        await write_notes(h, 70)
        out = await h.ok("search_thoughts", {"query": "codeword69"})
        assert "unindexedThoughts" not in out  # 3 batches: one loading the model, two within 1 s
        assert len(slow.embedded()) == 70


async def test_with_background_work_off_nothing_is_scheduled_after_a_commit(
    lambda_like: LibraryHarness, counting: CountingEmbedder
) -> None:
    await write_notes(lambda_like, 1)
    await lambda_like.ok("search_thoughts", {"query": "ingest worker"})  # the model now exists
    await write_notes(lambda_like, 1, start=1)
    assert lambda_like.library.scheduled == 0
    assert await pending(lambda_like) == 1  # still queued: only a search embeds it
    await lambda_like.ok("search_thoughts", {"query": "ingest worker"})
    assert await pending(lambda_like) == 0
    assert sorted(counting.embedded()) == [note(0), note(1)]


async def test_no_thought_is_embedded_twice_when_a_search_meets_background_work(
    tmp_path: Path, counting: CountingEmbedder
) -> None:
    async with library_harness(tmp_path / "data", counting) as h:
        await write_notes(h, 1)
        await h.ok("search_thoughts", {"query": "ingest worker"})  # loads the model: commits now kick work
        counting.hold_next_batch()
        await write_notes(h, 10, start=1)
        assert await asyncio.to_thread(counting.entered.wait, 60)  # background holds a batch
        during = await h.ok("search_thoughts", {"query": "codeword7"})
        assert finds(during, 7)
        counting.release.set()
        await asyncio.wait_for(h.library.caught_up(await h.router.get("owner")), timeout=60)
        embedded = counting.embedded()
        assert sorted(embedded) == sorted(note(i) for i in range(11))  # each exactly once


async def test_closing_with_a_backlog_finishes_one_batch_and_leaves_the_rest_queued(
    tmp_path: Path, counting: CountingEmbedder
) -> None:
    async with library_harness(tmp_path / "data", counting) as h:
        await write_notes(h, 1)
        await h.ok("search_thoughts", {"query": "ingest worker"})
        counting.hold_next_batch()
        await write_notes(h, 60, start=1)
        assert await asyncio.to_thread(counting.entered.wait, 60)
        closing = asyncio.create_task(h.library.close())
        counting.release.set()
        await asyncio.wait_for(closing, timeout=60)
        assert len(counting.body_batches) == 2  # the warm-up search's, then the one held batch
        assert await pending(h) >= 60 - len(counting.body_batches[1])
        await write_notes(h, 1, start=61)
        assert h.library.scheduled == 0  # a closed library schedules nothing more


async def test_a_failed_vector_write_is_retried_only_after_a_pause(tmp_path: Path, counting: CountingEmbedder) -> None:
    clock = StepClock()
    async with library_harness(tmp_path / "data", counting, background=False, monotonic=clock) as h:
        await write_notes(h, 3)
        break_vector_writes(store_path(tmp_path / "data", "owner"))
        first = await h.ok("search_thoughts", {"query": "codeword2"})
        assert finds(first, 2)
        assert first["unindexedThoughts"] == 3
        tried = len(counting.body_batches)
        await h.ok("search_thoughts", {"query": "codeword1"})
        assert len(counting.body_batches) == tried  # no second doomed batch right away
        clock.t += 60
        await h.ok("search_thoughts", {"query": "codeword1"})
        assert len(counting.body_batches) == tried + 1


def break_vector_writes(path: Path) -> None:
    """Make the store refuse every vector write the way a full disk does, from another connection."""
    conn = connect(path, "wal")
    conn.execute(
        "CREATE TRIGGER refuse_vectors BEFORE DELETE ON vector_queue "
        "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
    )
    conn.close()


async def test_a_search_answers_from_keywords_when_the_store_refuses_vector_writes(
    tmp_path: Path, counting: CountingEmbedder
) -> None:
    data = tmp_path / "data"
    app = create_app(Settings(data_dir=data, api_token=TOKEN), embedder_factory=lambda: counting)
    with serve_in_thread(app) as running:
        async with mcp_client(running.base_url) as client:
            for i in range(3):
                args: dict[str, Any] = {
                    "thought": note(i),
                    "nextThoughtNeeded": False,
                    "thoughtNumber": 1,
                    "totalThoughts": 1,
                }
                written = await client.call_tool("sequentialthinking", args)
                assert not written.is_error
            break_vector_writes(store_path(data, OWNER_KEY))
            found = await client.call_tool("search_thoughts", {"query": "codeword1"})
            assert not found.is_error, found
            assert found.structured_content is not None
            assert finds(found.structured_content, 1)
            assert found.structured_content["unindexedThoughts"] == 3
            assert counting.body_batches  # it tried, the write failed, the search still answered
    conn = connect(store_path(data, OWNER_KEY), "wal", readonly=True)
    try:
        assert vector_store.pending_count(conn) == 3  # nothing half-written
    finally:
        conn.close()
