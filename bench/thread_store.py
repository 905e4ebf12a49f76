"""The thread benchmarks' store and timing, shared by `bench/thread_briefing.py` and `bench/api_latency.py`.

One store: sequences of 20 thoughts over 60 days written through the real migrations and write
path (`append_thought`, with `threads` and `event` arguments), each joined to one or two topic
threads, the first 100 also to one broad thread, about a fifth of the thoughts tagged with an
event. One way to time: wall time per call, and the CPU time the measured process spent on the
calls (this process for in-process lines, the server's from /proc for HTTP ones), since on a
shared machine the wall time includes waiting for a core and the CPU time does not.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path
from typing import Any

from bench.stats import percentile
from thoughtline.domain.arguments import EVENT_KINDS, ThoughtInput
from thoughtline.identity import OWNER_KEY
from thoughtline.storage import threads as thread_store
from thoughtline.storage.db import connect, write_transaction
from thoughtline.storage.migrations import migrate
from thoughtline.storage.router import store_path
from thoughtline.storage.thoughts import Written, append_thought

THOUGHTS_PER_SEQUENCE = 20
TOPICS = 19
BROAD = "everything-2026"
BROAD_SEQUENCES = 100
DAY_MS = 86_400_000
START_MS = 1_790_000_000_000
WORDS = ("cache", "index", "replica", "shard", "lock", "queue", "budget", "hire", "vendor", "schema", "latency")


def build_store(path: Path, *, sequences: int, topics: int = TOPICS, seed: int = 7) -> dict[str, int]:
    """Write the benchmark store: `sequences` of 20 thoughts, `topics` topic threads and the broad one."""
    rng = random.Random(seed)
    conn = connect(path, "wal")
    migrate(conn)
    names = [f"topic-{i:02d}" for i in range(topics)] + [BROAD]
    with write_transaction(conn):
        for name in names:
            thread_store.create_thread(conn, name, f"Everything about {name}. Long-running.", START_MS)
    ids = count()
    with write_transaction(conn):
        for s in range(sequences):
            joined = rng.sample(names[:topics], rng.choice((1, 1, 2))) + ([BROAD] if s < BROAD_SEQUENCES else [])
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
    conn.close()
    return store_counts(path)


def store_counts(path: Path) -> dict[str, int]:
    """Thoughts, threads, memberships and tagged thoughts of a store."""
    conn = connect(path, "wal", readonly=True)
    counted = conn.execute(
        "SELECT (SELECT count(*) FROM thoughts), (SELECT count(*) FROM threads), "
        "(SELECT count(*) FROM thread_members), (SELECT count(*) FROM thoughts WHERE event IS NOT NULL)"
    ).fetchall()[0]
    conn.close()
    keys = ("thoughts", "threads", "memberships", "event_thoughts")
    return {key: int(str(value)) for key, value in zip(keys, counted, strict=True)}


def process_cpu(pid: int) -> Callable[[], float]:
    """A clock of process `pid`'s user + system CPU seconds (/proc/<pid>/stat, fields 14 and 15)."""

    def seconds() -> float:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    return seconds


@dataclass
class Timing:
    """Wall seconds of each timed call, and the CPU seconds the measured process spent on them all."""

    wall_s: list[float] = field(default_factory=list)
    cpu_s: float = 0.0

    def add(self, other: Timing) -> Timing:
        """This timing and `other` as one line."""
        return Timing(self.wall_s + other.wall_s, self.cpu_s + other.cpu_s)


def timed(fn: Callable[[], Any], reps: int, cpu: Callable[[], float] = time.process_time) -> Timing:
    """`reps` calls of `fn` (after one warm-up call): the wall time of each, the CPU time of all."""
    fn()
    samples = []
    cpu_start = cpu()
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return Timing(samples, cpu() - cpu_start)


def summary(timing: Timing) -> dict[str, float]:
    """p50 / p95 / p99 / max wall ms, and the mean CPU ms per call."""
    values = sorted(s * 1000 for s in timing.wall_s)
    return {
        "n": len(values),
        "p50_ms": round(percentile(values, 50), 2),
        "p95_ms": round(percentile(values, 95), 2),
        "p99_ms": round(percentile(values, 99), 2),
        "max_ms": round(values[-1], 2),
        "cpu_ms": round(timing.cpu_s * 1000 / len(values), 2),
    }


def load_average() -> str:
    """The machine's load averages (1, 5, 15 min), to read wall times against."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def arguments(doc: str, sequences: int, reps: int) -> argparse.ArgumentParser:
    """The options both benchmarks take."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--sequences", type=int, default=sequences, help="sequences of 20 thoughts")
    parser.add_argument("--topics", type=int, default=TOPICS, help="topic threads (plus the broad one)")
    parser.add_argument("--reps", type=int, default=reps, help="timed calls per thread and line")
    parser.add_argument("--data", type=Path, help="measure a copy of this data directory instead of building one")
    parser.add_argument("--keep", action="store_true", help="keep the scratch data directory")
    return parser


@contextmanager
def scratch_store(args: argparse.Namespace, prefix: str) -> Iterator[tuple[Path, Path]]:
    """(data dir, owner's store path) in a scratch directory: built, or copied from `--data`."""
    scratch = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        data_dir = scratch / "data"
        path = store_path(data_dir, OWNER_KEY)
        started = time.perf_counter()
        if args.data is not None:
            shutil.copytree(args.data, data_dir)
            conn = connect(path, "wal")
            migrate(conn)  # a store written by an older Thoughtline: as the server would on open
            conn.close()
            held = store_counts(path)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            held = build_store(path, sequences=args.sequences, topics=args.topics)
        print(f"store: {held} (ready in {time.perf_counter() - started:.1f} s)")
        yield data_dir, path
    finally:
        if args.keep:
            print(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


def report(store: Path, lines: dict[str, dict[str, float]]) -> None:
    """Print the lines as a table, then everything as one JSON line."""
    width = max(len(line) for line in lines) + 1
    print(f"load average {load_average()}")
    print(f"{'line':{width}} {'n':>5} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'max ms':>8} {'cpu ms':>8}")
    for line, s in lines.items():
        print(
            f"{line:{width}} {s['n']:>5} {s['p50_ms']:>8} {s['p95_ms']:>8} {s['p99_ms']:>8} {s['max_ms']:>8} "
            f"{s['cpu_ms']:>8}"
        )
    print(json.dumps({"store": store_counts(store), "load_average": load_average(), "lines": lines}))
