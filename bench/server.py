"""A real `python -m thoughtline serve` child process for the benchmark, and what /proc says about it."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import httpx

from bench.rpc import RpcClient

START_DEADLINE_S = 60.0
POLL_INTERVAL_S = 0.005


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def new_token() -> str:
    """A bearer token long enough for the static door (≥ 32 chars)."""
    return "bench-" + secrets.token_urlsafe(32)


@dataclass
class ServerProcess:
    """One running server: its process, address, token and log."""

    process: subprocess.Popen[bytes]
    port: int
    token: str
    data_dir: Path
    log_path: Path
    spawned_ns: int

    @property
    def pid(self) -> int:
        """The server's process id (the Python interpreter itself, no shell in between)."""
        return self.process.pid

    @property
    def url(self) -> str:
        """The `/mcp-compat` endpoint."""
        return f"http://127.0.0.1:{self.port}/mcp-compat"

    def log(self) -> str:
        """What the process printed so far."""
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it does not go within 20 s."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def spawn(data_dir: Path, *, log_level: str | None = None) -> ServerProcess:
    """Start the server on a free port; returns at once (not yet listening)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    token = new_token()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("THOUGHTLINE_", "MCP_API_TOKEN"))}
    env.update({"THOUGHTLINE_DATA_DIR": str(data_dir), "MCP_API_TOKEN": token, "PYTHONUNBUFFERED": "1"})
    if log_level is not None:
        env["THOUGHTLINE_LOG_LEVEL"] = log_level
    log_path = data_dir.parent / f"{data_dir.name}-server.log"
    log: IO[bytes]
    with open(log_path, "wb") as log:
        start = time.perf_counter_ns()
        process = subprocess.Popen(
            [sys.executable, "-m", "thoughtline", "serve", "--host", "127.0.0.1", "--port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
    return ServerProcess(process, port, token, data_dir, log_path, start)


@dataclass(frozen=True)
class ColdStart:
    """Spawn → the port accepts connections, and spawn → the first successful tool call."""

    listening_ns: int
    first_call_ns: int


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def wait_first_call(server: ServerProcess) -> ColdStart:
    """Time spawn → port accepting, then spawn → first successful `sequentialthinking` call."""
    deadline = time.monotonic() + START_DEADLINE_S
    listening: int | None = None
    while listening is None and time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"server exited early:\n{server.log()}")
        if _accepts(server.port):
            listening = time.perf_counter_ns() - server.spawned_ns
        else:
            time.sleep(POLL_INTERVAL_S)
    with RpcClient(server.url, server.token, timeout=30.0) as rpc:
        while listening is not None and time.monotonic() < deadline:
            try:
                response = rpc.post(rpc.think_body("cold start", 1))
            except httpx.TransportError:
                time.sleep(POLL_INTERVAL_S)
                continue
            if response.status_code == 200 and not rpc.tool_error(response):
                return ColdStart(listening, time.perf_counter_ns() - server.spawned_ns)
            time.sleep(POLL_INTERVAL_S)
    raise RuntimeError(f"no successful tool call within {START_DEADLINE_S:.0f} s:\n{server.log()}")


def start(data_dir: Path) -> tuple[ServerProcess, ColdStart]:
    """Spawn and wait until a tool call succeeds."""
    server = spawn(data_dir)
    try:
        return server, wait_first_call(server)
    except BaseException:
        server.stop()
        raise


def rss_kib(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (peak RSS) of `pid` in KiB, from /proc/<pid>/status."""
    found: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(rest.split()[0])
    return found


def mapped_libraries(pid: int, needles: tuple[str, ...]) -> list[str]:
    """Mapped files of `pid` whose path contains any of `needles` (e.g. libonnxruntime)."""
    hits: set[str] = set()
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        parts = line.split(maxsplit=5)
        if len(parts) == 6 and any(needle in parts[5] for needle in needles):
            hits.add(parts[5])
    return sorted(hits)


def thread_count(pid: int) -> int:
    """How many threads `pid` runs (writer threads, read workers, …)."""
    return len(os.listdir(f"/proc/{pid}/task"))
