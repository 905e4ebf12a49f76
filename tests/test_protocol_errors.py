"""Protocol-level mistakes get an error that names the problem and the fix (findings §12).

An unknown `MCP-Protocol-Version` on `/mcp-compat`, a JSON-RPC batch, and tools/call `arguments`
that are not an object each used to get a misleading or empty answer from the SDK. Every request
here goes over real HTTP to the real app, with the direct tools/call path on and off, and must
leave the store untouched.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import httpx
import pytest

from tests.support import TOKEN, ThreadServer, serve_in_thread
from thoughtline.config import Settings
from thoughtline.web.app import create_app

HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "Authorization": f"Bearer {TOKEN}",
}
ARGS = {"thought": "x", "thoughtNumber": 1, "totalThoughts": 1, "nextThoughtNeeded": False}
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
SUPPORTED = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"]


@pytest.fixture(params=[True, False], ids=["direct", "sdk-only"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[ThreadServer, Path]]:
    """The app with its direct tools/call path on or off, and its data dir."""
    data_dir = tmp_path / "data"
    app = create_app(Settings(data_dir=data_dir, api_token=TOKEN), direct_tool_calls=request.param)
    with serve_in_thread(app) as running:
        yield running, data_dir


def stored_thoughts(data_dir: Path) -> int:
    total = 0
    for path in (data_dir / "stores").glob("*.sqlite3"):
        conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            total += int(conn.execute("SELECT count(*) FROM thoughts").fetchone()[0])  # type: ignore[index]
        finally:
            conn.close()
    return total


def tools_call(path: str, arguments: Any, request_id: int = 3) -> tuple[dict[str, Any], dict[str, str]]:
    """A tools/call of sequentialthinking on `path`, in the era that path serves, with its headers."""
    params: dict[str, Any] = {"name": "sequentialthinking", "arguments": arguments}
    headers = dict(HEADERS)
    if path == "/mcp":
        params["_meta"] = MODERN_META
        headers |= {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "sequentialthinking"}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}, headers


def post(server: ThreadServer, path: str, body: Any, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    response = httpx.post(server.base_url + path, content=json.dumps(body).encode(), headers=headers)
    return response.status_code, response.json()


@pytest.mark.parametrize("version", ["1999-01-01", "garbage", "2026-01-01"])
@pytest.mark.parametrize("method", ["tools/list", "tools/call"])
def test_an_unknown_protocol_version_on_compat_is_named_unsupported_with_the_supported_list(
    served: tuple[ThreadServer, Path], version: str, method: str
) -> None:
    server, data_dir = served
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": 9, "method": method}
    if method == "tools/call":
        body["params"] = {"name": "sequentialthinking", "arguments": ARGS}
    status, reply = post(server, "/mcp-compat", body, {**HEADERS, "MCP-Protocol-Version": version})
    assert status == 400
    assert reply["id"] == 9
    error = reply["error"]
    assert error["code"] == -32022
    assert f"Unsupported protocol version '{version}'" in error["message"]
    assert "2025-06-18" in error["message"]
    assert "_meta" not in error["message"]
    assert error["data"] == {"supported": SUPPORTED, "requested": version}
    assert stored_thoughts(data_dir) == 0


@pytest.mark.parametrize("version", [None, "2025-03-26", "2025-06-18", "2025-11-25"])
def test_every_handshake_version_and_none_still_reach_compat(
    served: tuple[ThreadServer, Path], version: str | None
) -> None:
    server, data_dir = served
    headers = HEADERS if version is None else {**HEADERS, "MCP-Protocol-Version": version}
    body, _ = tools_call("/mcp-compat", ARGS)
    status, reply = post(server, "/mcp-compat", body, headers)
    assert status == 200
    assert reply["result"]["isError"] is False
    assert stored_thoughts(data_dir) == 1


@pytest.mark.parametrize("path", ["/mcp-compat", "/mcp"])
@pytest.mark.parametrize("batch", ["one call", "two calls", "empty"])
def test_a_json_rpc_batch_is_an_invalid_request_saying_to_send_one_request_per_post(
    served: tuple[ThreadServer, Path], path: str, batch: str
) -> None:
    server, data_dir = served
    call, headers = tools_call(path, ARGS)
    body = {"one call": [call], "two calls": [call, {**call, "id": 4}], "empty": []}[batch]
    status, reply = post(server, path, body, headers)
    assert status == 400
    assert reply["id"] is None
    error = reply["error"]
    assert error["code"] == -32600
    assert "batches are not supported" in error["message"]
    assert "one request per POST" in error["message"]
    assert "pydantic" not in json.dumps(reply)
    assert stored_thoughts(data_dir) == 0


@pytest.mark.parametrize("path", ["/mcp-compat", "/mcp"])
@pytest.mark.parametrize(("arguments", "kind"), [([1, 2], "an array"), ("x", "a string"), (5, "a number")])
def test_arguments_that_are_not_an_object_get_an_invalid_params_naming_the_fix(
    served: tuple[ThreadServer, Path], path: str, arguments: Any, kind: str
) -> None:
    server, data_dir = served
    body, headers = tools_call(path, arguments)
    status, reply = post(server, path, body, headers)
    assert status < 500
    assert reply["id"] == 3
    error = reply["error"]
    assert error["code"] == -32602
    assert f"params.arguments is {kind}" in error["message"]
    assert "arguments must be a JSON object of the tool's arguments" in error["message"]
    assert error["data"] == {"field": "params.arguments"}
    assert stored_thoughts(data_dir) == 0


def test_other_invalid_params_are_still_the_sdks_own_answer(served: tuple[ThreadServer, Path]) -> None:
    server, data_dir = served
    body, headers = tools_call("/mcp-compat", ARGS)
    body["params"]["name"] = 5  # refused by the SDK; the rewording is for non-object `arguments` only
    status, reply = post(server, "/mcp-compat", body, headers)
    assert status < 500
    assert (reply["error"]["code"], reply["error"]["message"]) == (-32602, "Invalid request parameters")
    assert stored_thoughts(data_dir) == 0


def test_a_2026_request_on_compat_still_reaches_the_sdks_2026_path(served: tuple[ThreadServer, Path]) -> None:
    server, data_dir = served
    body, headers = tools_call("/mcp", ARGS)  # the 2026-07-28 envelope and routing headers
    status, reply = post(server, "/mcp-compat", body, headers)
    assert status == 200
    assert reply["result"]["isError"] is False
    assert reply["result"]["resultType"] == "complete"
    assert stored_thoughts(data_dir) == 1
