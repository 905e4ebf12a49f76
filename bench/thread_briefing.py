"""Thread briefing latency on a store of 5k thoughts / 20 threads (issue 9: p95 ≤ 50 ms).

Builds the thread benchmarks' store (`bench/thread_store.py`): 250 sequences of 20 thoughts,
19 topic threads and one broad thread holding 100 sequences (2,000 thoughts). Then measures, for
every thread:

1. `library.briefing.briefing` in a read transaction (the assembly alone), and
2. `thread_briefing` and `configure_thread list` through a real `thoughtline serve` process over
   loopback (`/mcp-compat`, bearer token, blocking httpx): what a client sees.

Each line gives wall p50/p95/p99/max and the CPU ms per call of the process doing the work, with
the load average. A benchmark, not a test: nothing asserts on time.

    python -m bench.thread_briefing [--sequences 250] [--reps 10] [--data DIR] [--keep]
"""

from __future__ import annotations

import json
from collections.abc import Callable
from itertools import count
from pathlib import Path
from typing import Any

from bench.rpc import RpcClient, check
from bench.server import spawn, wait_first_call
from bench.thread_store import (
    BROAD,
    DAY_MS,
    START_MS,
    Timing,
    arguments,
    process_cpu,
    report,
    scratch_store,
    summary,
    timed,
)
from thoughtline.library.briefing import Periods, briefing
from thoughtline.storage import threads as thread_store
from thoughtline.storage.db import connect


def in_process(path: Path, reps: int) -> dict[str, dict[str, float]]:
    """The briefing assembly alone, each thread `reps` times, in one read transaction per call."""
    conn = connect(path, "wal", readonly=True)
    names = [str(r[0]) for r in conn.execute("SELECT name FROM threads ORDER BY id")]
    now = START_MS + 70 * DAY_MS
    periods = Periods()

    def one(name: str, since: int | None) -> Callable[[], Any]:
        def run() -> Any:
            conn.execute("BEGIN")
            try:
                thread = thread_store.require_thread(conn, name)
                return briefing(conn, thread, now_ms=now, periods=periods, events_limit=20, since_ms=since)
            finally:
                conn.execute("COMMIT")

        return run

    plain, since, broad = Timing(), Timing(), Timing()
    for name in names:
        if name == BROAD:
            broad = broad.add(timed(one(name, None), reps))
        else:
            plain = plain.add(timed(one(name, None), reps))
        since = since.add(timed(one(name, START_MS + 30 * DAY_MS), reps))
    conn.close()
    return {
        "briefing (topic threads)": summary(plain),
        "briefing (broad thread)": summary(broad),
        "briefing with since": summary(since),
    }


def over_http(data_dir: Path, reps: int) -> dict[str, dict[str, float]]:
    """`thread_briefing` and `configure_thread list` through a real server process."""
    server = spawn(data_dir, log_level="warning")
    try:
        wait_first_call(server)
        cpu = process_cpu(server.pid)
        with RpcClient(server.url, server.token) as client:
            ids = count(1)

            def call(name: str, args: dict[str, Any]) -> Callable[[], Any]:
                def run() -> Any:
                    body = {"jsonrpc": "2.0", "id": next(ids), "method": "tools/call"}
                    body["params"] = {"name": name, "arguments": args}
                    return check(client.post(json.dumps(body).encode()))

                return run

            listed = call("configure_thread", {"action": "list"})().json()["result"]["structuredContent"]
            briefs = Timing()
            for name in [t["name"] for t in listed["threads"]]:
                briefs = briefs.add(timed(call("thread_briefing", {"name": name}), reps, cpu))
            lists = timed(call("configure_thread", {"action": "list"}), reps * 5, cpu)
    finally:
        server.stop()
    return {"thread_briefing over HTTP": summary(briefs), "configure_thread list over HTTP": summary(lists)}


def main() -> None:
    """Build the store, measure, print a table and the JSON."""
    args = arguments(__doc__ or "", sequences=250, reps=10).parse_args()
    with scratch_store(args, "thread-bench-") as (data_dir, path):
        report(path, {**in_process(path, args.reps), **over_http(data_dir, args.reps)})


if __name__ == "__main__":
    main()
