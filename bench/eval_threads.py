"""Thread proposal evaluation: precision, recall and traps proposed, in two flows, per split.

The labelled set is `bench/data/reasoning/{train,dev,test}.json` (its README describes it): topics with
a `thread` are threads and their sequences are true members; `nearMissOf` marks traps. Every
sequence is written through the real tools (`sequentialthinking`, `configure_thread`,
`review_proposals`) into a real store; only the HTTP transport is skipped.

- Flow A: threads are created first; the two oldest sequences of each thread name it in
  `threads` on their first thought; every sequence is matched when it completes (a
  `review_proposals list` after each sequence, so matching sees the members of that moment).
- Flow B: every sequence is stored first; then each thread is created and two seeds are pinned;
  one `review_proposals list` runs the backfills.

A pair counts as positive when the sequence belongs to the thread and is not already a member.
A trap proposed is a proposal of a sequence whose topic is a near miss of the thread's topic.
The calibration grid is `bench/thread_sweep.py` (train and dev only), which replays both flows in
memory with this module's labels and scoring; this module never imports it (run one way).
`--model PATH` runs another ONNX embedder (same inputs and outputs as the shipped MiniLM), with
its own embedding cache (`bench.embed_cache.model_tag`) and fresh stores.

    python -m bench.eval_threads [--splits dev,test] [--model PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.embed_cache import cached_embedder, model_tag
from bench.thread_harness import Harness, harness, sequence_calls
from thoughtline.library.embed import Embedder
from thoughtline.library.proposals import TUNING

DATA = Path(__file__).resolve().parent / "data" / "reasoning"


@dataclass(frozen=True)
class LabelledSet:
    """One split: thread topics, sequences in write order, and the seeds of each thread."""

    split: str
    threads: dict[str, dict[str, str]]  # topic id -> {name, description}
    near: dict[str, str]  # topic id -> the topic it is a near miss of
    sequences: list[dict[str, Any]]  # oldest first
    seeds: dict[str, list[str]]  # thread topic -> two sequence ids

    def truth(self, seq: Mapping[str, Any]) -> set[str]:
        """The threads (topic ids) a sequence truly belongs to."""
        return {t for t in seq["topics"] if t in self.threads}


def load(split: str) -> LabelledSet:
    """Read one split and choose the seeds: each thread's two oldest sequences, one thread each."""
    raw = json.loads((DATA / f"{split}.json").read_text())
    threads = {t["id"]: t["thread"] for t in raw["topics"] if t["thread"]}
    near = {t["id"]: t["nearMissOf"] for t in raw["topics"] if t.get("nearMissOf")}
    ordered = sorted(raw["sequences"], key=lambda s: (-s["daysAgo"], s["id"]))
    seeds: dict[str, list[str]] = {t: [] for t in threads}
    used: set[str] = set()
    for seq in ordered:
        for topic in seq["topics"]:
            if topic in threads and len(seeds[topic]) < 2 and seq["id"] not in used:
                seeds[topic].append(seq["id"])
                used.add(seq["id"])
    return LabelledSet(split, threads, near, ordered, seeds)


@dataclass
class Score:
    """Counts of one flow on one split."""

    positives: int = 0
    true_positive: int = 0
    false_positive: int = 0
    traps: int = 0
    trap_pairs: int = 0
    proposals: list[tuple[str, str]] = field(default_factory=list)

    @property
    def precision(self) -> float:
        made = self.true_positive + self.false_positive
        return self.true_positive / made if made else 1.0

    @property
    def recall(self) -> float:
        return self.true_positive / self.positives if self.positives else 1.0

    def line(self, label: str) -> str:
        return (
            f"{label}: precision {self.precision:.3f} recall {self.recall:.3f} traps {self.traps} of {self.trap_pairs} "
            f"(proposed {self.true_positive + self.false_positive}, true {self.true_positive}, "
            f"positives {self.positives})"
        )


def score(data: LabelledSet, proposed: Sequence[tuple[str, str]], members: Mapping[str, set[str]]) -> Score:
    """Score (thread topic, sequence id) proposals against the labels; `members` = confirmed per thread."""
    out = Score(proposals=list(proposed))
    by_id = {s["id"]: s for s in data.sequences}
    for seq in data.sequences:
        out.positives += len({t for t in data.truth(seq) if seq["id"] not in members.get(t, set())})
        out.trap_pairs += sum(1 for t in seq["topics"] if data.near.get(t) in data.threads)
    for topic, seq_id in proposed:
        seq = by_id[seq_id]
        if topic in data.truth(seq):
            out.true_positive += 1
        else:
            out.false_positive += 1
            out.traps += any(data.near.get(t) == topic for t in seq["topics"])
    return out


async def matched(h: Harness) -> None:
    """List until no matching is left (a list runs matching within a time budget, SPEC §5.3)."""
    while (await h.ok("review_proposals", {"action": "list", "limit": 1})).get("matchingPending"):
        pass


