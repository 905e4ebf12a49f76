"""The disk floor: the cost of one bare durable SQLite commit on the disk that holds the data.

Every acknowledged Thoughtline write waits for at least one such commit, so the difference between
a tool call and this number is Thoughtline's own overhead (HTTP, MCP, auth, validation, SQL).
"""

from __future__ import annotations

import time
from pathlib import Path

import apsw

ROW_TEXT = "x" * 200  # about the size of a short thought


def measure_floor(directory: Path, n: int, warmup: int) -> list[int]:
    """`BEGIN IMMEDIATE; INSERT; COMMIT` with WAL and synchronous=FULL, `n` timed runs (ns each)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "floor.sqlite3"
    conn = apsw.Connection(str(path))
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("CREATE TABLE IF NOT EXISTS t(id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
        samples: list[int] = []
        for i in range(warmup + n):
            start = time.perf_counter_ns()
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO t(body) VALUES (?)", (ROW_TEXT,))
            conn.execute("COMMIT")
            elapsed = time.perf_counter_ns() - start
            if i >= warmup:
                samples.append(elapsed)
        return samples
    finally:
        conn.close()
