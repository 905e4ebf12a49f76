"""Thread briefing latency on a store of 5k thoughts / 20 threads (issue 9: p95 ≤ 50 ms).

Builds a real store with the real migrations and write path (`append_thought`, `threads` and
`event` arguments included): 250 sequences of 20 thoughts over 60 days, each joined to one or
two of 19 topic threads, plus one broad thread holding 100 sequences (2,000 thoughts), about a
fifth of the thoughts tagged with events. Then measures, for every thread:

1. `library.briefing.briefing` in a read transaction (the assembly alone), and
2. `thread_briefing` and `configure_thread list` through a real `thoughtline serve` process over
   loopback (`/mcp-compat`, bearer token, blocking httpx): what a client sees.

It is a benchmark, not a test: nothing asserts on time.

    python -m bench.thread_briefing [--reps 10] [--keep]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import tempfile
import time
from collections.abc import Callable
from itertools import count
from pathlib import Path
from typing import Any

from bench.rpc import RpcClient, check
from bench.server import spawn, wait_first_call
from bench.stats import percentile
from thoughtline.domain.arguments import EVENT_KINDS, ThoughtInput
from thoughtline.identity import OWNER_KEY
from thoughtline.library.briefing import Periods, briefing
from thoughtline.storage import threads as thread_store
from thoughtline.storage.db import connect, write_transaction
from thoughtline.storage.migrations import migrate
from thoughtline.storage.router import store_path
from thoughtline.storage.thoughts import Written, append_thought

SEQUENCES = 250
THOUGHTS_PER_SEQUENCE = 20
TOPICS = 19
BROAD = "everything-2026"
DAY_MS = 86_400_000
START_MS = 1_790_000_000_000
WORDS = ("cache", "index", "replica", "shard", "lock", "queue", "budget", "hire", "vendor", "schema", "latency")


def build_store(path: Path, seed: int = 7, sequences: int = SEQUENCES) -> dict[str, int]:
    """Write the benchmark store (`sequences` of 20 thoughts; the broad thread holds the first 100)."""
    rng = random.Random(seed)
    conn = connect(path, "wal")
    migrate(conn)
    names = [f"topic-{i:02d}" for i in range(TOPICS)] + [BROAD]
    with write_transaction(conn):
        for name in names:
            thread_store.create_thread(conn, name, f"Everything about {name}. Long-running.", START_MS)
    ids = count()
    with write_transaction(conn):
        for s in range(sequences):
            joined = rng.sample(names[:TOPICS], rng.choice((1, 1, 2))) + ([BROAD] if s < 100 else [])
            at = START_MS + rng.randrange(60 * DAY_MS)
            seq_id: str | None = None
            for n in range(1, THOUGHTS_PER_SEQUENCE + 1):
                event = rng.choice(EVENT_KINDS) if rng.random() < 0.2 else None
                text = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(20, 80)))
                inp = ThoughtInput(
                    thought=text,
                    next_thought_needed=n < THOUGHTS_PER_SEQUENCE,
                    thought_number=n,
                    total_thoughts=THOUGHTS_PER_SEQUENCE,
                    sequence_id=seq_id,
                    is_revision=True if n % 9 == 0 else None,
                    revises_thought=n - 1 if n % 9 == 0 else None,
                    threads=tuple(joined) if n == 1 else (),
                    event=event,
                )
                at += rng.randrange(1, 600_000)
                result = append_thought(conn, inp, at, f"seq_{next(ids):032x}")
                assert isinstance(result, Written)
                seq_id = result.sequence_id
    counted = conn.execute(
        "SELECT (SELECT count(*) FROM thoughts), (SELECT count(*) FROM threads), "
        "(SELECT count(*) FROM thread_members), (SELECT count(*) FROM thoughts WHERE event IS NOT NULL)"
    ).fetchall()[0]
    held = {
        key: int(str(value))
        for key, value in zip(("thoughts", "threads", "memberships", "event_thoughts"), counted, strict=True)
    }
    conn.close()
    return held


def summary(samples_s: list[float]) -> dict[str, float]:
    """p50 / p95 / p99 / max in ms."""
    values = sorted(s * 1000 for s in samples_s)
    return {
        "n": len(values),
        "p50_ms": round(percentile(values, 50), 2),
        "p95_ms": round(percentile(values, 95), 2),
        "p99_ms": round(percentile(values, 99), 2),
        "max_ms": round(values[-1], 2),
    }


def timed(fn: Callable[[], Any], reps: int) -> list[float]:
    """Wall time of `reps` calls (after one warm-up call)."""
    fn()
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return samples


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

    plain: list[float] = []
    since: list[float] = []
    broad: list[float] = []
    for name in names:
        samples = timed(one(name, None), reps)
        (broad if name == BROAD else plain).extend(samples)
        since.extend(timed(one(name, START_MS + 30 * DAY_MS), reps))
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
        with RpcClient(server.url, server.token) as client:
            ids = count(1)

            def call(name: str, args: dict[str, Any]) -> Callable[[], Any]:
                def run() -> Any:
                    body = {"jsonrpc": "2.0", "id": next(ids), "method": "tools/call"}
                    body["params"] = {"name": name, "arguments": args}
                    return check(client.post(json.dumps(body).encode()))

                return run

            listed = call("configure_thread", {"action": "list"})().json()["result"]["structuredContent"]
            names = [t["name"] for t in listed["threads"]]
            briefs: list[float] = []
            for name in names:
                briefs.extend(timed(call("thread_briefing", {"name": name}), reps))
            lists = timed(call("configure_thread", {"action": "list"}), reps * 5)
    finally:
        server.stop()
    return {"thread_briefing over HTTP": summary(briefs), "configure_thread list over HTTP": summary(lists)}


def main() -> None:
    """Build the store, measure, print a table and the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=10, help="timed calls per thread and line")
    parser.add_argument("--keep", action="store_true", help="keep the scratch store")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="thread-bench-", dir=Path(__file__).parent))
    try:
        data_dir = scratch / "data"
        path = store_path(data_dir, OWNER_KEY)
        path.parent.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        held = build_store(path)
        print(f"store: {held} (built in {time.perf_counter() - started:.1f} s)")
        lines = {**in_process(path, args.reps), **over_http(data_dir, args.reps)}
        print(f"{'line':36} {'n':>5} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'max ms':>8}")
        for line, s in lines.items():
            print(f"{line:36} {s['n']:>5} {s['p50_ms']:>8} {s['p95_ms']:>8} {s['p99_ms']:>8} {s['max_ms']:>8}")
        print(json.dumps({"store": held, "lines": lines}))
    finally:
        if args.keep:
            print(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
