"""Plain JSON-RPC over HTTP to either MCP endpoint: the lightest client that still speaks real MCP.

Both endpoints are stateless, so a `tools/call` needs no `initialize` first: one POST with the
bearer, the protocol header and both Accept types gets one JSON response. On `/mcp` (2026-07-28)
the request also carries its routing headers (`Mcp-Method`, `Mcp-Name`) and the per-request
`_meta` envelope. Used where the `mcp` SDK client would cost more CPU than the server it measures
(the 32-client load) and for cold-start polling.
"""

from __future__ import annotations

import json
import types
from itertools import count
from typing import Any

import httpx

PROTOCOL = "2025-06-18"
MODERN_PROTOCOL = "2026-07-28"
MODERN_PATH = "/mcp"
COMPAT_PATH = "/mcp-compat"
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN_PROTOCOL,
    "io.modelcontextprotocol/clientCapabilities": {},
}
THOUGHT_TEXT = "Benchmark thought: weigh the options, pick one, and write down why. " * 3


def headers(token: str, path: str = COMPAT_PATH) -> dict[str, str]:
    """Request headers of an authenticated MCP POST to `path` (tool-independent ones only)."""
    found = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN_PROTOCOL if path == MODERN_PATH else PROTOCOL,
    }
    if path == MODERN_PATH:
        found["Mcp-Method"] = "tools/call"
    return found


def call_message(request_id: int, name: str, arguments: dict[str, Any], path: str = COMPAT_PATH) -> dict[str, Any]:
    """One `tools/call` JSON-RPC message as `path` expects it."""
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if path == MODERN_PATH:
        params["_meta"] = MODERN_META
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def think_arguments(text: str, number: int, sequence_id: str | None = None) -> dict[str, Any]:
    """Arguments of one `sequentialthinking` step that always asks for another."""
    args: dict[str, Any] = {
        "thought": text,
        "nextThoughtNeeded": True,
        "thoughtNumber": number,
        "totalThoughts": max(number, 3),
    }
    if sequence_id is not None:
        args["sequenceId"] = sequence_id
    return args


class _Bodies:
    """Request ids and bodies shared by the sync and async clients."""

    def __init__(self, path: str = COMPAT_PATH) -> None:
        self._ids = count(1)
        self._path = path

    def think_body(self, text: str, number: int, sequence_id: str | None = None) -> bytes:
        """A `tools/call` of `sequentialthinking`, encoded."""
        arguments = think_arguments(text, number, sequence_id)
        return json.dumps(call_message(next(self._ids), "sequentialthinking", arguments, self._path)).encode()

    def think_headers(self, token: str) -> dict[str, str]:
        """The headers every `think_body` POST carries."""
        found = headers(token, self._path)
        if self._path == MODERN_PATH:
            found["Mcp-Name"] = "sequentialthinking"
        return found

    @staticmethod
    def tool_error(response: httpx.Response) -> str | None:
        """Why a 200 answer is not a successful tool result (None when it is)."""
        data = response.json()
        if "error" in data:
            return f"JSON-RPC error {data['error']}"
        result = data.get("result") or {}
        if result.get("isError"):
            return str(result.get("content"))
        return None

    @staticmethod
    def sequence_id(response: httpx.Response) -> str:
        """The `sequenceId` of a successful `sequentialthinking` answer."""
        return str(response.json()["result"]["structuredContent"]["sequenceId"])


def check(response: httpx.Response) -> httpx.Response:
    """Raise unless `response` carries a successful tool result."""
    if response.status_code != 200:
        raise RuntimeError(f"HTTP {response.status_code}: {response.text[:300]}")
    problem = _Bodies.tool_error(response)
    if problem is not None:
        raise RuntimeError(f"tool call failed: {problem[:300]}")
    return response


class RpcClient(_Bodies):
    """A blocking client: one keep-alive connection; the endpoint is the path of `url`."""

    def __init__(self, url: str, token: str, *, timeout: float = 60.0) -> None:
        super().__init__(httpx.URL(url).path)
        self.url = url
        self._http = httpx.Client(headers=self.think_headers(token), timeout=timeout)

    def post(self, body: bytes) -> httpx.Response:
        """POST one JSON-RPC message."""
        return self._http.post(self.url, content=body)

    def __enter__(self) -> RpcClient:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: types.TracebackType | None
    ) -> None:
        self._http.close()


class AsyncRpcClient(_Bodies):
    """An asyncio client: one keep-alive connection per instance; the endpoint is the path of `url`."""

    def __init__(self, url: str, token: str, *, timeout: float = 60.0) -> None:
        super().__init__(httpx.URL(url).path)
        self.url = url
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        self._http = httpx.AsyncClient(headers=self.think_headers(token), timeout=timeout, limits=limits)

    async def post(self, body: bytes) -> httpx.Response:
        """POST one JSON-RPC message."""
        return await self._http.post(self.url, content=body)

    async def __aenter__(self) -> AsyncRpcClient:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: types.TracebackType | None
    ) -> None:
        await self._http.aclose()
