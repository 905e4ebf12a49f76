"""Query-embedding latency of an ONNX MiniLM file beside the shipped one (one thread, one query a call).

`python -m bench.finetune.query_latency --model PATH` embeds dev's question texts (the first
200, short queries as search sees them) one at a time and prints the median and p95 in ms.
A benchmark, never a timed test.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

from bench.replay import DATA
from thoughtline.library.embed import MiniLMEmbedder


def measure(model: Path | None, queries: Sequence[str], rounds: int = 3) -> tuple[float, float]:
    """Median and p95 of one-query embed calls over `rounds` passes (after a warm-up pass)."""
    embedder = MiniLMEmbedder(model_path=model, threads=1)
    embedder.embed(list(queries[:20]))
    times = []
    for _ in range(rounds):
        for q in queries:
            start = time.perf_counter()
            embedder.embed([q])
            times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return statistics.median(times), times[int(0.95 * (len(times) - 1))]


def main(argv: Sequence[str] | None = None) -> None:
    """Print shipped and candidate latencies, interleaved by round to share the machine's noise."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    data = json.loads((DATA / "dev.json").read_text())
    queries = [str(q["query"]) for q in data["questions"]][:200]
    queries += queries[: 200 - len(queries)]
    for label, model in (("shipped", None), ("candidate", args.model), ("shipped", None), ("candidate", args.model)):
        p50, p95 = measure(model, queries, args.rounds)
        print(f"{label:9} {len(queries)} queries x {args.rounds}: median {p50:.2f} ms, p95 {p95:.2f} ms")


if __name__ == "__main__":
    main()
