"""The library pages and their API on a 100k-thought store: server time and Chromium's first paint.

A real `thoughtline serve` child process holds the store. The 100,000 thoughts (500 sequences of
200, their text and thread events cycled from the dev reasoning sequences) are written straight
into its SQLite file by the storage layer's own `append_thought`, in this process, while the
server runs: SQLite's locking is what keeps one writer, as it does for any second process.
Sixty sequences join one thread (through the API) so its briefing reads ~12k member thoughts.

Measured, each warm, `--runs` times:
- server: GET /library (25 sequences) and a 200-thought /library/sequences/{id}, with the session
  cookie (httpx; request sent to last byte read);
- browser: the same pages in headless Chromium, first contentful paint and, on the sequence page,
  the moment the shared renderer has drawn all 200 thoughts (`performance.mark`), both counted from
  the navigation's start, so they include the server's time;
- API: GET /api/v1/sequences and /api/v1/threads/{name}/briefing with the bearer token (a thread
  of 60 of the 200-thought sequences, ~12k member thoughts, and one of 10);
- floors, to read the rest against on a shared machine: /healthz, and the page frame alone (a 404
  page with the same stylesheet and script) in Chromium.

    python -m bench.pages [--thoughts 100000] [--runs 40] [--screenshots docs/img]

`--screenshots` also saves the library list and a thread page of a small store built from the
dev sequences through the real tools (for the README).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
from playwright.async_api import Page, async_playwright

from bench.server import ServerProcess, start
from bench.stats import percentile
from thoughtline.clock import SystemClock
from thoughtline.config import Settings
from thoughtline.domain.arguments import parse_thought
from thoughtline.identity import OWNER_KEY
from thoughtline.mcp.core_tools import new_sequence_id
from thoughtline.pages.session import COOKIE, one_time_link
from thoughtline.storage import thoughts as store
from thoughtline.storage.db import connect, write_transaction
from thoughtline.storage.router import store_path

DEV = Path(__file__).resolve().parent / "data" / "reasoning" / "dev.json"
PER_SEQUENCE = 200
THREAD = "payments-platform"
MEMBERS = 60
SMALL_THREAD, SMALL_MEMBERS = "billing-fixes", 10
MISSING = "/library/sequences/seq_" + "0" * 32  # the page frame alone (404): the browser's floor
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]


def _dev_thoughts() -> list[dict[str, Any]]:
    raw = json.loads(DEV.read_text())
    return [t for s in raw["sequences"] for t in s["thoughts"]]


def fill(path: Path, thoughts: int) -> list[str]:
    """Write `thoughts` thoughts into the store at `path`; returns the sequence ids, oldest first."""
    pool = _dev_thoughts()
    conn = connect(path, "wal")
    ids: list[str] = []
    at = int(time.time() * 1000) - thoughts * 1000
    try:
        for s in range(thoughts // PER_SEQUENCE):
            sequence_id: str | None = None
            with write_transaction(conn):
                for n in range(1, PER_SEQUENCE + 1):
                    source = pool[(s * 7 + n) % len(pool)]
                    args: dict[str, Any] = {
                        "thought": source["thought"],
                        "thoughtNumber": n,
                        "totalThoughts": PER_SEQUENCE,
                        "nextThoughtNeeded": n < PER_SEQUENCE,
                    }
                    if source.get("event"):
                        args["event"] = source["event"]
                    if sequence_id is not None:
                        args["sequenceId"] = sequence_id
                    at += 1000
                    done = store.append_thought(conn, parse_thought(args), at, new_sequence_id(), continue_open=False)
                    if not isinstance(done, store.Written):  # no requestId is sent, so nothing replays
                        raise RuntimeError("a bench thought was taken for a retry")
                    sequence_id = done.sequence_id
            ids.append(str(sequence_id))
    finally:
        conn.close()
    return ids


def _summary(values: Sequence[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"p50": round(percentile(ordered, 50), 1), "p95": round(percentile(ordered, 95), 1), "n": len(ordered)}


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` so far (/proc/<pid>/stat, fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _timed_get(http: httpx.AsyncClient, url: str, runs: int, pid: int, **kwargs: Any) -> dict[str, float]:
    """Wall time per request (p50, p95) and the server's own CPU per request (its mean).

    On a shared machine the wall time includes waiting for a core; the CPU time does not.
    """
    times = []
    for i in range(runs + 3):  # three warm-ups, not counted
        if i == 3:
            cpu = _cpu_seconds(pid)
        started = time.perf_counter()
        response = await http.get(url, **kwargs)
        elapsed = (time.perf_counter() - started) * 1000
        response.raise_for_status()
        times.append(elapsed)
    return {**_summary(times[3:]), "server_cpu_ms": round((_cpu_seconds(pid) - cpu) * 1000 / runs, 2)}


PAINT = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const fcp = performance.getEntriesByName('first-contentful-paint')[0];
  const drawn = performance.getEntriesByName('thoughtline:process-rendered')[0];
  return {response: nav.responseEnd, fcp: fcp ? fcp.startTime : null, drawn: drawn ? drawn.startTime : null};
}"""


