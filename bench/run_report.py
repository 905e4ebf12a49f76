"""The verdict and the printed report of `make bench`: each standing target against its measurement.

`targets` turns the results document `bench.run` measures into PASS/MISS lines; `render` lays out
the tables bench/README.md explains (latency, concurrent writes, cold start, RSS, summary).
"""

from __future__ import annotations

from typing import Any

from bench.report import ms, ratio, table, verdict

OVERHEAD_TARGET_MS = 2.0
CANONICAL_RATIO_TARGET = 2.0
THROUGHPUT_TARGET = 3000.0
COLD_TARGET_MS = 1500.0
RSS_TARGET_MB = 150.0


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
