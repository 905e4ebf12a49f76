"""Durability: acknowledged thoughts survive `kill -9`, retries never duplicate, and several
server processes writing one store concurrently lose nothing and surface no lock errors."""

from __future__ import annotations

import asyncio
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support import TOKEN, ChildServer, start_child, stop_child

pytestmark = pytest.mark.anyio

HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "Authorization": f"Bearer {TOKEN}",
    "MCP-Protocol-Version": "2025-06-18",
}


async def call(http: httpx.AsyncClient, base: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """One stateless tools/call over raw JSON-RPC; returns the tool result."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": args}}
    response = await http.post(base + "/mcp-compat", json=body, headers=HEADERS)
    response.raise_for_status()
    result: dict[str, Any] = response.json()["result"]
    return result


def thought_args(seq: str | None, number: int, writer: int) -> dict[str, Any]:
    args: dict[str, Any] = {
        "thought": f"writer {writer} thought {number}",
        "nextThoughtNeeded": True,
        "thoughtNumber": number,
        "totalThoughts": 1000,
        "requestId": f"w{writer}-n{number}",
    }
    if seq:
        args["sequenceId"] = seq
    return args


@dataclass
class Writer:
    """One client writing its own sequence: what was acknowledged and what was in flight at the crash."""

    index: int
    seq: str | None = None
    acked: list[int] = field(default_factory=list)
    in_flight: int | None = None


async def history_numbers(http: httpx.AsyncClient, base: str, seq: str) -> list[int]:
    numbers: list[int] = []
    cursor: str | None = None
    while True:
        args: dict[str, Any] = {"sequenceId": seq, "limit": 100}
        if cursor:
            args["cursor"] = cursor
        page = (await call(http, base, "get_thought_history", args))["structuredContent"]
        numbers += [t["thoughtNumber"] for t in page["thoughts"]]
        cursor = page["nextCursor"]
        if cursor is None:
            return numbers


async def test_acknowledged_thoughts_survive_kill_9_exactly_once(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    child = start_child(data_dir)
    writers = [Writer(i) for i in range(8)]
    enough = asyncio.Event()
    kill_after = 160

    async def run(writer: Writer, http: httpx.AsyncClient) -> None:
        number = 1
        while True:
            writer.in_flight = number
            try:
                result = await call(
                    http, child.base_url, "sequentialthinking", thought_args(writer.seq, number, writer.index)
                )
            except (httpx.HTTPError, OSError):
                return  # the server died under us; `in_flight` may or may not have committed
            assert not result["isError"], result
            writer.seq = result["structuredContent"]["sequenceId"]
            writer.acked.append(number)
            writer.in_flight = None
            if sum(len(w.acked) for w in writers) >= kill_after:
                enough.set()
            number += 1

    async with httpx.AsyncClient(timeout=30) as http:
        tasks = [asyncio.create_task(run(w, http)) for w in writers]
        await asyncio.wait_for(enough.wait(), timeout=120)
        child.process.send_signal(signal.SIGKILL)
        child.process.wait()
        await asyncio.wait_for(asyncio.gather(*tasks), timeout=60)

    acked_total = sum(len(w.acked) for w in writers)
    assert acked_total >= kill_after
    restarted = start_child(data_dir)
    try:
        async with httpx.AsyncClient(timeout=30) as http:
            for writer in writers:
                assert writer.seq is not None
                numbers = await history_numbers(http, restarted.base_url, writer.seq)
                # Every acknowledged thought is there, once, in order; at most the one in flight beyond.
                assert numbers[: len(writer.acked)] == writer.acked
                assert len(numbers) in (len(writer.acked), len(writer.acked) + 1)
                assert len(numbers) == len(set(numbers))
                if writer.in_flight is not None:
                    # The client retries its unacknowledged call with the same requestId: exactly once.
                    retry = await call(
                        http,
                        restarted.base_url,
                        "sequentialthinking",
                        thought_args(writer.seq, writer.in_flight, writer.index),
                    )
                    assert not retry["isError"], retry
                    after = await history_numbers(http, restarted.base_url, writer.seq)
                    assert after == [*writer.acked, writer.in_flight]
    finally:
        stop_child(restarted)


async def test_several_processes_share_one_store_without_lock_errors_or_loss(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    children: list[ChildServer] = []
    try:
        for _ in range(3):
            children.append(start_child(data_dir))
        async with httpx.AsyncClient(timeout=60) as http:
            first = await call(http, children[0].base_url, "sequentialthinking", thought_args(None, 1, 99))
            shared = first["structuredContent"]["sequenceId"]
            per_writer = 25

            async def run(writer: int) -> list[str]:
                base = children[writer % len(children)].base_url
                problems: list[str] = []
                seq: str | None = None
                for n in range(1, per_writer + 1):
                    own = await call(http, base, "sequentialthinking", thought_args(seq, n, writer))
                    if own["isError"]:
                        problems.append(own["content"][0]["text"])
                        continue
                    seq = own["structuredContent"]["sequenceId"]
                    args = {**thought_args(shared, 1 + writer * 1000 + n, writer), "requestId": f"s{writer}-{n}"}
                    common = await call(http, base, "sequentialthinking", args)
                    if common["isError"]:
                        problems.append(common["content"][0]["text"])
                return problems

            results = await asyncio.gather(*(run(w) for w in range(9)))
            assert [p for problems in results for p in problems] == []
            numbers = await history_numbers(http, children[1].base_url, shared)
            assert len(numbers) == 1 + 9 * per_writer
            assert len(set(numbers)) == len(numbers)
    finally:
        for child in children:
            stop_child(child)
        logs = "".join(child.log() for child in children)
        assert "database is locked" not in logs
