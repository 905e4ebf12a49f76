"""Search on the reasoning set's dev split, through the real tools, must stay at or above its floors.

The dev split (bench/data/reasoning/dev.json: ~90 sequences of agents' reasoning and ~190
questions) is written into a real store through `sequentialthinking`, then every question goes
through `search_thoughts` twice: alone, and with its agent-written alternatives
(bench/data/agent-queries/dev.json), as an agent following the tool description sends it. An
abstained answerable question counts as a miss, as a user sees it. The test split is never read
here (it is reported by `make eval`, never tuned on). Floors live in
tests/golden/reasoning_floors.json, one set per way of asking, and only ever go up.
"""

from __future__ import annotations

import json
from pathlib import Path
from statistics import fmean
from typing import Any

import pytest

from tests.golden.harness import GOLDEN, LibraryHarness, library_harness, load_reasoning
from thoughtline.library.embed import MiniLMEmbedder

pytestmark = pytest.mark.anyio

BENCH_DATA = Path(__file__).resolve().parents[1] / "bench" / "data"
DEV = BENCH_DATA / "reasoning" / "dev.json"
DEV_ALTERNATIVES = BENCH_DATA / "agent-queries" / "dev.json"


async def measure(
    h: LibraryHarness, data: dict[str, Any], where: dict[str, Any], alternatives: dict[str, list[str]]
) -> dict[str, float]:
    """Search every question (with its alternatives, when given) and compute the floored metrics."""
    r5: list[float] = []
    rr: list[float] = []
    absent: list[float] = []
    answered: list[float] = []
    for q in data["questions"]:
        args: dict[str, Any] = {"query": q["query"], "limit": 10}
        if q["id"] in alternatives:
            args["alternatives"] = alternatives[q["id"]]
        out = await h.ok("search_thoughts", args)
        if not q["answers"]:
            absent.append(float(out["abstained"]))
            continue
        answered.append(float(not out["abstained"]))
        ranked = [(r["sequenceId"], r["branchId"], r["thoughtNumber"]) for r in out["results"]]
        gold = {where[a] for a in q["answers"]}
        hits = len(gold & set(ranked[:5]))
        # A multi question needs each of its answers; any other question is answered by any one of its own.
        r5.append(hits / len(gold) if q["type"] == "multi" else float(hits > 0))
        first = next((i for i, key in enumerate(ranked) if key in gold), None)
        rr.append(0.0 if first is None else 1.0 / (first + 1))
    return {
        "recall_at_5": round(fmean(r5), 4),
        "mrr": round(fmean(rr), 4),
        "absent_abstained": round(fmean(absent), 4),
        "answerable_not_abstained": round(fmean(answered), 4),
    }


async def test_dev_split_search_stays_at_or_above_its_floors_alone_and_with_alternatives(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    data = json.loads(DEV.read_text())
    alternatives = {q["id"]: q["alternatives"] for q in json.loads(DEV_ALTERNATIVES.read_text())["questions"]}
    assert set(alternatives) == {q["id"] for q in data["questions"]}
    async with library_harness(tmp_path / "data", embedder) as h:
        where = await load_reasoning(h, data)
        measured = {
            "question": await measure(h, data, where, {}),
            "alternatives": await measure(h, data, where, alternatives),
        }
    floors = json.loads((GOLDEN / "reasoning_floors.json").read_text())
    print("reasoning dev metrics:", json.dumps(measured))
    below = {
        (mode, name): (value, floors[mode][name])
        for mode, metrics in measured.items()
        for name, value in metrics.items()
        if value < floors[mode][name]
    }
    assert not below, f"dev-split retrieval fell below its floors (value, floor): {below}"
