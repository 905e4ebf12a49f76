"""`make bench`: Thoughtline against the disk floor and the canonical server, side by side, in one run.

Lines (see bench/README.md for what each one means):
  1. disk floor            one bare BEGIN IMMEDIATE; INSERT; COMMIT (WAL, synchronous=FULL)
  2. canonical server      npx @modelcontextprotocol/server-sequential-thinking over stdio (in memory)
  3. Thoughtline serial    /mcp-compat with bearer, one client, one sequence (and /mcp, socket client)
  4. Thoughtline parallel  32 clients on one store, acknowledged writes/s (both endpoints)
  5. cold start            spawn → first successful tool call, and no embedding model loaded
  6. RSS                   VmRSS of the server after the load

Prints the tables to stdout and writes the same numbers to bench/results/latest.json.

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
from bench.report import ms, ratio, table, verdict
from bench.rpc import MODERN_PATH
from bench.stats import Summary

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"
MODEL_LIBRARIES = ("onnxruntime", "libonnx")

OVERHEAD_TARGET_MS = 2.0
CANONICAL_RATIO_TARGET = 2.0
THROUGHPUT_TARGET = 3000.0
COLD_TARGET_MS = 1500.0
RSS_TARGET_MB = 150.0


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


def targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Each standing target with the measured value and PASS/MISS."""
    floor = results["floor"]["reference_median_ms"]
    seq = results["sequential"]["wire"]
    overhead = seq["median_ms"] - floor
    throughput = min(results["concurrent"][key]["writes_per_s"] for key in ("wire", "wire_mcp"))
    canonical = results["canonical"].get("median_ms")
    slowest = max(results["sequential"][key]["median_ms"] for key in ("wire", "wire_mcp"))
    cold = results["cold_start"]["median_first_call_ms"]
    rss = results["rss"]["VmRSS"]
    model_loaded = results["cold_start"]["model_loaded_in_any_run"] or bool(results["rss"]["model_libraries_mapped"])
    return [
        {
            "target": "sequential median <= floor + 2 ms",
            "measured": f"{seq['median_ms']:.2f} ms = floor {floor:.2f} + {overhead:.2f} ms",
            "ok": overhead <= OVERHEAD_TARGET_MS,
            "miss_by": max(0.0, round(overhead - OVERHEAD_TARGET_MS, 2)),
        },
        {
            "target": "durable write <= 2x the canonical's median (both endpoints)",
            "measured": (
                f"{slowest:.2f} ms = {slowest / canonical:.1f}x canonical {canonical:.2f} ms"
                if canonical
                else "canonical not measured"
            ),
            "ok": bool(canonical) and slowest <= CANONICAL_RATIO_TARGET * canonical,
            "miss_by": max(0.0, round(slowest - CANONICAL_RATIO_TARGET * canonical, 2)) if canonical else 0.0,
        },
        {
            "target": ">= 3,000 acknowledged writes/s, 32 clients, one store (both endpoints)",
            "measured": (
                f"{throughput:,.0f} writes/s (/mcp-compat {results['concurrent']['wire']['writes_per_s']:,.0f}, "
                f"/mcp {results['concurrent']['wire_mcp']['writes_per_s']:,.0f})"
            ),
            "ok": throughput >= THROUGHPUT_TARGET,
            "miss_by": max(0.0, round(THROUGHPUT_TARGET - throughput, 1)),
        },
        {
            "target": "spawn -> first answered call <= 1.5 s",
            "measured": f"{cold:.0f} ms (median of {len(results['cold_start']['runs'])})",
            "ok": cold <= COLD_TARGET_MS,
            "miss_by": max(0.0, round(cold - COLD_TARGET_MS, 1)),
        },
        {
            "target": "embedding model not loaded (cold path, writes)",
            "measured": "onnxruntime mapped" if model_loaded else "no onnxruntime mapped",
            "ok": not model_loaded,
            "miss_by": 0.0,
        },
        {
            "target": "server RSS after the load <= 150 MB",
            "measured": f"{rss:.1f} MB (peak {results['rss']['VmHWM']:.1f} MB)",
            "ok": rss <= RSS_TARGET_MB,
            "miss_by": max(0.0, round(rss - RSS_TARGET_MB, 1)),
        },
    ]