async def _proposed(h: Harness, names: Mapping[str, str], ids: Mapping[str, str]) -> list[tuple[str, str]]:
    """Every pending proposal as (thread topic, sequence id), all pages, once matching is done."""
    await matched(h)
    topic_of = {name: topic for topic, name in names.items()}
    seq_of = {public: key for key, public in ids.items()}
    out: list[tuple[str, str]] = []
    cursor: str | None = None
    while True:
        args: dict[str, Any] = {"action": "list", "limit": 50, **({"cursor": cursor} if cursor else {})}
        page = await h.ok("review_proposals", args)
        out += [(topic_of[p["thread"]], seq_of[p["sequenceId"]]) for p in page["proposals"]]
        cursor = page["nextCursor"]
        if cursor is None:
            return out


def writable(calls: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The calls in file order, except that a branch waits until the thought it forks from is written.

    The write path refuses a fork from a thought not yet on the main path; one train sequence
    (c-tls-expiry-4) lists its branch before that thought.
    """
    out: list[dict[str, Any]] = []
    waiting: list[dict[str, Any]] = []
    written: set[int] = set()
    for call in calls:
        if "branchId" in call and call.get("branchFromThought") not in written:
            waiting.append(call)
            continue
        out.append(call)
        if "branchId" not in call:
            written.add(call["thoughtNumber"])
            ready = [w for w in waiting if w.get("branchFromThought") in written]
            out += ready
            waiting = [w for w in waiting if w not in ready]
    return out + waiting


async def _write(h: Harness, seq: Mapping[str, Any], threads: list[str] | None = None) -> str:
    public: str | None = None
    for i, call in enumerate(writable(sequence_calls(seq))):
        if public is not None:
            call["sequenceId"] = public
        if i == 0 and threads:
            call["threads"] = threads
        public = str((await h.ok("sequentialthinking", call))["sequenceId"])
    assert public is not None
    return public


async def flow_a(data: LabelledSet, embedder: Embedder, root: Path) -> Score:
    """Threads first, seeds named at write time, matching as each sequence completes."""
    async with harness(root / f"a-{data.split}", embedder) as h:
        names = {t: v["name"] for t, v in data.threads.items()}
        for thread in data.threads.values():
            await h.ok("configure_thread", {"action": "create", "name": thread["name"], **_desc(thread)})
        seed_of = {s: t for t, seeds in data.seeds.items() for s in seeds}
        ids: dict[str, str] = {}
        for seq in data.sequences:
            seeded = seed_of.get(seq["id"])
            ids[seq["id"]] = await _write(h, seq, [names[seeded]] if seeded else None)
            await matched(h)
        proposed = await _proposed(h, names, ids)
    members = {t: set(s) for t, s in data.seeds.items()}
    return score(data, proposed, members)


async def flow_b(data: LabelledSet, embedder: Embedder, root: Path) -> Score:
    """Sequences first; then threads, each with two pinned seeds; one list runs the backfills."""
    async with harness(root / f"b-{data.split}", embedder) as h:
        names = {t: v["name"] for t, v in data.threads.items()}
        ids = {seq["id"]: await _write(h, seq) for seq in data.sequences}
        for topic, thread in data.threads.items():
            await h.ok("configure_thread", {"action": "create", "name": thread["name"], **_desc(thread)})
            for seed in data.seeds[topic]:
                await h.ok("configure_thread", {"action": "pin", "name": thread["name"], "sequenceId": ids[seed]})
        proposed = await _proposed(h, names, ids)
    members = {t: set(s) for t, s in data.seeds.items()}
    return score(data, proposed, members)


def _desc(thread: Mapping[str, str]) -> dict[str, str]:
    return {"description": thread["description"]} if thread.get("description") else {}


async def evaluate(splits: Sequence[str], model: Path | None = None, pooling: str = "mean") -> None:
    """Run both flows on each split and print the scores."""
    embedder = cached_embedder(model, pooling)
    tag = model_tag(model, pooling)
    print(f"model {tag}; tuning: threshold {TUNING.threshold} words {TUNING.words} blend_k {TUNING.blend_k}")
    # A fresh directory per run: stores made with one model never meet another model's vectors.
    with tempfile.TemporaryDirectory(prefix=f"eval-threads-{tag}-") as tmp:
        for split in splits:
            data = load(split)
            a = await flow_a(data, embedder, Path(tmp))
            print(a.line(f"{split} flow A (threads first, matched on completion)"))
            b = await flow_b(data, embedder, Path(tmp))
            print(b.line(f"{split} flow B (sequences first, backfill, 2 pinned seeds)"))


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--splits", default="dev,test", help="comma-separated: train, dev, test")
    parser.add_argument("--model", type=Path, help="an ONNX embedding model other than the shipped one")
    parser.add_argument("--pooling", choices=("mean", "cls"), default="mean", help="how --model pools tokens")
    args = parser.parse_args(argv)
    splits = [s.strip() for s in args.splits.split(",") if s.strip()]
    asyncio.run(evaluate(splits, args.model, args.pooling))


if __name__ == "__main__":
    main()
