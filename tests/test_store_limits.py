"""Resources per store stay bounded: open stores are capped (least recently used closed first),
descriptors keep a reserve so the listener and `/healthz` keep working, and `serve` raises the
soft descriptor limit to the hard one."""

from __future__ import annotations

import contextlib
import os
import resource
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support import TOKEN, ThreadServer, serve_in_thread, start_child, stop_child
from thoughtline import resources
from thoughtline.config import Settings
from thoughtline.identity import Principal
from thoughtline.web.app import Extras, create_app

pytestmark = pytest.mark.anyio


async def users(token: str, resource_url: str) -> Principal | None:
    """The identity provider's fake: bearer `user-N` is GitHub account N."""
    if token.startswith("user-") and token[5:].isdigit():
        return Principal(user_key=f"github:{token[5:]}", via="oauth")
    return None


@contextlib.contextmanager
def many_user_server(tmp_path: Path, max_open: int) -> Iterator[ThreadServer]:
    settings = Settings(data_dir=tmp_path / "data", api_token=TOKEN, max_open_stores=max_open)
    with serve_in_thread(create_app(settings, extras=Extras(verifier=users))) as running:
        yield running


async def write_as(http: httpx.AsyncClient, base: str, user: int) -> dict[str, Any]:
    args = {"thought": f"user {user}", "nextThoughtNeeded": False, "thoughtNumber": 1, "totalThoughts": 1}
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "sequentialthinking", "arguments": args},
    }
    headers = {
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer user-{user}",
        "MCP-Protocol-Version": "2025-06-18",
    }
    response = await http.post(base + "/mcp-compat", json=body, headers=headers)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()["result"]
    return result


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def test_open_stores_are_capped_and_descriptors_and_threads_stay_bounded(tmp_path: Path) -> None:
    cap = 6
    with many_user_server(tmp_path, max_open=cap) as running:
        router = running.app.state.router
        async with httpx.AsyncClient(timeout=30) as http:
            for user in range(cap):
                assert not (await write_as(http, running.base_url, user))["isError"]
            fds_at_cap, threads_at_cap = open_fds(), threading.active_count()
            most_fds, most_threads = fds_at_cap, threads_at_cap
            for user in range(cap, 6 * cap):
                result = await write_as(http, running.base_url, user)
                assert not result["isError"], result
                assert router.open_count <= cap
                most_fds, most_threads = max(most_fds, open_fds()), max(most_threads, threading.active_count())
            # A store closed for room opens again on demand, with what it held.
            again = await write_as(http, running.base_url, 0)
            assert not again["isError"]
            assert (await http.get(running.base_url + "/healthz")).status_code == 200
    # Thirty more stores than the cap cost no more than one store's worth of descriptors or threads.
    assert most_fds <= fds_at_cap + 12
    assert most_threads <= threads_at_cap + 2


@contextlib.contextmanager
def soft_fd_limit(limit: int) -> Iterator[None]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


async def test_short_descriptors_close_idle_stores_and_the_server_keeps_answering(tmp_path: Path) -> None:
    with many_user_server(tmp_path, max_open=10_000) as running:
        router = running.app.state.router
        async with httpx.AsyncClient(timeout=30) as http:
            assert not (await write_as(http, running.base_url, 0))["isError"]
            # Room for the reserve and a few more stores, no more.
            limit = open_fds() + 128 + 5 * 11
            with soft_fd_limit(limit):
                for user in range(1, 40):
                    result = await write_as(http, running.base_url, user)
                    assert not result["isError"], result
                    assert (await http.get(running.base_url + "/healthz")).status_code == 200
                    assert open_fds() <= limit - 100  # the reserve is never touched by stores
                assert router.open_count < 30
                # New connections are still accepted (the listener has descriptors left).
                async with httpx.AsyncClient(timeout=30) as fresh:
                    assert (await fresh.get(running.base_url + "/healthz")).status_code == 200


def test_serve_raises_the_soft_descriptor_limit_to_the_hard_one(tmp_path: Path) -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    with soft_fd_limit(512):  # inherited by the child
        child = start_child(tmp_path / "data")
    try:
        limits = Path(f"/proc/{child.process.pid}/limits").read_text()
        line = next(row for row in limits.splitlines() if row.startswith("Max open files"))
        soft_now = line.split()[3]
        expected = "unlimited" if hard == resource.RLIM_INFINITY else str(hard)
        assert soft_now == expected, line
    finally:
        stop_child(child)


def test_raising_the_descriptor_limit_reaches_the_hard_limit_and_never_lowers_it() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    with soft_fd_limit(min(512, soft)):
        raised = resources.raise_fd_limit()
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == raised
        assert raised == (hard if hard != resource.RLIM_INFINITY else max(512, 1 << 20))
        assert resources.raise_fd_limit() == raised  # already there: unchanged
    spare = resources.fds_to_spare(reserve=0)
    assert spare is not None
    assert 0 < spare <= resources.fd_limit()


def test_the_allocator_controls_are_safe_to_call() -> None:
    assert resources.limit_malloc_arenas(0) is False  # 0 leaves glibc's default alone
    assert resources.limit_malloc_arenas(2) is True  # glibc (the test image is Debian)
    assert resources.return_freed_memory() is True
