"""What related earlier reasoning costs a write: the opening thought and the second one, on and off.

    python -m bench.related_latency [--split train] [--openings 200]

A real store is filled with a split of the reasoning set (2,309 thoughts for train) through the
tool registry, then new sequences open on the same store, alternating a registry with related
suggestions and one without (today's `sequentialthinking`), so both see the same store and the
same disk. Each call is timed through `ToolRegistry.call` (argument parsing, the writer, the
commit, the result), in wall-clock time and in this process's CPU time (every thread; steadier
than wall time on a busy machine); background work runs between calls, as while an agent thinks.
Without `RelatedOnOpen` (a build before it), only the "off" column is measured.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.replay import Clock, load_split, oldest_first, write_sequence
from thoughtline.identity import Principal, reset_principal, set_principal
from thoughtline.mcp.core_tools import core_tools
from thoughtline.mcp.library_tools import Library
from thoughtline.mcp.tools import ToolRegistry
from thoughtline.storage.router import StoreRouter


async def _fill(registry: ToolRegistry, data: dict[str, Any]) -> None:
    for seq in oldest_first(data):
        async for _ in write_sequence(registry, seq):
            pass


async def measure(split: str, openings: int, data_dir: Path) -> dict[str, dict[str, float]]:
    """Median and p90 (ms) of first and second thoughts, with related on and off."""
    router = StoreRouter(data_dir, "wal", Clock())
    library = Library(background=True)
    router.on_open.append(library.attach)
    router.on_close.append(library.detach)
    registries = {"off": ToolRegistry(core_tools(), router, Clock())}
    if hasattr(library, "related"):
        registries["on"] = ToolRegistry(core_tools(related=library.related), router, Clock())
    token = set_principal(Principal(user_key="related-latency", via="token"))
    kinds = ("first", "second", "first cpu", "second cpu")
    samples: dict[str, dict[str, list[float]]] = {k: {kind: [] for kind in kinds} for k in registries}
    opening_texts = [s["thoughts"][:2] for s in load_split("dev")["sequences"] if len(s["thoughts"]) >= 2]
    try:
        await _fill(registries["off"], load_split(split))
        await library.idle()
        for i in range(openings):
            first, second = opening_texts[i % len(opening_texts)]
            for mode, registry in registries.items():
                base = {"nextThoughtNeeded": True, "totalThoughts": 5}
                opening = {**base, "thought": first["thought"], "thoughtNumber": 1}
                c0, t0 = time.process_time(), time.perf_counter()
                one = await registry.call("sequentialthinking", opening)
                t1, c1 = time.perf_counter(), time.process_time()
                await library.idle()
                assert isinstance(one.structured_content, dict)
                args = {**base, "thought": second["thought"], "thoughtNumber": 2}
                c2, t2 = time.process_time(), time.perf_counter()
                await registry.call("sequentialthinking", {**args, "sequenceId": one.structured_content["sequenceId"]})
                t3, c3 = time.perf_counter(), time.process_time()
                await library.idle()
                samples[mode]["first"].append((t1 - t0) * 1000)
                samples[mode]["second"].append((t3 - t2) * 1000)
                samples[mode]["first cpu"].append((c1 - c0) * 1000)
                samples[mode]["second cpu"].append((c3 - c2) * 1000)
    finally:
        reset_principal(token)
        await library.close()
        await router.close_all()
    return {
        f"{mode} {which}": {
            "median": statistics.median(values),
            "p90": sorted(values)[int(0.9 * len(values))],
        }
        for mode, kinds in samples.items()
        for which, values in kinds.items()
    }


def main() -> None:
    """Fill a store, time openings, print medians."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", default="train")
    parser.add_argument("--openings", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="thoughtline-related-latency-") as tmp:
        result = asyncio.run(measure(args.split, args.openings, Path(tmp)))
    for name, numbers in result.items():
        print(f"{name:>14}: median {numbers['median']:.3f} ms · p90 {numbers['p90']:.3f} ms")


if __name__ == "__main__":
    main()