async def _browser_times(page: Page, url: str, runs: int, wait_for: str) -> dict[str, dict[str, float]]:
    fcp, drawn = [], []
    for i in range(runs + 2):
        await page.goto(url)  # a 404 (the floor) is a page like any other here
        await page.wait_for_selector(wait_for)
        await page.wait_for_function("() => performance.getEntriesByName('first-contentful-paint').length > 0")
        marks = await page.evaluate(PAINT)
        if i >= 2:
            fcp.append(float(marks["fcp"]))
            if marks["drawn"] is not None:
                drawn.append(float(marks["drawn"]))
    result = {"first_contentful_paint_ms": _summary(fcp)}
    if drawn:
        result["process_drawn_ms"] = _summary(drawn)
    return result


async def measure(server: ServerProcess, ids: list[str], runs: int) -> dict[str, Any]:
    """Every timing, against the running server."""
    base = f"http://127.0.0.1:{server.port}"
    settings = Settings(data_dir=server.data_dir)
    bearer = {"Authorization": f"Bearer {server.token}"}
    async with httpx.AsyncClient(base_url=base, timeout=60) as http:
        await http.put(f"/api/v1/threads/{THREAD}/members/{ids[0]}", headers=bearer)  # warms the store
        signin = await http.get(one_time_link(settings, SystemClock(), base))
        if signin.status_code != 303:
            raise RuntimeError(f"sign-in failed: {signin.status_code}")
        cookie = http.cookies[COOKIE]
        sequence = f"/library/sequences/{ids[len(ids) // 2]}"
        results: dict[str, Any] = {
            "server_library_list_ms": await _timed_get(http, "/library", runs, server.pid),
            "server_sequence_page_ms": await _timed_get(http, sequence, runs, server.pid),
        }
        http.cookies.clear()
        results["api_sequences_list_ms"] = await _timed_get(http, "/api/v1/sequences", runs, server.pid, headers=bearer)
        results["api_briefing_ms"] = await _timed_get(
            http, f"/api/v1/threads/{THREAD}/briefing", runs, server.pid, headers=bearer
        )
        small = f"/api/v1/threads/{SMALL_THREAD}/briefing"
        results["api_briefing_10_members_ms"] = await _timed_get(http, small, runs, server.pid, headers=bearer)
        results["floor_healthz_ms"] = await _timed_get(http, "/healthz", runs, server.pid)
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        context = await browser.new_context()
        await context.add_cookies([{"name": COOKIE, "value": cookie, "url": base}])
        page = await context.new_page()
        results["browser_floor_empty_page"] = await _browser_times(page, base + MISSING, runs, "h1")
        results["browser_library_list"] = await _browser_times(page, base + "/library", runs, "#sequences li")
        results["browser_sequence_page"] = await _browser_times(page, base + sequence, runs, "ol.steps li.step")
        await browser.close()
    return results


