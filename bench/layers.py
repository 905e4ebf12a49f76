"""Where a sequential write's time goes: the same call measured one layer at a time, in one run.

    python -m bench.layers [--calls 300] [--warmup 30]

Layers, each adding to the one before:
  floor         bare BEGIN IMMEDIATE; INSERT; COMMIT on the same disk
  writer        the store actor: queue → writer thread → append_thought SQL → COMMIT → future
  tool          ToolRegistry.call: argument parsing, the writer, the CallToolResult model
  asgi-null     httpx's in-process ASGI transport against an app that returns a constant (client cost)
  asgi no-write the whole app calling `bench_constant`, an extra tool that writes nothing: the
                request path alone (guards, bearer, body gate, direct path, registry); also on /mcp
  asgi          the whole Starlette app in process on /mcp-compat: guards, bearer gate, body gate, tool
  asgi /mcp     the same on /mcp (2026-07-28 envelope and routing headers)
  asgi+log      /mcp-compat with logging configured at INFO, as `thoughtline serve` does by default
  http          `python -m thoughtline serve` in a child process, blocking httpx client over loopback
  http /mcp     the same on /mcp
  http wire     the same server, the minimal socket client of `make bench` (bench/wire.py), /mcp-compat
  http wire /mcp  … and on /mcp

In-process layers report this process's CPU per call; `http` rows report the server's CPU per call.
The httpx rows include httpx's own per-request cost (~0.3 ms of a shared CPU on the client side);
the wire rows are the server as `make bench` measures it. This is a diagnostic, not part of `make bench`.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import httpx
import mcp_types as types
from starlette.types import Receive, Scope, Send

from bench.floor import measure_floor
from bench.load import own_cpu_ns, sequential_raw, sequential_wire
from bench.report import ms, table
from bench.rpc import COMPAT_PATH, MODERN_PATH, THOUGHT_TEXT, call_message, headers, think_arguments
from bench.run import RESULTS_DIR
from bench.server import new_token, start
from bench.stats import Summary
from thoughtline.clock import SystemClock, now_ms
from thoughtline.config import Settings
from thoughtline.domain import arguments
from thoughtline.identity import OWNER_KEY, Principal, reset_principal, set_principal
from thoughtline.mcp.core_tools import core_tools, new_sequence_id
from thoughtline.mcp.tools import ToolContext, ToolOutput, ToolRegistry, ToolSpec
from thoughtline.storage import thoughts as store
from thoughtline.storage.router import StoreRouter
from thoughtline.web.app import Extras, create_app

Call = Callable[[int], Awaitable[None]]
T = TypeVar("T")


async def _timed(call: Call, n: int, warmup: int) -> tuple[list[int], int]:
    """Run `call(i)` for i in 2..; returns the timed samples and this process's CPU per timed call."""
    samples: list[int] = []
    for i in range(2, warmup + 2):
        await call(i)
    cpu0 = own_cpu_ns()
    for i in range(warmup + 2, warmup + n + 2):
        start_ns = time.perf_counter_ns()
        await call(i)
        samples.append(time.perf_counter_ns() - start_ns)
    return samples, (own_cpu_ns() - cpu0) // n


async def layer_writer(data_dir: Path, n: int, warmup: int) -> tuple[list[int], int]:
    """The store actor alone."""
    clock = SystemClock()
    router = StoreRouter(data_dir, "wal", clock)
    opened = await router.get(OWNER_KEY)
    seq_id = new_sequence_id()
    first = arguments.parse_thought(think_arguments(THOUGHT_TEXT, 1))
    await opened.write(lambda conn: store.append_thought(conn, first, now_ms(clock), seq_id))

    async def call(i: int) -> None:
        inp = arguments.parse_thought(think_arguments(THOUGHT_TEXT, i, seq_id))
        await opened.write(lambda conn: store.append_thought(conn, inp, now_ms(clock), new_sequence_id()))

    try:
        return await _timed(call, n, warmup)
    finally:
        await router.close_all()


