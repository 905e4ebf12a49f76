"""Logs carry no thought text and no token, on success and on every kind of failure."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests import raw_http
from tests.support import TOKEN, mcp_client, start_child, stop_child, structured

pytestmark = pytest.mark.anyio

SECRET_TEXT = "zebra-cobalt-7731 private reasoning"


async def test_server_logs_hold_neither_thought_text_nor_tokens(tmp_path: Path) -> None:
    child = start_child(tmp_path / "data", extra_env={"THOUGHTLINE_LOG_LEVEL": "debug"})
    try:
        async with mcp_client(child.base_url) as client:
            args = {"thought": SECRET_TEXT, "nextThoughtNeeded": True, "thoughtNumber": 1, "totalThoughts": 2}
            seq = structured(await client.call_tool("sequentialthinking", args))["sequenceId"]
            await client.call_tool("sequentialthinking", {**args, "sequenceId": seq, "thoughtNumber": "bad"})
            await client.call_tool("sequentialthinking", {**args, "thought": SECRET_TEXT * 3000})
            await client.call_tool("sequentialthinking", {**args, "branchId": SECRET_TEXT, "sequenceId": seq})
            await client.call_tool("get_thought_history", {"sequenceId": seq})
        async with httpx.AsyncClient() as http:
            await http.post(
                child.base_url + "/mcp-compat?token=" + TOKEN,
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                headers={"Authorization": f"Bearer {TOKEN}x", "Accept": "application/json, text/event-stream"},
            )
    finally:
        stop_child(child)
    log = child.log()
    assert "POST /mcp-compat 200" in log  # the access log did run
    assert SECRET_TEXT not in log
    assert "zebra-cobalt" not in log
    assert TOKEN not in log
    assert TOKEN[:20] not in log


FORGED = "2026-12-01 00:00:00,000 INFO thoughtline.oauth.callback: oauth sign-in: granted access"


def test_control_characters_in_the_request_path_cannot_forge_or_corrupt_log_lines(tmp_path: Path) -> None:
    child = start_child(tmp_path / "data")
    try:
        # Below a first segment of ours, so the access log writes the rest as sent (escaped).
        path = "/.well-known/x%0a" + FORGED.replace(" ", "%20") + "%0d%1b[2J%e2%80%a8end"
        answer = raw_http.exchange(
            child.port, f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode()
        )
        assert raw_http.status_of(answer) == 404
    finally:
        stop_child(child)
    log = child.log()
    assert "GET /.well-known/x\\x0a2026-12-01" in log  # the line was written, escaped
    assert not any(line.startswith(FORGED[:30]) for line in log.splitlines())
    assert "\x1b" not in log
    assert "\r" not in log
    assert "\u2028" not in log


def test_the_access_log_writes_thread_routes_as_patterns_never_the_thread_name(tmp_path: Path) -> None:
    name = "Dana Whitfield private case"
    child = start_child(tmp_path / "data")
    try:
        with httpx.Client(base_url=child.base_url, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
            assert http.post("/api/v1/threads", json={"name": name}).status_code == 201
            assert http.get(f"/api/v1/threads/{name}").status_code == 200
            assert http.get(f"/api/v1/threads/{name}/briefing").status_code == 200
            http.get(f"/library/threads/{name}")  # no session: a redirect, logged all the same
    finally:
        stop_child(child)
    log = child.log()
    assert "POST /api/v1/threads 201" in log  # paths without a name stay as they are
    assert "GET /api/v1/threads/{name}... 200" in log
    assert "GET /library/threads/{name}... 303" in log
    assert "Dana" not in log


def test_the_access_log_masks_unmatched_and_mistyped_library_and_api_paths(tmp_path: Path) -> None:
    child = start_child(tmp_path / "data")
    try:
        with httpx.Client(base_url=child.base_url, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
            assert http.get("/library/thread/SecretNameOne").status_code == 404
            assert http.get("/api/v1/threadz/SecretNameTwo").status_code == 404
            assert http.get("/api/v1/sequences/SecretNameThree").status_code == 400
            assert http.post("/api/v1/sequences/SecretNameFour/pause").status_code == 400
            http.get("/library/sequences/SecretNameFive")  # no session: a redirect, logged all the same
            assert http.get("/api/v1/sequences").status_code == 200
            assert http.get("/api/v2/threads/SecretNameSix").status_code == 404
            assert http.get("/SecretNameSeven/x").status_code == 404
            assert http.get("/healthz").status_code == 200
    finally:
        stop_child(child)
    log = child.log()
    assert "Secret" not in log
    assert "GET /library/{?}/{?} 404" in log
    assert "POST /api/v1/sequences/{?}/pause 400" in log
    assert "GET /api/v1/sequences 200" in log  # a route's own words stay as they are
    assert "GET /api/{?} 404" in log  # another API version: its rest could name anything
    assert "GET /{?} 404" in log  # a path of no route of ours
    assert "GET /healthz 200" in log
