"""Memory, descriptors and threads of many stores, and of one large store: `python -m bench.store_memory`.

Each configuration runs in a fresh worker process (allocator settings such as `MALLOC_ARENA_MAX`
only apply from process start) that drives the store router directly, as the server does:
open `--stores` stores (8 at a time, each with a few writes and a history read), note RSS,
descriptors and threads, close them all as the idle sweep would, note RSS again; then write
`--large` thoughts into one store and note RSS against the file's size. MB are 10⁶ bytes.

It is a benchmark, not a test: nothing asserts, `make test` never runs it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

# "sweep" closes stores the way the idle sweep does (`close_idle`, which then returns freed memory
# to the OS); "close_all" is the plain close every store had before.
CONFIGS: dict[str, dict[str, Any]] = {
    "before: no cap, plain close": {"cap": 1_000_000, "env": {}, "close": "close_all"},
    "no cap, sweep": {"cap": 1_000_000, "env": {}, "close": "sweep"},
    "cap 256, sweep": {"cap": 256, "env": {}, "close": "sweep"},
    "cap 256, sweep, MALLOC_ARENA_MAX=2": {"cap": 256, "env": {"MALLOC_ARENA_MAX": "2"}, "close": "sweep"},
}


def rss_mb() -> float:
    """This process's resident set size."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024 / 1e6
    return 0.0


def fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def worker(data_dir: Path, stores: int, cap: int, large: int, close: str) -> dict[str, Any]:
    from thoughtline.clock import SystemClock
    from thoughtline.domain.arguments import HistoryInput, ThoughtInput
    from thoughtline.mcp import history
    from thoughtline.storage.idempotency import Replayed
    from thoughtline.storage.router import StoreRouter
    from thoughtline.storage.thoughts import Written, append_thought

    router = StoreRouter(data_dir, "wal", SystemClock(), max_open=cap, idle_seconds=-1.0)
    out: dict[str, Any] = {"rss_start": rss_mb()}
    gate = asyncio.Semaphore(8)

    async def use(user: int) -> None:
        async with gate:
            opened = await router.get(f"github:{user}")
            seq = f"seq_{user:032x}"
            for n in range(1, 4):
                inp = ThoughtInput(
                    f"user {user} thought {n} " + "words " * 40, True, n, 3, sequence_id=None if n == 1 else seq
                )

                def write(conn: Any, i: ThoughtInput = inp, at: int = n) -> Written | Replayed:
                    return append_thought(conn, i, at, seq)

                await opened.write(write)
            await opened.read(lambda conn: history.read_page(conn, HistoryInput(seq, None, 50, "asc", None, 100_000)))

    await asyncio.gather(*(use(u) for u in range(stores)))
    out.update(rss_open=rss_mb(), fds_open=fds(), threads_open=threading.active_count(), open_stores=router.open_count)
    if close == "sweep":
        await router.close_idle()
    else:
        await router.close_all()
    out.update(rss_closed=rss_mb(), fds_closed=fds(), threads_closed=threading.active_count())
    if large:
        opened = await router.get("github:large")
        seq = "seq_" + "f" * 32
        before = rss_mb()
        for start in range(1, large + 1, 100):

            async def one(n: int) -> None:
                inp = ThoughtInput("a long thought " * 60 + str(n), True, n, large, sequence_id=None if n == 1 else seq)
                await opened.write(lambda conn: append_thought(conn, inp, n, seq))

            await one(start)
            await asyncio.gather(*(one(n) for n in range(start + 1, min(start + 100, large + 1))))
        size = sum(p.stat().st_size for p in opened.path.parent.glob(opened.path.name + "*")) / 1e6
        out.update(large_rss_growth=rss_mb() - before, large_file_mb=size)
        await router.close_all()
    return out


