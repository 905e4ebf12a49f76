"""Test helpers: real servers on 127.0.0.1 (in a thread or a child process) and real MCP clients."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from starlette.applications import Starlette

TOKEN = "test-token-" + "x" * 40

# Debian's Chromium (.ci/run installs it) when it is on PATH, else Playwright's own download
# (`make chromium`; `.ci/check-browser` stops `make test` early when neither is there). Headless as
# root; without the background-networking flags it keeps trying to reach Google's hosts offline.
CHROMIUM: str | None = shutil.which("chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class ThreadServer:
    """An app served by uvicorn in a background thread of the test process."""

    app: Starlette
    port: int
    server: uvicorn.Server
    thread: threading.Thread

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:<port>`."""
        return f"http://127.0.0.1:{self.port}"


@contextlib.contextmanager
def serve_in_thread(app: Starlette) -> Iterator[ThreadServer]:
    """Serve `app` on a free loopback port until the block ends."""
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False, lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    started = threading.Event()
    for _ in range(2000):
        if server.started:
            started.set()
            break
        started.wait(0.005)
    if not server.started:
        raise RuntimeError("uvicorn did not start")
    try:
        yield ThreadServer(app, port, server, thread)
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@contextlib.asynccontextmanager
async def mcp_client(
    base_url: str, token: str | None = TOKEN, *, path: str = "/mcp-compat", mode: str = "legacy"
) -> AsyncIterator[Client]:
    """A connected `mcp` SDK client for `base_url + path` with a bearer header."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        transport = streamable_http_client(base_url + path, http_client=http)
        async with Client(transport, mode=mode) as client:
            yield client


@dataclass
class ChildServer:
    """`python -m thoughtline serve` in a child process."""

    process: subprocess.Popen[bytes]
    port: int
    token: str
    data_dir: Path
    log_path: Path

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:<port>`."""
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        """Everything the process printed so far."""
        return self.log_path.read_text(errors="replace")


def start_child(data_dir: Path, token: str | None = TOKEN, extra_env: Mapping[str, str] | None = None) -> ChildServer:
    """Start a real server process and wait until it answers /healthz (token None: let it generate one)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("THOUGHTLINE_", "MCP_API_TOKEN"))}
    env.update({"THOUGHTLINE_DATA_DIR": str(data_dir), "PYTHONUNBUFFERED": "1"})
    if token is not None:
        env["MCP_API_TOKEN"] = token
    env.update(extra_env or {})
    log_path = data_dir.parent / f"server-{port}.log"
    data_dir.mkdir(parents=True, exist_ok=True)
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "thoughtline", "serve", "--host", "127.0.0.1", "--port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
    child = ChildServer(process, port, token or "", data_dir, log_path)
    wait_healthy(child)
    return child


def wait_healthy(child: ChildServer, attempts: int = 600) -> None:
    """Poll /healthz (each poll blocks up to 50 ms on connect) until it answers or the process dies."""
    stop = threading.Event()
    for _ in range(attempts):
        if child.process.poll() is not None:
            raise RuntimeError(f"server exited early:\n{child.log()}")
        try:
            if httpx.get(child.base_url + "/healthz", timeout=0.5).status_code == 200:
                return
        except httpx.TransportError:
            stop.wait(0.05)
    raise RuntimeError(f"server did not become healthy:\n{child.log()}")


def stop_child(child: ChildServer) -> None:
    """Terminate politely, then kill."""
    if child.process.poll() is None:
        child.process.terminate()
        try:
            child.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            child.process.kill()
            child.process.wait()


def structured(result: Any) -> dict[str, Any]:
    """The structured content of a successful tool result (fails the test otherwise)."""
    assert not result.is_error, result.content[0].text
    data = result.structured_content
    assert isinstance(data, dict)
    return data


def text(result: Any) -> str:
    """The first text block of a tool result."""
    return str(result.content[0].text)
