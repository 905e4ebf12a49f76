"""The hot path of `/mcp-compat`: a plain, single `tools/call` POST answered without a session.

In stateless mode the SDK builds a transport, a task group, memory streams and a dispatcher for
every request; measured here that is ~0.7 ms of CPU per call, more than the tool and its SQLite
commit together, and it capped concurrent writes well below the 1,000/s target. A request that is
exactly one well-formed `tools/call` with a JSON-accepting client and a 2025-era (or absent)
protocol header carries nothing that needs a session, so it goes straight to the same
`ToolRegistry` the SDK path calls and is answered with the same JSON. Anything else — initialize,
lists, resources, notifications, batches, unknown tools, odd headers, malformed JSON — is replayed
untouched to the SDK, which owns every error response. `tests/test_fastpath.py` checks the two
paths give identical answers.

Two bodies Python's `json` accepts but the SDK's parser refuses also go to the SDK, so they get its
400 before any tool runs (issue 11, F5): nesting deep enough to raise RecursionError, and lone
UTF-16 surrogate escapes (`"\\ud800"`), which no UTF-8 answer could echo back after the commit.
"""

from __future__ import annotations

import json
import re
from typing import Any

import mcp_types as types
from mcp.server.streamable_http import check_accept_headers
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from thoughtline.mcp.tools import ToolRegistry

_ALLOWED_KEYS = frozenset({"jsonrpc", "id", "method", "params"})
_ALLOWED_PARAMS = frozenset({"name", "arguments", "_meta"})
# A high surrogate escape not followed by a low one, or a low one not preceded by a high one. An
# escaped backslash before "u" can match too; that only sends a valid request down the SDK path.
_LONE_SURROGATE = re.compile(
    rb"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F])|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F]"
)


def _eligible_call(message: Any, registry: ToolRegistry) -> tuple[str | int, str, dict[str, Any] | None] | None:
    """`(id, tool name, arguments)` when `message` is a plain tools/call this path may answer."""
    if not isinstance(message, dict) or not set(message) <= _ALLOWED_KEYS:
        return None
    if message.get("jsonrpc") != "2.0" or message.get("method") != "tools/call":
        return None
    request_id = message.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return None
    params = message.get("params")
    if not isinstance(params, dict) or not set(params) <= _ALLOWED_PARAMS:
        return None
    name, arguments, meta = params.get("name"), params.get("arguments"), params.get("_meta")
    if not isinstance(name, str) or not registry.has(name):
        return None
    if arguments is not None and not isinstance(arguments, dict):
        return None
    if meta is not None and not isinstance(meta, dict):
        return None
    return request_id, name, arguments


def wire_result(result: types.CallToolResult) -> dict[str, Any]:
    """A CallToolResult as the 2025-era wire carries it (no 2026 `resultType`)."""
    body: dict[str, Any] = {
        "content": [block.model_dump(by_alias=True, mode="json", exclude_none=True) for block in result.content],
        "isError": result.is_error,
    }
    if result.structured_content is not None:
        body["structuredContent"] = result.structured_content
    return body


class DirectToolCalls:
    """ASGI wrapper for the compat endpoint: answers eligible tools/call POSTs, replays the rest."""

    def __init__(self, app: ASGIApp, registry: ToolRegistry, max_body_bytes: int) -> None:
        self._app = app
        self._registry = registry
        self._max_body = max_body_bytes
        self.answered = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST" or not self._headers_fit(scope):
            await self._app(scope, receive, send)
            return
        body, more, first = b"", True, True
        while more and len(body) <= self._max_body:
            message: Message = await receive()
            if message["type"] != "http.request":
                break
            body += message.get("body", b"")
            more = bool(message.get("more_body"))
            first = False
        call = None
        if not more and not first and not _LONE_SURROGATE.search(body):
            try:
                call = _eligible_call(json.loads(body), self._registry)
            except (ValueError, RecursionError):
                call = None
        if call is None:
            await self._app(scope, _replay(body, more, receive), send)
            return
        request_id, name, arguments = call
        result = await self._registry.call(name, arguments)
        self.answered += 1
        payload = _encode({"jsonrpc": "2.0", "id": request_id, "result": wire_result(result)})
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": payload})

    @staticmethod
    def _headers_fit(scope: Scope) -> bool:
        request = Request(scope)
        headers = request.headers
        if headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
            return False
        if "mcp-session-id" in headers:
            return False
        version = headers.get("mcp-protocol-version")
        if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            return False
        has_json, _ = check_accept_headers(request)
        return has_json


def _encode(message: dict[str, Any]) -> bytes:
    """The answer as UTF-8 JSON. The tool has committed by now, so this must not fail: text that
    UTF-8 cannot carry falls back to ASCII escapes (still valid JSON) instead of a 500."""
    try:
        return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
    except UnicodeEncodeError:
        return json.dumps(message, separators=(",", ":")).encode()


def _replay(body: bytes, more: bool, receive: Receive) -> Receive:
    """A `receive` that yields the already-read body first, then defers to the real one."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": more}
        return await receive()

    return replayed
