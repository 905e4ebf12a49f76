"""REST API latency on a store of 100k thoughts (issue 18: API list and briefing p95 ≤ 50 ms).

Builds the thread benchmarks' store (`bench/thread_store.py`: real migrations and write path,
events on about a fifth of the thoughts) at 5,000 sequences of 20 thoughts and 20 threads
(`--topics 49` for 50), then times, through a real `thoughtline serve` process over loopback
with the bearer token: `GET /api/v1/sequences` (first page and a later page),
`GET /api/v1/threads`, `GET /api/v1/threads/{name}/briefing` for every thread, and
`GET /api/v1/sequences/{id}` (a 200-thought page is the pages' case; here a 20-thought
sequence). Each line gives wall p50/p95/p99/max and the server's CPU ms per request, with the
load average. The first thread list after the server opens the store is timed on its own. A
benchmark, not a test.

    python -m bench.api_latency [--sequences 5000] [--topics 19] [--reps 20] [--data DIR] [--keep]
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from bench.server import spawn, wait_first_call
from bench.thread_store import Timing, arguments, process_cpu, report, scratch_store, summary, timed


def measure(data_dir: Path, reps: int) -> dict[str, dict[str, float]]:
    """Time each route through a real server process."""
    server = spawn(data_dir, log_level="warning")
    try:
        wait_first_call(server)
        cpu = process_cpu(server.pid)
        base = f"http://127.0.0.1:{server.port}/api/v1"
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {server.token}"}, timeout=60) as http:

            def get(path: str, params: dict[str, str] | None = None) -> Callable[[], Any]:
                def run() -> Any:
                    answer = http.get(path, params=params)
                    answer.raise_for_status()
                    return answer.json()

                return run

            cpu_start, started = cpu(), time.perf_counter()
            names = [t["name"] for t in get("/threads")()["threads"]]
            first_list = Timing([time.perf_counter() - started], cpu() - cpu_start)
            first = get("/sequences", {"limit": "50"})()
            later = {"limit": "50", "cursor": first["nextCursor"]}
            briefs = Timing()
            for name in names:
                briefs = briefs.add(timed(get(f"/threads/{quote(name, safe='')}/briefing"), reps, cpu))
            sequence = first["sequences"][0]["sequenceId"]
            return {
                "GET /threads (first, store just opened)": summary(first_list),
                "GET /sequences (first 50)": summary(timed(get("/sequences", {"limit": "50"}), reps * 5, cpu)),
                "GET /sequences (a later page)": summary(timed(get("/sequences", later), reps * 5, cpu)),
                "GET /threads": summary(timed(get("/threads"), reps * 5, cpu)),
                "GET /threads/{name}/briefing": summary(briefs),
                "GET /sequences/{id}": summary(timed(get(f"/sequences/{sequence}"), reps * 5, cpu)),
            }
    finally:
        server.stop()


def main() -> None:
    """Build the store, measure, print a table and the JSON."""
    args = arguments(__doc__ or "", sequences=5_000, reps=20).parse_args()
    with scratch_store(args, "api-bench-") as (data_dir, path):
        report(path, measure(data_dir, args.reps))


if __name__ == "__main__":
    main()
