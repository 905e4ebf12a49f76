"""Canonical-style calls through the real MCP client: clients that never send sequenceId.

A client prompted for the canonical `sequentialthinking` tool counts 1, 2, 3 and sends no id; its
thoughts must land in one sequence, flagged and explained, and two such agents of one user must
never be merged into one sequence.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.oauth_support import TOKEN as STACK_TOKEN
from tests.oauth_support import FakeClock, connected, running_stack
from tests.support import TOKEN, ThreadServer, mcp_client, serve_in_thread, structured, text
from thoughtline.config import Settings
from thoughtline.domain.canonical import CONTINUE_WINDOW_MS, MAX_COUNTED
from thoughtline.web.app import create_app

pytestmark = pytest.mark.anyio


def step(n: int, body: str, *, final: bool = False, **extra: Any) -> dict[str, Any]:
    """A canonical call: no sequenceId."""
    return {"thought": body, "thoughtNumber": n, "totalThoughts": 3, "nextThoughtNeeded": not final, **extra}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(time.time())


@pytest.fixture
def timed_server(tmp_path: Path, clock: FakeClock) -> Iterator[ThreadServer]:
    with serve_in_thread(create_app(Settings(data_dir=tmp_path / "data", api_token=TOKEN), clock=clock)) as running:
        yield running


async def bodies(client: Any, sequence_id: str) -> list[str]:
    history = structured(await client.call_tool("get_thought_history", {"sequenceId": sequence_id}))
    return [t["thought"] for t in history["thoughts"]]


async def test_a_canonical_client_counting_1_2_3_gets_one_sequence_with_notes_to_pass_sequence_id(
    server: ThreadServer,
) -> None:
    async with mcp_client(server.base_url) as client:
        first = structured(await client.call_tool("sequentialthinking", step(1, "one")))
        second = await client.call_tool("sequentialthinking", step(2, "two"))
        third = await client.call_tool("sequentialthinking", step(3, "three", final=True))
        seq = first["sequenceId"]
        assert "continued" not in first
        for result in (second, third):
            assert structured(result)["sequenceId"] == seq
            assert structured(result)["continued"] is True
            assert f"this thought continues {seq}" in text(result)
            assert f"Pass sequenceId: {seq}" in text(result)
        assert structured(third)["thoughtHistoryLength"] == 3
        assert await bodies(client, seq) == ["one", "two", "three"]


async def test_a_number_above_1_that_fits_no_sequence_starts_a_new_one_and_says_so(server: ThreadServer) -> None:
    async with mcp_client(server.base_url) as client:
        first = structured(await client.call_tool("sequentialthinking", step(1, "one")))
        stray = await client.call_tool("sequentialthinking", step(5, "five"))
    assert structured(stray)["sequenceId"] != first["sequenceId"]
    assert "continued" not in structured(stray)
    assert "Note: thought 5 started a new sequence" in text(stray)
    assert "To continue a sequence, pass its sequenceId" in text(stray)


async def test_thought_number_1_without_sequence_id_always_starts_a_new_sequence(server: ThreadServer) -> None:
    async with mcp_client(server.base_url) as client:
        a = structured(await client.call_tool("sequentialthinking", step(1, "a")))
        b = await client.call_tool("sequentialthinking", step(1, "b"))
    assert structured(b)["sequenceId"] != a["sequenceId"]
    assert "Note:" not in text(b)


async def test_two_interleaved_canonical_agents_of_one_user_are_never_merged(server: ThreadServer) -> None:
    async with mcp_client(server.base_url) as agent_a, mcp_client(server.base_url) as agent_b:
        a1 = structured(await agent_a.call_tool("sequentialthinking", step(1, "A1")))
        b1 = structured(await agent_b.call_tool("sequentialthinking", step(1, "B1")))
        a2 = await agent_a.call_tool("sequentialthinking", step(2, "A2"))
        b2 = await agent_b.call_tool("sequentialthinking", step(2, "B2"))
        # Both sequences end at thought 1: the server cannot tell them apart, so it merges nothing.
        assert "2 of your open sequences end at thought 1" in text(a2)
        ids = {a1["sequenceId"], b1["sequenceId"], structured(a2)["sequenceId"], structured(b2)["sequenceId"]}
        assert len(ids) == 4
        for seq in ids:
            assert len(await bodies(agent_a, seq)) == 1


async def test_the_note_counts_every_open_sequence_that_fits_not_just_the_first_two(server: ThreadServer) -> None:
    async with mcp_client(server.base_url) as client:
        for n in range(5):
            await client.call_tool("sequentialthinking", step(1, f"agent {n}"))
        five = await client.call_tool("sequentialthinking", step(2, "which one?"))
        for n in range(5, MAX_COUNTED + 1):
            await client.call_tool("sequentialthinking", step(1, f"agent {n}"))
        many = await client.call_tool("sequentialthinking", step(2, "which one now?"))
    assert "Note: thought 2 started a new sequence: no sequenceId was sent and 5 of your open sequences end at " in (
        text(five)
    )
    assert f"more than {MAX_COUNTED} of your open sequences end at thought 1" in text(many)


async def test_a_completed_sequence_is_not_continued(server: ThreadServer) -> None:
    async with mcp_client(server.base_url) as client:
        first = structured(await client.call_tool("sequentialthinking", step(1, "one")))
        await client.call_tool("sequentialthinking", step(2, "two", final=True))
        after = await client.call_tool("sequentialthinking", step(3, "three"))
    assert structured(after)["sequenceId"] != first["sequenceId"]
    assert "thought 3 started a new sequence" in text(after)


async def test_a_paused_sequence_is_continued_and_an_abandoned_one_is_not(server: ThreadServer) -> None:
    async with mcp_client(server.base_url) as client:
        seq = structured(await client.call_tool("sequentialthinking", step(1, "one")))["sequenceId"]
        await client.call_tool("manage_sequence", {"action": "pause", "sequenceId": seq})
        paused = structured(await client.call_tool("sequentialthinking", step(2, "two")))
        await client.call_tool("manage_sequence", {"action": "abandon", "sequenceId": seq})
        abandoned = await client.call_tool("sequentialthinking", step(3, "three"))
    assert (paused["sequenceId"], paused["continued"]) == (seq, True)
    assert structured(abandoned)["sequenceId"] != seq
    assert "thought 3 started a new sequence" in text(abandoned)


async def test_a_retried_canonical_call_returns_its_first_result_and_writes_once(server: ThreadServer) -> None:
    async with mcp_client(server.base_url) as client:
        seq = structured(await client.call_tool("sequentialthinking", step(1, "one")))["sequenceId"]
        first = await client.call_tool("sequentialthinking", step(2, "two", requestId="call-2"))
        # The retry no longer fits the rule (the sequence now ends at 2), yet it is the same call.
        retry = await client.call_tool("sequentialthinking", step(2, "two", requestId="call-2"))
        assert structured(retry) == structured(first)
        assert (structured(first)["sequenceId"], structured(first)["continued"]) == (seq, True)
        assert await bodies(client, seq) == ["one", "two"]


async def test_a_sequence_idle_for_more_than_30_minutes_is_not_continued(
    timed_server: ThreadServer, clock: FakeClock
) -> None:
    async with mcp_client(timed_server.base_url) as client:
        first = structured(await client.call_tool("sequentialthinking", step(1, "one")))
        clock.advance(CONTINUE_WINDOW_MS / 1000 - 1)
        second = structured(await client.call_tool("sequentialthinking", step(2, "two")))
        clock.advance(CONTINUE_WINDOW_MS / 1000 + 1)
        third = await client.call_tool("sequentialthinking", step(3, "three"))
    assert second["sequenceId"] == first["sequenceId"]
    assert structured(third)["sequenceId"] != first["sequenceId"]
    assert "last 30 minutes" in text(third)


async def test_branches_and_revisions_of_a_canonical_client_stay_in_its_sequence(server: ThreadServer) -> None:
    async with mcp_client(server.base_url) as client:
        seq = structured(await client.call_tool("sequentialthinking", step(1, "one")))["sequenceId"]
        await client.call_tool("sequentialthinking", step(2, "two"))
        fork = await client.call_tool("sequentialthinking", step(3, "alt", branchId="alt", branchFromThought=1))
        # The highest number on any branch is now 3, so 4 continues even on the main path.
        revision = await client.call_tool("sequentialthinking", step(4, "fix", isRevision=True, revisesThought=2))
    assert structured(fork)["sequenceId"] == seq
    assert structured(revision)["sequenceId"] == seq
    assert structured(revision)["continued"] is True


async def test_concurrent_canonical_calls_continue_a_sequence_at_most_once(server: ThreadServer) -> None:
    async with mcp_client(server.base_url) as client:
        seq = structured(await client.call_tool("sequentialthinking", step(1, "one")))["sequenceId"]
        results = await asyncio.gather(
            *(client.call_tool("sequentialthinking", step(2, f"racer {i}")) for i in range(8))
        )
        continued = [structured(r) for r in results if structured(r).get("continued")]
        assert len(continued) == 1
        assert continued[0]["sequenceId"] == seq
        assert len(await bodies(client, seq)) == 2


async def test_with_oauth_only_sequences_started_by_the_same_client_are_continued(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack:
        first_app, second_app = stack.sign_in_client(), stack.sign_in_client()
        async with (
            connected(first_app.provider(), first_app.server_url) as a,
            connected(second_app.provider(), second_app.server_url) as b,
            mcp_client(stack.thoughtline.url, STACK_TOKEN) as owner_token,
        ):
            seq = structured(await a.call_tool("sequentialthinking", step(1, "A1")))["sequenceId"]
            # Same user and store, other OAuth client, then the static token: neither may join A's sequence.
            from_b = await b.call_tool("sequentialthinking", step(2, "B2"))
            from_token = await owner_token.call_tool("sequentialthinking", step(2, "T2"))
            from_a = structured(await a.call_tool("sequentialthinking", step(2, "A2")))
            assert structured(from_b)["sequenceId"] != seq
            assert "thought 2 started a new sequence" in text(from_b)
            assert structured(from_token)["sequenceId"] != seq
            assert from_a["sequenceId"] == seq
            assert from_a["continued"] is True
            assert await bodies(owner_token, seq) == ["A1", "A2"]
            assert await bodies(owner_token, structured(from_b)["sequenceId"]) == ["B2"]  # one store


async def test_a_revision_that_continues_nothing_says_that_no_sequence_id_was_sent(server: ThreadServer) -> None:
    async with mcp_client(server.base_url) as a, mcp_client(server.base_url) as b:
        await a.call_tool("sequentialthinking", step(1, "A1"))
        await b.call_tool("sequentialthinking", step(1, "B1"))
        refused = await a.call_tool("sequentialthinking", step(2, "fix", isRevision=True, revisesThought=1))
    assert refused.is_error
    assert text(refused).startswith("revision_target_not_found: ")
    assert "No sequenceId was sent and 2 of your open sequences end at thought 1" in text(refused)
    assert "pass the sequenceId of the sequence this thought belongs to" in text(refused)


async def test_with_the_library_off_only_a_held_sequence_id_continues_a_sequence(tmp_path: Path) -> None:
    app = create_app(Settings(data_dir=tmp_path / "data", api_token=TOKEN, library=False))
    with serve_in_thread(app) as running:
        async with mcp_client(running.base_url) as client:
            first = structured(await client.call_tool("sequentialthinking", step(1, "one")))
            second = await client.call_tool("sequentialthinking", step(2, "two"))
            assert not second.is_error, text(second)
            assert structured(second)["sequenceId"] != first["sequenceId"]
            assert "continued" not in structured(second)
            assert "only a sequence whose sequenceId is sent" in text(second)
            assert await bodies(client, first["sequenceId"]) == ["one"]
