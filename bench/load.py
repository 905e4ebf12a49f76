"""Load shapes against a running Thoughtline: one sequential client, and N concurrent clients.

Each shape also reads the server's CPU time from /proc before and after, so a result can say how
much of a call is the server's own work and how much is waiting (fsync, the client, the scheduler).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from bench.rpc import COMPAT_PATH, THOUGHT_TEXT, AsyncRpcClient, RpcClient, check, think_arguments
from bench.server import ServerProcess
from bench.wire import WireClient

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu_ns(pid: int) -> int:
    """User + system CPU time of `pid` so far (clock-tick resolution, 10 ms on most kernels)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat(5))
    return ticks * 1_000_000_000 // CLOCK_TICKS


def own_cpu_ns() -> int:
    """User + system CPU time of this (client) process so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return int((usage.ru_utime + usage.ru_stime) * 1e9)


@dataclass(frozen=True)
class Sequential:
    """Per-call latencies of one client writing one sequence, plus CPU spent on both sides."""

    samples_ns: list[int]
    server_cpu_ns: int
    client_cpu_ns: int


def sequential_raw(server: ServerProcess, n: int, warmup: int, path: str = COMPAT_PATH) -> Sequential:
    """`n` timed calls with a blocking httpx client (plain JSON-RPC POSTs to `path`), one sequence."""
    samples: list[int] = []
    with RpcClient(f"http://127.0.0.1:{server.port}{path}", server.token) as rpc:
        first = check(rpc.post(rpc.think_body(THOUGHT_TEXT, 1)))
        sequence_id = rpc.sequence_id(first)
        cpu0, own0 = process_cpu_ns(server.pid), own_cpu_ns()
        for i in range(2, warmup + n + 2):
            body = rpc.think_body(THOUGHT_TEXT, i, sequence_id)
            start = time.perf_counter_ns()
            response = rpc.post(body)
            elapsed = time.perf_counter_ns() - start
            check(response)
            if i >= warmup + 2:
                samples.append(elapsed)
        return Sequential(samples, process_cpu_ns(server.pid) - cpu0, own_cpu_ns() - own0)


async def sequential_wire(server: ServerProcess, n: int, warmup: int, path: str = COMPAT_PATH) -> Sequential:
    """`n` timed calls to `path` with the minimal socket client (`bench.wire`), one sequence."""
    samples: list[int] = []
    async with WireClient(server.port, path, server.token) as wire:
        first = await wire.call("sequentialthinking", think_arguments(THOUGHT_TEXT, 1))
        sequence_id = str(first["structuredContent"]["sequenceId"])
        cpu0, own0 = process_cpu_ns(server.pid), own_cpu_ns()
        for i in range(2, warmup + n + 2):
            args = think_arguments(THOUGHT_TEXT, i, sequence_id)
            start = time.perf_counter_ns()
            await wire.call("sequentialthinking", args)
            elapsed = time.perf_counter_ns() - start
            if i >= warmup + 2:
                samples.append(elapsed)
        return Sequential(samples, process_cpu_ns(server.pid) - cpu0, own_cpu_ns() - own0)


def _sdk_client(server: ServerProcess, http: httpx2.AsyncClient) -> Client:
    return Client(streamable_http_client(server.url, http_client=http), mode="legacy")


def _structured(result: Any) -> dict[str, Any]:
    if result.is_error:
        raise RuntimeError(f"tool call failed: {result.content}")
    data = result.structured_content
    if not isinstance(data, dict):
        raise RuntimeError("tool result has no structured content")
    return data


async def sequential_sdk(server: ServerProcess, n: int, warmup: int) -> Sequential:
    """`n` timed calls through the `mcp` SDK's Streamable HTTP client (what an agent host runs)."""
    samples: list[int] = []
    headers = {"Authorization": f"Bearer {server.token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http, _sdk_client(server, http) as client:
        first = _structured(await client.call_tool("sequentialthinking", think_arguments(THOUGHT_TEXT, 1)))
        sequence_id = str(first["sequenceId"])
        cpu0, own0 = process_cpu_ns(server.pid), own_cpu_ns()
        for i in range(2, warmup + n + 2):
            args = think_arguments(THOUGHT_TEXT, i, sequence_id)
            start = time.perf_counter_ns()
            result = await client.call_tool("sequentialthinking", args)
            elapsed = time.perf_counter_ns() - start
            _structured(result)
            if i >= warmup + 2:
                samples.append(elapsed)
        return Sequential(samples, process_cpu_ns(server.pid) - cpu0, own_cpu_ns() - own0)


@dataclass(frozen=True)
class Concurrent:
    """N clients x M calls: wall time for all of them, per-call latencies, CPU on both sides."""

    clients: int
    calls_per_client: int
    elapsed_ns: int
    samples_ns: list[int]
    server_cpu_ns: int
    client_cpu_ns: int

    @property
    def writes(self) -> int:
        """Acknowledged (successful) writes in the timed window."""
        return len(self.samples_ns)

    @property
    def writes_per_s(self) -> float:
        """Acknowledged writes per second of wall time."""
        return self.writes / (self.elapsed_ns / 1e9)


async def concurrent_raw(server: ServerProcess, clients: int, calls: int) -> Concurrent:
    """`clients` asyncio tasks, each with its own connection and sequence, `calls` writes each."""
    samples: list[int] = []
    async with contextlib.AsyncExitStack() as stack:
        rpcs = [await stack.enter_async_context(AsyncRpcClient(server.url, server.token)) for _ in range(clients)]
        # Warm-up: one call per client opens its connection and creates its sequence.
        firsts = await asyncio.gather(*(rpc.post(rpc.think_body(THOUGHT_TEXT, 1)) for rpc in rpcs))
        sequence_ids = [rpc.sequence_id(check(resp)) for rpc, resp in zip(rpcs, firsts, strict=True)]

        async def one_client(rpc: AsyncRpcClient, sequence_id: str) -> None:
            for i in range(2, calls + 2):
                body = rpc.think_body(THOUGHT_TEXT, i, sequence_id)
                start = time.perf_counter_ns()
                response = await rpc.post(body)
                elapsed = time.perf_counter_ns() - start
                check(response)
                samples.append(elapsed)

        cpu0, own0 = process_cpu_ns(server.pid), own_cpu_ns()
        start = time.perf_counter_ns()
        await asyncio.gather(*(one_client(rpc, sid) for rpc, sid in zip(rpcs, sequence_ids, strict=True)))
        elapsed = time.perf_counter_ns() - start
        server_cpu, client_cpu = process_cpu_ns(server.pid) - cpu0, own_cpu_ns() - own0
    return Concurrent(clients, calls, elapsed, samples, server_cpu, client_cpu)


async def concurrent_wire(server: ServerProcess, clients: int, calls: int, path: str = COMPAT_PATH) -> Concurrent:
    """`clients` tasks on the minimal socket client to `path`, each with its own connection and sequence."""
    samples: list[int] = []
    async with contextlib.AsyncExitStack() as stack:
        wires = [await stack.enter_async_context(WireClient(server.port, path, server.token)) for _ in range(clients)]
        firsts = await asyncio.gather(
            *(wire.call("sequentialthinking", think_arguments(THOUGHT_TEXT, 1)) for wire in wires)
        )
        sequence_ids = [str(first["structuredContent"]["sequenceId"]) for first in firsts]

        async def one_client(wire: WireClient, sequence_id: str) -> None:
            for i in range(2, calls + 2):
                args = think_arguments(THOUGHT_TEXT, i, sequence_id)
                start = time.perf_counter_ns()
                await wire.call("sequentialthinking", args)
                samples.append(time.perf_counter_ns() - start)

        cpu0, own0 = process_cpu_ns(server.pid), own_cpu_ns()
        start = time.perf_counter_ns()
        await asyncio.gather(*(one_client(wire, sid) for wire, sid in zip(wires, sequence_ids, strict=True)))
        elapsed = time.perf_counter_ns() - start
        server_cpu, client_cpu = process_cpu_ns(server.pid) - cpu0, own_cpu_ns() - own0
    return Concurrent(clients, calls, elapsed, samples, server_cpu, client_cpu)


async def concurrent_sdk(server: ServerProcess, clients: int, calls: int) -> Concurrent:
    """The same shape through `clients` `mcp` SDK clients in one event loop."""
    samples: list[int] = []
    headers = {"Authorization": f"Bearer {server.token}"}
    ready = asyncio.Event()
    started: list[int] = []
    finished: list[int] = []
    arrived = 0

    async def one_client() -> None:
        nonlocal arrived
        async with httpx2.AsyncClient(headers=headers, timeout=120) as http, _sdk_client(server, http) as client:
            first = _structured(await client.call_tool("sequentialthinking", think_arguments(THOUGHT_TEXT, 1)))
            sequence_id = str(first["sequenceId"])
            arrived += 1
            if arrived == clients:
                started.extend((time.perf_counter_ns(), process_cpu_ns(server.pid), own_cpu_ns()))
                ready.set()
            await ready.wait()
            for i in range(2, calls + 2):
                args = think_arguments(THOUGHT_TEXT, i, sequence_id)
                start = time.perf_counter_ns()
                result = await client.call_tool("sequentialthinking", args)
                elapsed = time.perf_counter_ns() - start
                _structured(result)
                samples.append(elapsed)
                if len(samples) == clients * calls:
                    # The window ends when the last timed call is acknowledged, not when clients close.
                    finished.extend((time.perf_counter_ns(), process_cpu_ns(server.pid), own_cpu_ns()))

    await asyncio.gather(*(one_client() for _ in range(clients)))
    return Concurrent(
        clients,
        calls,
        finished[0] - started[0],
        samples,
        finished[1] - started[1],
        finished[2] - started[2],
    )
