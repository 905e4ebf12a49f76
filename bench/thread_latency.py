"""Proposal listing latency on a store of ~5k thoughts and 20 threads (issue 9: p95 ≤ 50 ms).

The dev sequences of `bench/data/reasoning/` are written nine times over through the real tools
(~5,000 thoughts); their vectors are the real MiniLM vectors of those texts, embedded once and
stored for every copy (embedding 5k thoughts here would take minutes and measure nothing about
listing). Twenty threads are created (one per dev topic, four more), two seeds pinned to each;
the first list runs every backfill (timed once), then `review_proposals list` is timed warm.

    python -m bench.thread_latency [--copies 9] [--calls 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench.thread_harness import harness, sequence_calls
from thoughtline.library.embed import MiniLMEmbedder
from thoughtline.storage import search as search_store
from thoughtline.storage import vectors as vector_store

DATA = Path(__file__).resolve().parent / "data" / "reasoning" / "dev.json"
EXTRA_THREADS = 4


def _p95(values: Sequence[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


async def run(copies: int, calls: int) -> None:
    """Build the store, then print the timings."""
    raw = json.loads(DATA.read_text())
    embedder = MiniLMEmbedder()
    texts = sorted({" ".join(t["thought"].split()) for s in raw["sequences"] for t in s["thoughts"]})
    by_text = dict(zip(texts, embedder.embed(texts), strict=True))
    with tempfile.TemporaryDirectory(prefix="thread-latency-") as tmp:
        async with harness(Path(tmp), embedder) as h:
            ids: dict[str, list[str]] = {}
            for _ in range(copies):
                for seq in raw["sequences"]:
                    public: str | None = None
                    for call in sequence_calls(seq):
                        if public is not None:
                            call["sequenceId"] = public
                        public = str((await h.ok("sequentialthinking", call))["sequenceId"])
                    assert public is not None
                    ids.setdefault(seq["id"], []).append(public)
            opened = await h.router.get("owner")
            pending = await opened.read(
                lambda c: vector_store.pending_thoughts(c, vector_store.pending_vector_ids(c, 10**6))
            )
            rows = [(p.thought_id, [by_text[" ".join(p.body.split())].tobytes()]) for p in pending]
            await opened.write(lambda c: vector_store.store_vectors(c, rows, made_by=embedder.model_id))
            thoughts = await opened.read(search_store.thought_count)
            topics = raw["topics"]
            for i, topic in enumerate(topics):
                name = (topic["thread"] or {}).get("name") or topic["id"]
                description = (topic["thread"] or {}).get("description") or topic["summary"]
                await h.ok("configure_thread", {"action": "create", "name": name, "description": description})
                seeds = [s["id"] for s in raw["sequences"] if topic["id"] in s["topics"]][:2]
                for seed in seeds:
                    await h.ok("configure_thread", {"action": "pin", "name": name, "sequenceId": ids[seed][i % copies]})
            for i in range(EXTRA_THREADS):
                mixed = " ".join(t["summary"] for t in topics[i::EXTRA_THREADS])
                await h.ok("configure_thread", {"action": "create", "name": f"Mixed {i + 1}", "description": mixed})
            threads = len(topics) + EXTRA_THREADS
            start = time.perf_counter()
            first = await h.ok("review_proposals", {"action": "list"})
            # A list matches within a time budget; the backfills are timed until none is left.
            while first.get("matchingPending"):
                first = await h.ok("review_proposals", {"action": "list"})
            backfill_ms = (time.perf_counter() - start) * 1000
            warm = [await h.timed("review_proposals", {"action": "list"}) for _ in range(calls)]
            scoped = [await h.timed("review_proposals", {"action": "list", "thread": "Mixed 1"}) for _ in range(calls)]
            pending_total = await opened.read(
                lambda c: c.execute("SELECT count(*) FROM thread_proposals").fetchall()[0][0]
            )
    sequences = sum(len(v) for v in ids.values())
    print(f"store: {thoughts} thoughts, {sequences} sequences, {threads} threads, {pending_total} pending proposals")
    print(f"first list (runs all {threads} backfills): {backfill_ms:.0f} ms, {len(first['proposals'])} shown")
    print(f"review_proposals list, warm: p50 {statistics.median(warm):.1f} ms, p95 {_p95(warm):.1f} ms ({calls} calls)")
    print(f"review_proposals list thread=…: p50 {statistics.median(scoped):.1f} ms, p95 {_p95(scoped):.1f} ms")


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--copies", type=int, default=9)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args(argv)
    asyncio.run(run(args.copies, args.calls))


if __name__ == "__main__":
    main()
