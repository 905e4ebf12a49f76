"""`make bench`: Thoughtline against the disk floor and the canonical server, side by side, in one run.

Lines (see bench/README.md for what each one means):
  1. disk floor            one bare BEGIN IMMEDIATE; INSERT; COMMIT (WAL, synchronous=FULL)
  2. canonical server      npx @modelcontextprotocol/server-sequential-thinking over stdio (in memory)
  3. Thoughtline serial    /mcp-compat with bearer, one client, one sequence (and /mcp, socket client)
  4. Thoughtline parallel  32 clients on one store, acknowledged writes/s (both endpoints)
  5. cold start            spawn → first successful tool call, and no embedding model loaded
  6. RSS                   VmRSS of the server after the load

Prints the tables to stdout and writes the same numbers to bench/results/latest.json; the targets
and the tables are `bench/run_report.py`'s.

    python -m bench.run [--calls 300] [--warmup 30] [--clients 32] [--per-client 50] [--no-canonical]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import apsw

from bench import server as srv
from bench.canonical import measure_canonical
from bench.floor import measure_floor
from bench.load import (
    Concurrent,
    Sequential,
    concurrent_raw,
    concurrent_sdk,
    concurrent_wire,
    sequential_raw,
    sequential_sdk,
    sequential_wire,
)
from bench.rpc import MODERN_PATH
from bench.run_report import render, targets
from bench.stats import Summary

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"
MODEL_LIBRARIES = ("onnxruntime", "libonnx")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line knobs; the defaults are the published configuration."""
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=300, help="timed sequential calls per line (default 300)")
    parser.add_argument("--warmup", type=int, default=30, help="untimed calls before each series (default 30)")
    parser.add_argument("--clients", type=int, default=32, help="concurrent clients (default 32)")
    parser.add_argument("--per-client", type=int, default=50, help="timed writes per concurrent client (default 50)")
    parser.add_argument("--sdk-per-client", type=int, default=20, help="writes per client, SDK variant (0 = skip)")
    parser.add_argument("--cold-runs", type=int, default=5, help="process starts for the cold-start median")
    parser.add_argument("--no-canonical", action="store_true", help="skip the npx canonical server")
    parser.add_argument(
        "--scratch", type=Path, default=RESULTS_DIR, help="directory on the disk under test (default bench/results)"
    )
    parser.add_argument("--json", type=Path, default=RESULTS_DIR / "latest.json", help="where to write the results")
    parser.add_argument("--keep", action="store_true", help="keep the scratch data directories and server logs")
    return parser.parse_args(argv)


def _git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=BENCH_DIR, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def _loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "sqlite": apsw.sqlite_lib_version(),
        "apsw": apsw.apsw_version(),
        "platform": platform.platform(),
        "commit": _git_commit(),
        "loadavg_start": _loadavg(),
    }


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _seq_json(run: Sequential) -> dict[str, Any]:
    n = len(run.samples_ns)
    return {
        **Summary.of_ns(run.samples_ns).as_json(),
        "server_cpu_ms_per_call": round(run.server_cpu_ns / n / 1e6, 3),
        "client_cpu_ms_per_call": round(run.client_cpu_ns / n / 1e6, 3),
    }


def _conc_json(run: Concurrent, client: str) -> dict[str, Any]:
    return {
        "client": client,
        "clients": run.clients,
        "calls_per_client": run.calls_per_client,
        "writes": run.writes,
        "elapsed_s": round(run.elapsed_ns / 1e9, 3),
        "writes_per_s": round(run.writes_per_s, 1),
        "latency": Summary.of_ns(run.samples_ns).as_json(),
        "server_cpu_ms_per_write": round(run.server_cpu_ns / run.writes / 1e6, 3),
        "client_cpu_ms_per_write": round(run.client_cpu_ns / run.writes / 1e6, 3),
        "server_cpu_share": round(run.server_cpu_ns / run.elapsed_ns, 2),
    }