async def search_worker(data_dir: Path, thoughts: int) -> dict[str, Any]:
    """One store with embeddings, written the way a server writes it (background embedding after commits)."""
    from thoughtline.clock import SystemClock
    from thoughtline.domain.arguments import ThoughtInput
    from thoughtline.library.retrieval import hybrid_search
    from thoughtline.mcp.library_tools import Library
    from thoughtline.storage import vectors as vector_store
    from thoughtline.storage.router import StoreRouter
    from thoughtline.storage.thoughts import append_thought

    router = StoreRouter(data_dir, "wal", SystemClock())
    library = Library()
    router.on_open.append(library.attach)
    embedder = library.embedder()
    embedder.embed(["load the model before measuring"])
    opened = await router.get("github:large")
    seq = "seq_" + "e" * 32
    before = rss_mb()
    words = ["plan", "revise", "branch", "check", "test", "measure", "decide", "compare", "estimate", "explore"]
    for start in range(1, thoughts + 1, 50):

        async def one(n: int) -> None:
            body = " ".join(words[(n * k) % len(words)] for k in range(1, 80)) + f" step {n}"
            inp = ThoughtInput(body, True, n, thoughts, sequence_id=None if n == 1 else seq)
            await opened.write(lambda conn: append_thought(conn, inp, n, seq))

        await one(start)
        await asyncio.gather(*(one(n) for n in range(start + 1, min(start + 50, thoughts + 1))))
    await library.idle()
    while await library.backfill(opened):
        pass
    written = rss_mb()
    count = await opened.read(vector_store.vector_count)
    index = library.index_for(opened)
    for query in words * 3:

        def search(conn: Any, q: str = query) -> object:
            return hybrid_search(conn, embedder, q, limit=10, index=index)

        await opened.read(search)
    out = {"thoughts": count, "rss_written": written - before, "rss_searched": rss_mb() - before}
    out["vectors_mb"] = library.index_bytes / 1e6  # the in-memory index, int8 codes and layout
    await router.close_all()
    return out


def run_config(name: str, config: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    scratch = Path(tempfile.mkdtemp(prefix="store-memory-", dir=args.scratch))
    try:
        env = {**os.environ, **config["env"]}
        cmd = [sys.executable, "-m", "bench.store_memory", "--worker", str(scratch / "data")]
        cmd += ["--stores", str(args.stores), "--cap", str(config["cap"]), "--large", str(args.large)]
        cmd += ["--close", config["close"]]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
        result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        return {"config": name, **result}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run_search(args: argparse.Namespace) -> None:
    print(f"\n{args.search} thoughts in one store, embedded in the background as the server does (MB)")
    print(f"{'configuration':36} {'index':>8} {'RSS +written':>12} {'RSS +searched':>13}")
    runs: list[tuple[str, dict[str, str], list[str]]] = [
        ("default arenas", {}, []),
        ("MALLOC_ARENA_MAX=2", {"MALLOC_ARENA_MAX": "2"}, []),
        ("mallopt at start (serve's default)", {}, ["--arenas", "2"]),
    ]
    for name, env, extra in runs:
        scratch = Path(tempfile.mkdtemp(prefix="store-memory-", dir=args.scratch))
        try:
            cmd = [sys.executable, "-m", "bench.store_memory", "--worker", str(scratch / "data"), "--stores", "0"]
            cmd += ["--search", str(args.search), *extra]
            done = subprocess.run(cmd, env={**os.environ, **env}, capture_output=True, text=True, check=True)
            r = json.loads(done.stdout.strip().splitlines()[-1])
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        print(f"{name:36} {r['vectors_mb']:8.1f} {r['rss_written']:12.0f} {r['rss_searched']:13.0f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", type=int, default=1000)
    parser.add_argument("--large", type=int, default=5000, help="thoughts written into one large store (0: skip)")
    parser.add_argument("--scratch", default=None, help="folder for the scratch data dirs (default: system temp)")
    parser.add_argument("--only", action="append", help="run only configurations whose name contains this")
    parser.add_argument("--worker", metavar="DATA_DIR", help=argparse.SUPPRESS)
    parser.add_argument("--cap", type=int, default=256, help=argparse.SUPPRESS)
    parser.add_argument("--close", default="sweep", help=argparse.SUPPRESS)
    parser.add_argument("--arenas", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--search", type=int, default=0, help="also: thoughts in one store with embeddings (0: skip)")
    args = parser.parse_args()
    if args.arenas:
        from thoughtline.resources import limit_malloc_arenas

        limit_malloc_arenas(args.arenas)
    if args.worker and args.search and args.stores == 0:
        print(json.dumps(asyncio.run(search_worker(Path(args.worker), args.search))))
        return
    if args.worker:
        print(json.dumps(asyncio.run(worker(Path(args.worker), args.stores, args.cap, args.large, args.close))))
        return
    header = f"{'configuration':36} {'RSS open':>9} {'RSS closed':>10} {'fds':>6} {'threads':>7}"
    header += f" {'large +RSS':>10} {'file':>7}"
    if args.stores:
        print(f"{args.stores} stores, then {args.large} thoughts in one store (MB)")
        print(header)
    for name, config in CONFIGS.items():
        if args.stores == 0 or (args.only and not any(part in name for part in args.only)):
            continue
        r = run_config(name, config, args)
        print(
            f"{name:36} {r['rss_open']:9.0f} {r['rss_closed']:10.0f} {r['fds_open']:6d} {r['threads_open']:7d} "
            f"{r.get('large_rss_growth', 0):10.0f} {r.get('large_file_mb', 0):7.0f}",
            flush=True,
        )
    if args.search:
        run_search(args)


if __name__ == "__main__":
    main()