async def writer_concurrent(data_dir: Path, clients: int, calls: int) -> tuple[float, int, int, int, int]:
    """`clients` tasks writing through the store actor at once.

    Returns (writes/s, writes, commits, largest group, writer-thread CPU ns per write).
    """
    clock = SystemClock()
    router = StoreRouter(data_dir, "wal", clock)
    opened = await router.get(OWNER_KEY)

    async def one_client() -> None:
        seq_id = new_sequence_id()
        for i in range(1, calls + 1):
            inp = arguments.parse_thought(think_arguments(THOUGHT_TEXT, i, None if i == 1 else seq_id))
            write = functools.partial(store.append_thought, inp=inp, now_ms=now_ms(clock), new_public_id=seq_id)
            await opened.write(write)

    try:
        start_ns = time.perf_counter_ns()
        await asyncio.gather(*(one_client() for _ in range(clients)))
        elapsed = time.perf_counter_ns() - start_ns
        stats = opened.writer.stats
        per_write = stats.cpu_ns // max(1, stats.writes)
        return stats.writes / (elapsed / 1e9), stats.writes, stats.commits, stats.largest_group, per_write
    finally:
        await router.close_all()


async def layer_tool(data_dir: Path, n: int, warmup: int) -> tuple[list[int], int]:
    """ToolRegistry.call with the owner bound, as the bearer gate would."""
    clock = SystemClock()
    router = StoreRouter(data_dir, "wal", clock)
    registry = ToolRegistry(core_tools(), router, clock)
    token = set_principal(Principal(user_key=OWNER_KEY, via="token"))
    try:
        first = await registry.call("sequentialthinking", think_arguments(THOUGHT_TEXT, 1))
        seq_id = str((first.structured_content or {})["sequenceId"])

        async def call(i: int) -> None:
            result = await registry.call("sequentialthinking", think_arguments(THOUGHT_TEXT, i, seq_id))
            if result.is_error:
                raise RuntimeError(str(result.content))

        return await _timed(call, n, warmup)
    finally:
        reset_principal(token)
        await router.close_all()


async def _null_app(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] != "http":
        return
    for _ in range(100):  # drain the body; bounded
        message = await receive()
        if not message.get("more_body"):
            break
    body = b'{"jsonrpc":"2.0","id":1,"result":{"structuredContent":{"sequenceId":"seq_x"}}}'
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})


CONSTANT_TOOL = "bench_constant"