def render(results: dict[str, Any]) -> str:
    """The stdout report: detail tables, then the target summary."""
    floor = results["floor"]
    ref = floor["reference_median_ms"]
    canon = results["canonical"]
    canon_median = canon.get("median_ms")
    rows: list[list[str]] = []
    for label, data in (("1 disk floor (before)", floor["before"]), ("1 disk floor (after)", floor["after"])):
        rows.append([label, str(data["n"]), ms(data["median_ms"]), ms(data["p99_ms"]), ms(data["mean_ms"]), "-", "-"])
    if "skipped" in canon:
        rows.append(["2 canonical (stdio, SDK)", "0", "-", "-", "-", "-", f"skipped: {canon['skipped']}"])
    else:
        rows.append(
            [
                f"2 canonical {canon.get('version') or ''} (stdio, SDK)".replace("  ", " "),
                str(canon["n"]),
                ms(canon["median_ms"]),
                ms(canon["p99_ms"]),
                ms(canon["mean_ms"]),
                ratio(canon["median_ms"], ref),
                "in memory, no fsync",
            ]
        )
    for label, key in (
        ("3 Thoughtline socket client", "wire"),
        ("3 Thoughtline socket client, /mcp", "wire_mcp"),
        ("3 Thoughtline httpx", "raw_httpx"),
        ("3 Thoughtline mcp SDK", "mcp_sdk"),
    ):
        data = results["sequential"][key]
        note = (
            f"+{data['median_ms'] - ref:.2f} ms over floor; {ratio(data['median_ms'], canon_median)} canonical; "
            f"CPU ms/call server {data['server_cpu_ms_per_call']:.2f}, client {data['client_cpu_ms_per_call']:.2f}"
        )
        rows.append(
            [
                label,
                str(data["n"]),
                ms(data["median_ms"]),
                ms(data["p99_ms"]),
                ms(data["mean_ms"]),
                ratio(data["median_ms"], ref),
                note,
            ]
        )
    latency = table(["line", "n", "median ms", "p99 ms", "mean ms", "x floor", "notes"], rows, right=(1, 2, 3, 4, 5))

    conc_rows: list[list[str]] = []
    for data in results["concurrent"].values():
        conc_rows.append(
            [
                f"4 {data['client']}",
                f"{data['clients']} x {data['calls_per_client']}",
                f"{data['writes_per_s']:,.0f}",
                ms(data["latency"]["median_ms"], 1),
                ms(data["latency"]["p99_ms"], 1),
                ms(data["server_cpu_ms_per_write"]),
                ms(data["client_cpu_ms_per_write"]),
                f"{data['server_cpu_share']:.2f}",
            ]
        )
    conc = table(
        ["line", "calls", "writes/s", "median ms", "p99 ms", "srv CPU ms/w", "cli CPU ms/w", "srv cores"],
        conc_rows,
        right=(2, 3, 4, 5, 6, 7),
    )

    cold_rows = [
        [
            f"5 start #{i + 1}",
            ms(run["listening_ms"], 0),
            ms(run["first_call_ms"], 0),
            ", ".join(run["model_libraries_mapped"]) or "none",
            f"{run['rss_mb']:.1f}",
        ]
        for i, run in enumerate(results["cold_start"]["runs"])
    ]
    cold = table(
        ["line", "port open ms", "first tool result ms", "model libs mapped", "RSS MB"],
        cold_rows,
        right=(1, 2, 4),
    )
    rss = results["rss"]
    rss_line = (
        f"6 server RSS after the load: VmRSS {rss['VmRSS']:.1f} MB, peak VmHWM {rss['VmHWM']:.1f} MB, "
        f"{rss['threads']} threads, model libs mapped: {', '.join(rss['model_libraries_mapped']) or 'none'}"
    )
    summary = table(
        ["target", "measured", "result", "missed by"],
        [
            [t["target"], t["measured"], verdict(t["ok"]), "" if t["ok"] else str(t["miss_by"])]
            for t in results["targets"]
        ],
    )
    m = results["machine"]
    header = (
        f"Thoughtline benchmark · commit {m['commit']} · {m['cpus']} CPUs · Python {m['python']} · "
        f"SQLite {m['sqlite']} (apsw {m['apsw']})\n"
        f"load average at start {m['loadavg_start']}, at end {m['loadavg_end']} "
        "(other work on the machine inflates every line, the floor included)"
    )
    return "\n\n".join(
        [
            header,
            "Sequential latency (one client, one sequence; ratios against the mean of the two floor medians "
            f"= {ref:.2f} ms)\n" + latency,
            "Concurrent writes, one store (srv cores = server CPU seconds per wall second)\n" + conc,
            "Cold start (fresh data dir each time; tool result = a real sequentialthinking call)\n" + cold,
            rss_line,
            "Summary\n" + summary,
        ]
    )


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
