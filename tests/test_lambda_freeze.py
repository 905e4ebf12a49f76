"""A frozen Lambda container never holds a store's lock (SPEC §8, issue 10).

Lambda freezes every thread of a container once the handler returns. The probe runs the real
handler in a child process serving real Function URL events, stops it with SIGSTOP the moment
each response is out (as Lambda does), and from this process tries `BEGIN EXCLUSIVE` on the
store, as another container on EFS would. Any lock the frozen child still holds (SHARED,
RESERVED, PENDING) makes that fail at once with busy timeout 0.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import apsw
import pytest

from tests.support import TOKEN
from tests.test_lambda import mcp_post, tools_call
from thoughtline.identity import OWNER_KEY
from thoughtline.storage.router import store_path

ROOT = Path(__file__).resolve().parents[1]
ROUNDS = 60
SEARCH_EVERY = 3  # searches create the embedder; writes after that are what used to schedule work


@dataclass
class FrozenChild:
    """The handler in a child process that the probe freezes after each response."""

    process: subprocess.Popen[bytes]
    store: Path

    def invoke(self, event: dict[str, Any]) -> dict[str, Any]:
        """Send one event; return its response the moment it is written, then freeze the child."""
        stdin, stdout = self._pipes()
        stdin.write(json.dumps(event).encode() + b"\n")
        stdin.flush()
        ready, _, _ = select.select([stdout], [], [], 120)
        assert ready, "the handler did not answer within 120 s"
        line = stdout.readline()
        os.kill(self.process.pid, signal.SIGSTOP)  # what Lambda does once the response is out
        assert line, "the handler process exited"
        response: dict[str, Any] = json.loads(line)
        return response

    def thaw(self) -> None:
        """Let the child run again (the next invocation)."""
        os.kill(self.process.pid, signal.SIGCONT)

    def _pipes(self) -> tuple[IO[bytes], IO[bytes]]:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        return self.process.stdin, self.process.stdout


def lock_held_by_others(path: Path) -> str | None:
    """None if another process could take the store's write lock right now, else the error."""
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READWRITE)
    try:
        conn.set_busy_timeout(0)
        try:
            conn.execute("BEGIN EXCLUSIVE")
        except apsw.BusyError as exc:
            return str(exc)
        conn.execute("ROLLBACK")
        return None
    finally:
        conn.close()


@pytest.fixture
def frozen_child(tmp_path: Path) -> Iterator[FrozenChild]:
    data = tmp_path / "mnt-thoughtline"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("THOUGHTLINE_", "MCP_API_TOKEN", "AWS_"))}
    env.update(
        {
            "MCP_API_TOKEN": TOKEN,
            "THOUGHTLINE_DATA_DIR": str(data),
            "THOUGHTLINE_JOURNAL": "truncate",
            "AWS_LAMBDA_FUNCTION_NAME": "thoughtline",
            "PYTHONUNBUFFERED": "1",
        }
    )
    with open(tmp_path / "child.log", "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.lambda_child"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            cwd=ROOT,
            env=env,
        )
    child = FrozenChild(process, store_path(data, OWNER_KEY))
    try:
        yield child
    finally:
        os.kill(process.pid, signal.SIGCONT)
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:  # pragma: no cover - only a hung child gets here
            process.kill()
            process.wait()
        finally:
            assert process.stdout is not None
            process.stdout.close()


def probe(child: FrozenChild, rounds: int) -> list[str]:
    """Write (and now and then search) through the handler; the lock errors seen while frozen."""
    held: list[str] = []
    sequence: str | None = None
    for number in range(1, rounds + 1):
        if number % SEARCH_EVERY == 0:
            body = tools_call("search_thoughts", {"query": "which mount failed"}, request_id=number)
        else:
            args: dict[str, Any] = {
                "thought": f"Step {number}: the EFS mount target in subnet {number} answered late.",
                "nextThoughtNeeded": True,
                "thoughtNumber": number,
                "totalThoughts": rounds,
            }
            if sequence is not None:
                args["sequenceId"] = sequence
            body = tools_call("sequentialthinking", args, request_id=number)
        response = child.invoke(mcp_post(body))
        assert response["statusCode"] == 200, response
        result = json.loads(response["body"])["result"]
        assert result.get("isError") is not True, result
        sequence = sequence or result["structuredContent"].get("sequenceId")
        error = lock_held_by_others(child.store)
        if error is not None:
            held.append(f"round {number}: {error}")
        child.thaw()
    return held


@pytest.mark.slow
def test_a_frozen_container_holds_no_store_lock_after_any_response(frozen_child: FrozenChild) -> None:
    assert probe(frozen_child, ROUNDS) == []
