"""REST API latency on a store of 100k thoughts (issue 18: API list and briefing p95 ≤ 50 ms).

Builds the thread benchmark's store (`bench/thread_briefing.py`: real migrations and write path,
20 threads, events on about a fifth of the thoughts) at 5,000 sequences of 20 thoughts, then
times, through a real `thoughtline serve` process over loopback with the bearer token:
`GET /api/v1/sequences` (first page and a later page), `GET /api/v1/threads`,
`GET /api/v1/threads/{name}/briefing` for every thread, and `GET /api/v1/sequences/{id}` (a
200-thought page is the pages' case; here a 20-thought sequence). A benchmark, not a test.

    python -m bench.api_latency [--sequences 5000] [--reps 20] [--keep]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from bench.server import spawn, wait_first_call
from bench.thread_briefing import build_store, summary, timed
from thoughtline.identity import OWNER_KEY
from thoughtline.storage.router import store_path


def measure(data_dir: Path, reps: int) -> dict[str, dict[str, float]]:
    """Time each route through a real server process."""
    server = spawn(data_dir, log_level="warning")
    try:
        wait_first_call(server)
        base = f"http://127.0.0.1:{server.port}/api/v1"
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {server.token}"}, timeout=60) as http:

            def get(path: str, params: dict[str, str] | None = None) -> Callable[[], Any]:
                def run() -> Any:
                    answer = http.get(path, params=params)
                    answer.raise_for_status()
                    return answer.json()

                return run

            first = get("/sequences", {"limit": "50"})()
            names = [t["name"] for t in get("/threads")()["threads"]]
            later = {"limit": "50", "cursor": first["nextCursor"]}
            briefs: list[float] = []
            for name in names:
                briefs.extend(timed(get(f"/threads/{quote(name, safe='')}/briefing"), reps))
            sequence = first["sequences"][0]["sequenceId"]
            return {
                "GET /sequences (first 50)": summary(timed(get("/sequences", {"limit": "50"}), reps * 5)),
                "GET /sequences (a later page)": summary(timed(get("/sequences", later), reps * 5)),
                "GET /threads": summary(timed(get("/threads"), reps * 5)),
                "GET /threads/{name}/briefing": summary(briefs),
                "GET /sequences/{id}": summary(timed(get(f"/sequences/{sequence}"), reps * 5)),
            }
    finally:
        server.stop()


def main() -> None:
    """Build the store, measure, print a table and the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sequences", type=int, default=5_000, help="sequences of 20 thoughts")
    parser.add_argument("--reps", type=int, default=20, help="timed calls per line (x5 for the lists)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch store")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="api-bench-"))
    try:
        data_dir = scratch / "data"
        path = store_path(data_dir, OWNER_KEY)
        path.parent.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        held = build_store(path, sequences=args.sequences)
        print(f"store: {held} (built in {time.perf_counter() - started:.1f} s)")
        lines = measure(data_dir, args.reps)
        print(f"{'line':32} {'n':>5} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'max ms':>8}")
        for line, s in lines.items():
            print(f"{line:32} {s['n']:>5} {s['p50_ms']:>8} {s['p95_ms']:>8} {s['p99_ms']:>8} {s['max_ms']:>8}")
        print(json.dumps({"store": held, "lines": lines}))
    finally:
        if args.keep:
            print(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
