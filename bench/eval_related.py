"""Related earlier reasoning on open (SPEC §5.4), replayed: what a new sequence's second thought names.

Each split of bench/data/reasoning is written in its written order (oldest `daysAgo` first)
through the real tool registry (`bench/replay.py`, as a signed-in principal), with
background work on (the agent pauses between thoughts, so after-commit work finishes) or off
(Lambda). The suggestions are collected at threshold 0 (the best three, whatever their share),
so every threshold is scored from one replay. A suggestion is right when it shares a topic with
the new sequence (a thread is a topic); an opening "has an earlier related sequence" when one
written before it shares a topic. After each split, the openings that name no topic
(`bench/topic_free_openings.py`) are written on top of it, one after another: any suggestion for
one of them is wrong.

    python -m bench.eval_related [--splits train,dev] [--background on|off] [--json]

Calibrate on train and dev only (the printed sweep); report test once, at the shipped threshold.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.replay import load_split, oldest_first, replaying, write_sequence
from bench.topic_free_openings import TOPIC_FREE_OPENINGS
from thoughtline.library.related import LIMIT, THRESHOLD
from thoughtline.library.related_open import RelatedOnOpen
from thoughtline.mcp.library_tools import Library

USER = "eval-related"
GRID = [round(0.10 + 0.01 * i, 2) for i in range(31)]
# Calibration: the lowest threshold whose precision reaches this on train and on dev alike.
PRECISION_GOAL = 0.95


@dataclass(frozen=True)
class Opening:
    """One new sequence: what its second thought named (best first, with shares) and what was right."""

    sequence: str
    suggested: list[tuple[str, float]]  # dataset sequence id, similarity
    related_before: frozenset[str]  # earlier dataset sequences sharing a topic


@dataclass(frozen=True)
class Replayed:
    """A split's openings, and the topic-free openings written after it (none has a related sequence)."""

    openings: list[Opening]
    topic_free: list[Opening]


def topic_free_sequences() -> list[dict[str, Any]]:
    """The topic-free openings as dataset sequences of two thoughts, ready for `write_sequence`."""
    out: list[dict[str, Any]] = []
    for number, pair in enumerate(TOPIC_FREE_OPENINGS, start=1):
        thoughts = [
            {
                "id": f"topic-free-{number}.{n}",
                "thought": text,
                "thoughtNumber": n,
                "totalThoughts": 2,
                "nextThoughtNeeded": n == 1,
            }
            for n, text in enumerate(pair, start=1)
        ]
        out.append({"id": f"topic-free-{number}", "thoughts": thoughts})
    return out


async def replay(data: Mapping[str, Any], data_dir: Path, background: bool) -> Replayed:
    """Write every sequence in written order, then the topic-free openings; collect each second thought's `related`."""
    library = Library(background=background, related=RelatedOnOpen(background=background, threshold=0.0))
    topics: dict[str, set[str]] = {}
    by_public: dict[str, str] = {}
    openings: list[Opening] = []
    async with replaying(data_dir, USER, library, related=True) as run:

        async def opening(seq: Mapping[str, Any], before: frozenset[str]) -> Opening:
            sequence_id: str | None = None
            suggested: list[tuple[str, float]] = []
            async for _, out in write_sequence(run.registry, seq):
                sequence_id = str(out["sequenceId"])
                for item in out.get("related", []):
                    suggested.append((by_public[item["sequenceId"]], float(item["similarity"])))
                run.clock.t += 60
                await library.idle()  # the agent thinks between two calls: after-commit work is done
            if sequence_id is not None:
                by_public[sequence_id] = str(seq["id"])
            return Opening(str(seq["id"]), suggested, before)

        for seq in oldest_first(data):
            run.clock.written(seq)
            mine = set(seq["topics"])
            openings.append(await opening(seq, frozenset(o for o, theirs in topics.items() if theirs & mine)))
            topics[str(seq["id"])] = mine
        topic_free = [await opening(seq, frozenset()) for seq in topic_free_sequences()]
    return Replayed(openings, topic_free)


def score(openings: Sequence[Opening], threshold: float, limit: int = LIMIT) -> dict[str, float]:
    """Precision over suggestions, recall over openings with an earlier related sequence, false-open rate."""
    right = wrong = hits = with_related = without = noisy = 0
    for o in openings:
        shown = [s for s, share in o.suggested[:limit] if share >= threshold]
        right += sum(1 for s in shown if s in o.related_before)
        wrong += sum(1 for s in shown if s not in o.related_before)
        if o.related_before:
            with_related += 1
            hits += any(s in o.related_before for s in shown)
        else:
            without += 1
            noisy += bool(shown)
    return {
        "precision": right / (right + wrong) if right + wrong else 1.0,
        "recall": hits / with_related if with_related else 0.0,
        "suggestedWithoutRelated": noisy / without if without else 0.0,
        "suggestions": float(right + wrong),
        "openingsWithRelated": float(with_related),
        "openingsWithout": float(without),
    }


def calibrate(by_split: Mapping[str, Sequence[Opening]]) -> float | None:
    """The lowest grid threshold reaching PRECISION_GOAL on every given split (train and dev only)."""
    for threshold in GRID:
        if all(score(o, threshold)["precision"] >= PRECISION_GOAL for o in by_split.values()):
            return threshold
    return None


def main() -> None:
    """Replay the splits, print the sweep (train/dev) and the shipped threshold's numbers."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--splits", default="train,dev")
    parser.add_argument("--background", choices=("on", "off"), default="on")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    names = [s for s in args.splits.split(",") if s]
    replayed: dict[str, Replayed] = {}
    with tempfile.TemporaryDirectory(prefix="thoughtline-related-") as tmp:
        for name in names:
            replayed[name] = asyncio.run(replay(load_split(name), Path(tmp) / name, args.background == "on"))
    by_split = {n: r.openings for n, r in replayed.items()}
    tunable = {n: o for n, o in by_split.items() if n != "test"}
    report: dict[str, Any] = {
        "background": args.background,
        "threshold": THRESHOLD,
        "calibrated": calibrate(tunable) if tunable else None,
        "shipped": {n: score(o, THRESHOLD) for n, o in by_split.items()},
        # The share of topic-free openings that were given a suggestion at the shipped threshold.
        "topicFree": {n: score(r.topic_free, THRESHOLD)["suggestedWithoutRelated"] for n, r in replayed.items()},
    }
    if not args.json:
        print(f"background {args.background}; shipped threshold {THRESHOLD}; calibrated on {list(tunable)}: "
              f"{report['calibrated']}")  # fmt: skip
        if tunable:
            print("threshold  " + "  ".join(f"{n:>22}" for n in tunable))
            for t in GRID:
                cells = []
                for o in tunable.values():
                    m = score(o, t)
                    cells.append(f"P {m['precision']:.3f} R {m['recall']:.3f} F {m['suggestedWithoutRelated']:.3f}")
                print(f"{t:9.2f}  " + "  ".join(f"{c:>22}" for c in cells))
        for n, m in report["shipped"].items():
            print(
                f"{n}: precision {m['precision']:.3f} · recall {m['recall']:.3f} over {m['openingsWithRelated']:.0f} "
                f"openings with an earlier related sequence · suggested on {m['suggestedWithoutRelated']:.3f} of "
                f"{m['openingsWithout']:.0f} without · {m['suggestions']:.0f} suggestions"
            )
            free = replayed[n].topic_free
            named = round(report["topicFree"][n] * len(free))
            print(f"{n}: topic-free openings written after it given a suggestion: {named} of {len(free)}")
    else:
        print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