async def _constant(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
    """A tool that writes nothing and answers what `sequentialthinking` answers, in size and shape."""
    structured = {"sequenceId": "seq_" + "0" * 32, "thoughtNumber": 2, "totalThoughts": 3, "nextThoughtNeeded": True}
    return ToolOutput(text=f"Thought 2/3\n\n{THOUGHT_TEXT}", structured={**structured, "branches": []})


def constant_tool() -> ToolSpec:
    """`bench_constant`, registered like any extra tool: the app's whole request path without the write."""
    declaration = types.Tool(name=CONSTANT_TOOL, description="benchmark only", input_schema={"type": "object"})
    return ToolSpec(declaration, _constant)


async def layer_asgi(
    data_dir: Path,
    n: int,
    warmup: int,
    *,
    null: bool = False,
    path: str = COMPAT_PATH,
    tool: str = "sequentialthinking",
) -> tuple[list[int], int]:
    """The app (or a constant app) through httpx.ASGITransport: no sockets, no uvicorn."""
    token = new_token()
    settings = Settings(data_dir=data_dir, api_token=token)
    app: Any = _null_app if null else create_app(settings, extras=Extras(tools=[constant_tool()]))
    transport = httpx.ASGITransport(app=app)
    url = f"http://127.0.0.1{path}"
    ids = iter(range(1, 10_000_000))
    routing = headers(token, path) | ({"Mcp-Name": tool} if path == MODERN_PATH else {})

    def body(i: int, seq_id: str | None) -> dict[str, Any]:
        return call_message(next(ids), tool, think_arguments(THOUGHT_TEXT, i, seq_id), path)

    async def run(client: httpx.AsyncClient) -> tuple[list[int], int]:
        first = await client.post(url, json=body(1, None))
        seq_id = str(first.json()["result"]["structuredContent"]["sequenceId"])

        async def call(i: int) -> None:
            response = await client.post(url, json=body(i, seq_id))
            if response.status_code != 200 or "error" in response.json():
                raise RuntimeError(response.text[:300])

        return await _timed(call, n, warmup)

    async with httpx.AsyncClient(transport=transport, headers=routing) as client:
        if null:
            return await run(client)
        async with app.router.lifespan_context(app):
            return await run(client)


async def _run(layer: Awaitable[T]) -> T:
    return await layer


def main(argv: Sequence[str] | None = None) -> int:
    """Measure every layer and print one table."""
    parser = argparse.ArgumentParser(prog="python -m bench.layers", description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    args = parser.parse_args(argv)
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="layers-", dir=RESULTS_DIR))
    rows: list[tuple[str, Summary, int]] = []
    root = logging.getLogger()
    try:
        floor = measure_floor(scratch / "floor", args.calls, args.warmup)
        rows.append(("floor", Summary.of_ns(floor), 0))
        layers: list[tuple[str, Callable[[Path], Awaitable[tuple[list[int], int]]]]] = [
            ("writer", lambda d: layer_writer(d, args.calls, args.warmup)),
            ("tool", lambda d: layer_tool(d, args.calls, args.warmup)),
            ("asgi-null", lambda d: layer_asgi(d, args.calls, args.warmup, null=True)),
            ("asgi no-write", lambda d: layer_asgi(d, args.calls, args.warmup, tool=CONSTANT_TOOL)),
            (
                "asgi no-write /mcp",
                lambda d: layer_asgi(d, args.calls, args.warmup, path=MODERN_PATH, tool=CONSTANT_TOOL),
            ),
            ("asgi", lambda d: layer_asgi(d, args.calls, args.warmup)),
            ("asgi /mcp", lambda d: layer_asgi(d, args.calls, args.warmup, path=MODERN_PATH)),
        ]
        for name, layer in layers:
            samples, cpu = asyncio.run(_run(layer(scratch / name)))
            rows.append((name, Summary.of_ns(samples), cpu))
        with open(os.devnull, "w") as sink:
            handler = logging.StreamHandler(sink)
            handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
            root.addHandler(handler)
            root.setLevel(logging.INFO)
            try:
                samples, cpu = asyncio.run(layer_asgi(scratch / "asgi-log", args.calls, args.warmup))
            finally:
                root.removeHandler(handler)
                root.setLevel(logging.WARNING)
        rows.append(("asgi+log", Summary.of_ns(samples), cpu))
        server, _ = start(scratch / "http")
        try:
            for name, path in (("http", COMPAT_PATH), ("http /mcp", MODERN_PATH)):
                seq = sequential_raw(server, args.calls, args.warmup, path)
                rows.append((name, Summary.of_ns(seq.samples_ns), seq.server_cpu_ns // args.calls))
            for name, path in (("http wire", COMPAT_PATH), ("http wire /mcp", MODERN_PATH)):
                seq = asyncio.run(sequential_wire(server, args.calls, args.warmup, path))
                rows.append((name, Summary.of_ns(seq.samples_ns), seq.server_cpu_ns // args.calls))
        finally:
            server.stop()
        rate, writes, commits, largest, writer_cpu = asyncio.run(_run(writer_concurrent(scratch / "writer-32", 32, 50)))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    base = rows[0][1].median_ms
    print(f"load average {[round(x, 2) for x in os.getloadavg()]}")
    print(
        table(
            ["layer", "median ms", "p99 ms", "median - floor", "CPU ms/call"],
            [
                [name, ms(s.median_ms), ms(s.p99_ms), ms(s.median_ms - base), ms(cpu / 1e6) if cpu else "-"]
                for name, s, cpu in rows
            ],
            right=(1, 2, 3, 4),
        )
    )
    print(
        f"store actor alone, 32 concurrent writers: {rate:,.0f} writes/s "
        f"({writes} writes in {commits} commits, largest group {largest}); "
        f"writer thread {writer_cpu / 1e6:.3f} ms CPU per write, so at most {1e9 / max(1, writer_cpu):,.0f} writes/s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