def measure_all(args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    """Run every line in order; returns the results document."""
    results: dict[str, Any] = {"machine": machine(), "config": {k: str(v) for k, v in vars(args).items()}}

    _say(f"[floor] disk floor: {args.calls} commits in {scratch}")
    floor_before = Summary.of_ns(measure_floor(scratch / "floor", args.calls, args.warmup))
    results["floor"] = {"before": floor_before.as_json()}

    if args.no_canonical:
        results["canonical"] = {"skipped": "--no-canonical"}
    else:
        _say(f"[canonical] server via npx: {args.calls} calls (first run downloads the package)")
        canon = measure_canonical(args.calls, args.warmup, scratch / "canonical-stderr.log")
        if canon.skipped:
            results["canonical"] = {"skipped": canon.skipped}
        else:
            results["canonical"] = {"version": canon.version, **Summary.of_ns(canon.samples_ns).as_json()}

    _say("[sequential] Thoughtline: socket client, httpx and the mcp SDK client, one after another")
    server, _ = srv.start(scratch / "load-data")
    try:
        wire = asyncio.run(sequential_wire(server, args.calls, args.warmup))
        modern = asyncio.run(sequential_wire(server, args.calls, args.warmup, MODERN_PATH))
        raw = sequential_raw(server, args.calls, args.warmup)
        sdk = asyncio.run(sequential_sdk(server, args.calls, args.warmup))
        results["sequential"] = {
            "wire": _seq_json(wire),
            "wire_mcp": _seq_json(modern),
            "raw_httpx": _seq_json(raw),
            "mcp_sdk": _seq_json(sdk),
        }
        floor_after = Summary.of_ns(measure_floor(scratch / "floor", args.calls, args.warmup))
        results["floor"]["after"] = floor_after.as_json()
        results["floor"]["reference_median_ms"] = round(
            statistics.fmean([floor_before.median_ms, floor_after.median_ms]), 3
        )

        total = args.clients * args.per_client
        _say(f"[concurrent] Thoughtline: {args.clients} clients x {args.per_client} writes ({total})")
        wire_run = asyncio.run(concurrent_wire(server, args.clients, args.per_client))
        modern_run = asyncio.run(concurrent_wire(server, args.clients, args.per_client, MODERN_PATH))
        httpx_run = asyncio.run(concurrent_raw(server, args.clients, args.per_client))
        conc: dict[str, Any] = {
            "wire": _conc_json(wire_run, "socket client (bench.wire)"),
            "wire_mcp": _conc_json(modern_run, "socket client, /mcp"),
            "raw_httpx": _conc_json(httpx_run, "httpx JSON-RPC POSTs"),
        }
        if args.sdk_per_client > 0:
            sdk_run = asyncio.run(concurrent_sdk(server, args.clients, args.sdk_per_client))
            conc["mcp_sdk"] = _conc_json(sdk_run, "mcp SDK streamable HTTP")
        results["concurrent"] = conc

        _say("[rss] server RSS after the load")
        results["rss"] = {
            **{k: round(v * 1024 / 1e6, 1) for k, v in srv.rss_kib(server.pid).items()},
            "threads": srv.thread_count(server.pid),
            "model_libraries_mapped": srv.mapped_libraries(server.pid, MODEL_LIBRARIES),
        }
    finally:
        server.stop()

    _say(f"[cold start] {args.cold_runs} fresh processes, each on an empty data dir")
    starts: list[dict[str, Any]] = []
    for i in range(args.cold_runs):
        server, cold = srv.start(scratch / f"cold-{i}")
        try:
            mapped = srv.mapped_libraries(server.pid, MODEL_LIBRARIES)
            rss = srv.rss_kib(server.pid)
        finally:
            server.stop()
        starts.append(
            {
                "first_call_ms": round(cold.first_call_ns / 1e6, 1),
                "listening_ms": round(cold.listening_ns / 1e6, 1),
                "model_libraries_mapped": mapped,
                "rss_mb": round(rss["VmRSS"] * 1024 / 1e6, 1),
            }
        )
    results["cold_start"] = {
        "runs": starts,
        "median_first_call_ms": round(statistics.median(s["first_call_ms"] for s in starts), 1),
        "model_loaded_in_any_run": any(s["model_libraries_mapped"] for s in starts),
    }
    results["machine"]["loadavg_end"] = _loadavg()
    return results


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print the report, write the JSON."""
    args = parse_args(argv)
    args.scratch.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="run-", dir=args.scratch))
    started = time.perf_counter_ns()
    try:
        results = measure_all(args, scratch)
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    results["targets"] = targets(results)
    results["wall_s"] = round((time.perf_counter_ns() - started) / 1e9, 1)
    print(render(results))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\nwrote {args.json} (wall time {results['wall_s']} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
