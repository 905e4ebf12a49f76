"""Search at scale: latency with 5k and 100k thoughts in one store, embedding throughput, RSS.

Stores are real SQLite files with the real migrations. Embedding 100k thoughts would take the
better part of an hour on two cores, so the big stores get synthetic text (Zipf-distributed words,
so FTS5 sees realistic posting lists) and random unit vectors; scoring cost does not depend on
what the vectors mean. Queries are real sentences embedded by the real model, so the reported
hybrid latency includes query embedding, FTS5, the vector scores, fusion and loading the result
rows. "First search" opens a fresh connection and index and times the first hybrid search on it
(loading every vector included), as the first search after a store opens pays. Each latency is
reported as wall-clock p50/p95 and, beside it, the median CPU time of the calling thread and of
the whole process (helper threads included), which a busy shared machine inflates far less than
wall time. The load average is printed with it.

    python -m bench.search_scale [--sizes 5000,100000] [--queries 100] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import random
import resource
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from thoughtline.library.dense import DenseIndex
from thoughtline.library.embed import MiniLMEmbedder, serving_embedder
from thoughtline.library.retrieval import hybrid_search
from thoughtline.storage import vectors as vector_store
from thoughtline.storage.db import connect
from thoughtline.storage.migrations import migrate

# The random vectors' model id (stored in the store's meta; these stores are searched directly).
SYNTHETIC = "synthetic-random"
QUERIES = [
    "why did the nightly export job fail",
    "connection pool exhausted under load",
    "decide between kafka and rabbitmq for events",
    "memory keeps growing in the worker",
    "how to roll back a failed schema migration",
    "flaky test only on the build server",
    "reduce the cloud bill for staging",
    "rotate refresh tokens safely",
    "cache invalidation after a price change",
    "slow query on the orders table",
]
# Three alternatives per query: other words, the concrete things involved, and a guess at what the
# earlier thought said (the kinds the tool description asks agents for).
ALTERNATIVES = [
    ("nightly export crashed", "cron export script error exit code", "The export died because the disk filled up."),
    ("db pool ran out of connections", "too many clients, pool size, timeouts", "I raised the pool size to 50."),
    ("choosing a message broker", "kafka vs rabbitmq throughput ordering", "Kafka won because we need replay."),
    ("worker memory leak", "RSS grows, heap profile, gc", "The leak was an unbounded cache in the worker."),
    ("undo a bad database migration", "down migration, restore backup", "I wrote a reverse migration first."),
    ("test fails only in CI", "intermittent failure, shared runner, timing", "Two tests shared one temp file."),
    ("cut staging cloud costs", "idle instances, autoscaling, spot", "Staging now shuts down at night."),
    ("refresh token rotation", "reuse detection, revoke family, expiry", "Each refresh issues a new token."),
    ("stale cache after price update", "invalidate keys, ttl, pub/sub", "We purge the product key on update."),
    ("orders query is slow", "missing index, explain plan, full scan", "Adding an index on customer_id fixed it."),
]


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _vocabulary(rng: random.Random, size: int = 6_000) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = sorted({"".join(rng.choice(letters) for _ in range(rng.randint(3, 10))) for _ in range(size * 2)})
    vocab = words[:size]
    # Query words get mid-frequency ranks (as topic words have in real stores), not the top of
    # the Zipf curve, where every thought would contain them.
    for word in sorted(set(" ".join(QUERIES).split())):
        vocab[rng.randrange(200, size)] = word
    return vocab


def build(path: Path, n: int, seed: int = 7) -> None:
    """A store of `n` thoughts in sequences of 100, with synthetic text and unit vectors."""
    rng = random.Random(seed)
    vocab = _vocabulary(rng)
    weights = [1 / (i + 1) for i in range(len(vocab))]
    conn = connect(path, "wal")
    migrate(conn)
    nprng = np.random.default_rng(seed)
    per_seq = 100
    with conn:
        for s in range(n // per_seq):
            conn.execute(
                "INSERT INTO sequences(public_id, title, total_thoughts, last_thought_number, thought_count, "
                "created_at, updated_at) VALUES (?, 'synthetic', ?, ?, ?, ?, ?)",
                (f"seq_{s:032x}", per_seq, per_seq, per_seq, s, s),
            )
            seq = conn.last_insert_rowid()
            for p in range(1, per_seq + 1):
                body = " ".join(rng.choices(vocab, weights, k=rng.randint(20, 80)))
                conn.execute(
                    "INSERT INTO thoughts(sequence_id, position, number, total, next_needed, body, created_at) "
                    "VALUES (?, ?, ?, ?, 1, ?, ?)",
                    (seq, p, p, per_seq, body, s),
                )
    ids = vector_store.pending_vector_ids(conn, n)
    for start in range(0, len(ids), 5_000):
        chunk = ids[start : start + 5_000]
        # One to four vectors a thought (the whole text and its passages), as multi-sentence steps get.
        slots = [1 + tid % 4 for tid in chunk]
        mat = nprng.standard_normal((sum(slots), 384)).astype(np.float32)
        mat /= np.linalg.norm(mat, axis=1, keepdims=True)
        rows, at = [], 0
        for tid, n in zip(chunk, slots, strict=True):
            rows.append((tid, [mat[at + j].tobytes() for j in range(n)]))
            at += n
        with conn:
            vector_store.store_vectors(conn, rows, made_by=SYNTHETIC)
    conn.close()


Timed = tuple[list[float], list[float], list[float]]


def _timed(fn: Callable[[], object], repeat: int, cpu_clock: Callable[[], float] = time.thread_time) -> Timed:
    """Wall-clock, CPU (the calling thread's, or `cpu_clock`'s) and whole-process CPU milliseconds of each call.

    The process column counts the helper threads too (the embedder's pool, the index's product
    helper); on a machine shared with other work it is close to, but above, the search's own.
    """
    wall, cpu, process = [], [], []
    for _ in range(repeat):
        start, start_cpu, start_process = time.perf_counter(), cpu_clock(), time.process_time()
        fn()
        wall.append((time.perf_counter() - start) * 1000)
        cpu.append((cpu_clock() - start_cpu) * 1000)
        process.append((time.process_time() - start_process) * 1000)
    return wall, cpu, process


def _summary(timed: Timed) -> dict[str, float]:
    ordered = sorted(timed[0])
    return {
        "p50_ms": round(statistics.median(ordered), 2),
        "p95_ms": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 2),
        "cpu_p50_ms": round(statistics.median(timed[1]), 2),
        "process_cpu_p50_ms": round(statistics.median(timed[2]), 2),
    }


def _load_average() -> float:
    return round(os.getloadavg()[0], 2)


def _alternatives(conn: Any, embedder: MiniLMEmbedder, index: DenseIndex, i: int) -> object:
    """A search with three alternatives: the shipped API when it has one, else its parts.

    Without `alternatives` on `hybrid_search`, the cost is composed from the question's hybrid
    search plus what three more phrasings add: one embedding call for them and one `score_many`
    pass over the index for all four (an upper bound: the question is embedded and scored twice).
    """
    search: Any = hybrid_search  # typed loosely: `alternatives` exists only in some versions
    if "alternatives" in inspect.signature(hybrid_search).parameters:
        return search(conn, embedder, QUERIES[i], alternatives=ALTERNATIVES[i], index=index)
    hybrid_search(conn, embedder, QUERIES[i], index=index)
    extra = embedder.embed([embedder.query_prefix + a for a in ALTERNATIVES[i]])
    return index.score_many(np.vstack([embedder.embed([embedder.query_prefix + QUERIES[i]]), extra]))


def measure(path: Path, embedder: MiniLMEmbedder, queries: int) -> dict[str, object]:
    """The first search after opening, the vector scores alone, and whole hybrid searches, on one store."""
    qvecs = embedder.embed(QUERIES)
    rng = random.Random(1)
    picks = [rng.randrange(len(QUERIES)) for _ in range(queries)]

    def cycle() -> Callable[[], int]:
        it = iter(picks)
        return lambda: next(it)

    rss_before = _rss_mb()
    conn = connect(path, "wal", readonly=True)
    # The product's helper thread, as the library gives every index (library/after_commit.py).
    helper = ThreadPoolExecutor(max_workers=1, thread_name_prefix="index-product")
    index = DenseIndex(helper=helper)
    conn.execute("BEGIN")  # a search reads in one snapshot, as the store's read pool runs it
    # A load packs on a worker thread as well: its CPU is the whole process's.
    first = _timed(lambda: hybrid_search(conn, embedder, QUERIES[0], index=index), 1, time.process_time)
    conn.execute("COMMIT")
    rss_index = _rss_mb() - rss_before
    load = _timed(
        lambda: DenseIndex(helper=helper).refresh(conn), 1, time.process_time
    )  # the load alone, on a second index
    pick = cycle()
    one = _timed(lambda: index.score(qvecs[pick()]), queries)
    pick = cycle()
    four = _timed(lambda: index.score_many(np.roll(qvecs, -pick(), axis=0)[:4]), queries)
    pick = cycle()
    by_sequence = _timed(lambda: hybrid_search(conn, embedder, QUERIES[pick()], index=index, by="sequence"), queries)
    pick = cycle()
    hybrid = _timed(lambda: hybrid_search(conn, embedder, QUERIES[pick()], index=index), queries)
    pick = cycle()
    alternatives = _timed(lambda: _alternatives(conn, embedder, index, pick()), queries)
    conn.close()
    helper.shutdown()
    return {
        "vectors": len(index),
        "index_mb": round(index.nbytes / 2**20, 1),
        "rss_mb_for_index": round(rss_index, 1),
        "first_search_after_open": _summary(first),
        "index_load": _summary(load),
        "dense_scores_one_phrasing": _summary(one),
        "dense_scores_four_phrasings": _summary(four),
        "hybrid_search": _summary(hybrid),
        "hybrid_search_by_sequence": _summary(by_sequence),
        "search_three_alternatives": _summary(alternatives),
        "rss_mb": round(_rss_mb(), 1),
        "load_average": _load_average(),
    }


def main(argv: Sequence[str] | None = None) -> None:
    """Build the stores, measure, print JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="5000,100000")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--workdir", type=Path, default=None, help="reuse stores here (default: a temp dir)")
    args = parser.parse_args(argv)
    report: dict[str, object] = {"rss_mb_before_model": round(_rss_mb(), 1), "load_average": _load_average()}
    embedder = serving_embedder()  # as the server runs it
    sample = [
        f"{q}; attempt {i} with more context about the system and what was tried" for i, q in enumerate(QUERIES * 26)
    ]
    embedder.embed(sample[:16])
    start = time.perf_counter()
    embedder.embed(sample)
    report["embed_texts_per_s"] = round(len(sample) / (time.perf_counter() - start), 1)
    report["rss_mb_model_loaded"] = round(_rss_mb(), 1)
    with tempfile.TemporaryDirectory(prefix="scale-") as scratch:
        workdir = args.workdir or Path(scratch)
        workdir.mkdir(parents=True, exist_ok=True)
        for n in (int(s) for s in args.sizes.split(",")):
            path = workdir / f"scale-{n}.sqlite3"
            if not path.exists():
                t0 = time.perf_counter()
                build(path, n)
                report[f"build_{n}_s"] = round(time.perf_counter() - t0, 1)
            else:  # a store kept from an older version is upgraded first, as a server opening it would
                t0 = time.perf_counter()
                upgrade = connect(path, "wal")
                if migrate(upgrade):
                    report[f"migrate_{n}_s"] = round(time.perf_counter() - t0, 1)
                upgrade.close()
            report[str(n)] = measure(path, embedder, args.queries)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