async def prepare_threads(server: ServerProcess, ids: list[str]) -> None:
    """Two threads through the API: MEMBERS of the sequences spread over the store, and SMALL_MEMBERS."""
    bearer = {"Authorization": f"Bearer {server.token}"}
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.port}", headers=bearer, timeout=60) as http:
        for name, members in (
            (THREAD, ids[:: max(1, len(ids) // MEMBERS)][:MEMBERS]),
            (SMALL_THREAD, ids[1:][-SMALL_MEMBERS:]),
        ):
            made = await http.post("/api/v1/threads", json={"name": name, "description": "Payments platform work."})
            made.raise_for_status()
            for sequence_id in members:
                (await http.put(f"/api/v1/threads/{name}/members/{sequence_id}")).raise_for_status()


async def screenshots(folder: Path, work: Path) -> None:
    """The library list and a thread page of a small, realistic store, light theme, 1200 px wide."""
    await asyncio.to_thread(folder.mkdir, parents=True, exist_ok=True)
    from bench.thread_harness import sequence_calls

    server, _ = start(work / "shots")
    try:
        base = f"http://127.0.0.1:{server.port}"
        bearer = {"Authorization": f"Bearer {server.token}"}
        raw = json.loads(DEV.read_text())
        async with httpx.AsyncClient(base_url=base, headers=bearer, timeout=60) as http:
            threads = {
                "hose-leak": "The outdoor hose bib and the irrigation leak.",
                "slow-sql-report": "The weekly revenue report that times out.",
                "node-memory-leak": "Worker pods killed for memory; finding the leak.",
            }
            for name, description in threads.items():
                (await http.post("/api/v1/threads", json={"name": name, "description": description})).raise_for_status()
            # Oldest first, so the memory-leak work is what the list shows on top.
            for seq in sorted(raw["sequences"][:14], key=lambda q: list(threads).index(q["topics"][0])):
                sequence_id = await _write_sequence(http, sequence_calls(seq))
                pin = f"/api/v1/threads/{seq['topics'][0]}/members/{sequence_id}"
                (await http.put(pin)).raise_for_status()
        async with async_playwright() as playwright:
            browser = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            page = await browser.new_page(viewport={"width": 1200, "height": 900})
            await page.goto(one_time_link(Settings(data_dir=server.data_dir), SystemClock(), base))
            await page.screenshot(path=str(folder / "library-list.png"))
            await page.goto(base + "/library/threads/node-memory-leak")
            await page.screenshot(path=str(folder / "library-thread.png"))
            await browser.close()
    finally:
        server.stop()


async def _write_sequence(http: httpx.AsyncClient, calls: list[dict[str, Any]]) -> str:
    """One sequence through the MCP tool (the API has no write of thoughts), returns its id."""
    sequence_id = ""
    for args in calls:
        if sequence_id:
            args = {**args, "sequenceId": sequence_id}
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "sequentialthinking", "arguments": args},
        }
        headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18"}
        answer = (await http.post("/mcp-compat", json=body, headers=headers)).json()
        sequence_id = answer["result"]["structuredContent"]["sequenceId"]
    return sequence_id


async def run(thoughts: int, runs: int, shots: Path | None) -> None:
    """Build, measure, print one JSON report."""
    with tempfile.TemporaryDirectory(prefix="thoughtline-pages-") as tmp:
        work = Path(tmp)
        server, _ = start(work / "data")  # its first tool call creates the owner's store
        try:
            started = time.perf_counter()
            ids = fill(store_path(server.data_dir, OWNER_KEY), thoughts)
            built = time.perf_counter() - started
            await prepare_threads(server, ids)
            results = await measure(server, ids, runs)
        finally:
            server.stop()
        report = {"thoughts": thoughts, "per_sequence": PER_SEQUENCE, "build_s": round(built, 1), **results}
        print(json.dumps(report, indent=2))
        if shots is not None:
            await screenshots(shots, work)


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--thoughts", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--screenshots", type=Path, help="folder for the README's screenshots")
    args = parser.parse_args(argv)
    asyncio.run(run(args.thoughts, args.runs, args.screenshots))


if __name__ == "__main__":
    main()
