"""The hot path of both MCP endpoints: a plain, single `tools/call` answered without SDK machinery.

Per request, the SDK builds a transport, a task group, memory streams and a dispatcher (2025 era,
stateless), or a dispatch context, a runner, validation and serialisation sieves and an
OpenTelemetry span (2026-07-28). Measured here that was ~0.7 ms of CPU per call on `/mcp-compat`
and ~2.5 ms on `/mcp`: more than the tool and its SQLite commit together. A request that is
exactly one well-formed `tools/call` of a registered tool, from a JSON-accepting client, carries
nothing that needs that machinery, so it goes straight to the same `ToolRegistry` the SDK calls
and is answered with the same JSON. Anything else (initialize, lists, resources, notifications,
batches, unknown tools, odd headers or envelopes) goes untouched to the SDK, which owns every
error response. `tests/test_fastpath.py` checks both paths give identical answers on each route.

The body was read and decoded once, by `web/jsonbody.py` (one parser, one set of limits); the
decoded message arrives in the ASGI scope under `MESSAGE_KEY` and the body itself is still there
for the SDK to read from `receive`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pydantic_core
from mcp.shared.inbound import (
    InboundModernRoute,
    classify_inbound_request,
    x_mcp_header_map,
)
from mcp_types import methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError
from starlette.types import ASGIApp, Receive, Scope, Send

from thoughtline.mcp.tools import ToolRegistry

MESSAGE_KEY = "thoughtline.message"
"""Scope key of the decoded JSON-RPC message (set by web/jsonbody.py's gate)."""

_ALLOWED_KEYS = frozenset({"jsonrpc", "id", "method", "params"})
_ALLOWED_PARAMS = frozenset({"name", "arguments", "_meta"})
SERVER_INFO_META_KEY = "io.modelcontextprotocol/serverInfo"
_ROUTING_HEADERS = (b"mcp-protocol-version", b"mcp-method", b"mcp-name")


_Call = tuple[str | int, str, dict[str, Any] | None]
"""An eligible call: (JSON-RPC id, tool name, arguments)."""


def _eligible_call(message: Any, registry: ToolRegistry) -> _Call | None:
    """`(id, tool name, arguments)` when `message` is a plain tools/call this path may answer."""
    if not isinstance(message, dict) or not message.keys() <= _ALLOWED_KEYS:
        return None
    if message.get("jsonrpc") != "2.0" or message.get("method") != "tools/call":
        return None
    request_id = message.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return None
    params = message.get("params")
    if not isinstance(params, dict) or not params.keys() <= _ALLOWED_PARAMS:
        return None
    name, arguments, meta = params.get("name"), params.get("arguments"), params.get("_meta")
    if not isinstance(name, str) or not registry.has(name):
        return None
    if arguments is not None and not isinstance(arguments, dict):
        return None
    if meta is not None and not isinstance(meta, dict):
        return None
    return request_id, name, arguments


def _headers(scope: Scope) -> dict[bytes, bytes] | None:
    """The request's headers by lower-case name, or None when any name repeats: first-copy and
    last-copy readers would disagree, so the SDK judges those (its duplicate routing-header rule)."""
    found: dict[bytes, bytes] = {}
    for key, value in scope.get("headers", ()):
        if key in found:
            return None
        found[key] = value
    return found


def _accepts_json(headers: Mapping[bytes, bytes]) -> bool:
    """Whether Accept admits application/json, read as the SDK's `check_accept_headers` reads it."""
    for part in headers.get(b"accept", b"").decode("latin-1").split(","):
        media = part.split(";")[0].strip().lower()
        if media in ("application/json", "application/*", "*/*"):
            return True
    return False


def _is_json_post(scope: Scope, headers: Mapping[bytes, bytes]) -> bool:
    if scope["type"] != "http" or scope.get("method") != "POST":
        return False
    content_type = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
    return content_type == b"application/json" and _accepts_json(headers)


async def _send_json(send: Send, message: dict[str, Any]) -> None:
    payload = _encode(message)
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": payload})


def _encode(message: dict[str, Any]) -> bytes:
    """The answer as UTF-8 JSON (pydantic-core's encoder: the same bytes as `json.dumps`, 3x faster).
    The tool has committed by now, so this must not fail: text that UTF-8 cannot carry falls back
    to ASCII escapes (still valid JSON) instead of a 500."""
    try:
        return pydantic_core.to_json(message)
    except pydantic_core.PydanticSerializationError:
        return json.dumps(message, separators=(",", ":")).encode()


class _DirectCalls:
    """The part both endpoints share: answer an eligible tools/call POST, pass anything else to the SDK.

    Each era says which requests are eligible (`_eligible`, given the headers read once) and what
    its result carries besides the 2025 body (`_finish`).
    """

    def __init__(self, app: ASGIApp, registry: ToolRegistry) -> None:
        self._app = app
        self._registry = registry
        self.answered = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = _headers(scope)
        call = None
        if headers is not None and _is_json_post(scope, headers):
            call = self._eligible(scope, headers)
        if call is None:
            await self._app(scope, receive, send)
            return
        request_id, name, arguments = call
        body = self._finish(await self._registry.call_wire(name, arguments))
        self.answered += 1
        await _send_json(send, {"jsonrpc": "2.0", "id": request_id, "result": body})

    def _eligible(self, scope: Scope, headers: Mapping[bytes, bytes]) -> _Call | None:
        raise NotImplementedError

    def _finish(self, body: dict[str, Any]) -> dict[str, Any]:
        return body


class DirectToolCalls(_DirectCalls):
    """`/mcp-compat` (2025 era): a sessionless tools/call under a handshake-era version (or none)."""

    def _eligible(self, scope: Scope, headers: Mapping[bytes, bytes]) -> _Call | None:
        if b"mcp-session-id" in headers:
            return None
        version = headers.get(b"mcp-protocol-version")
        if version is not None and version.decode("latin-1") not in HANDSHAKE_PROTOCOL_VERSIONS:
            return None
        return _eligible_call(scope.get(MESSAGE_KEY), self._registry)


class ModernToolCalls(_DirectCalls):
    """`/mcp` (2026-07-28): a tools/call whose envelope and headers pass the SDK's own checks.

    The checks are the SDK's functions, called as its modern handler calls them: the routing-header
    ladder (`classify_inbound_request`) and the surface validation of the params. `Mcp-Param-*`
    header validation only applies to tools whose schema declares `x-mcp-header`; a call of such a
    tool is left to the SDK.
    """

    def __init__(self, app: ASGIApp, registry: ToolRegistry, server_info: dict[str, Any]) -> None:
        super().__init__(app, registry)
        self._meta = {SERVER_INFO_META_KEY: server_info}  # encoded at once, never mutated
        self._header_bound = frozenset(
            tool.name for tool in registry.tools if x_mcp_header_map(tool.input_schema or {})
        )

    def _eligible(self, scope: Scope, headers: Mapping[bytes, bytes]) -> _Call | None:
        version = headers.get(b"mcp-protocol-version", b"").decode("latin-1")
        if version not in MODERN_PROTOCOL_VERSIONS:
            return None
        message = scope.get(MESSAGE_KEY)
        call = _eligible_call(message, self._registry)
        if call is None or call[1] in self._header_bound or not isinstance(message, dict):
            return None
        # The ladder reads only the three routing headers; an absent one stays absent.
        routing = {k.decode(): headers[k].decode("latin-1") for k in _ROUTING_HEADERS if k in headers}
        if not isinstance(classify_inbound_request(message, headers=routing), InboundModernRoute):
            return None
        try:
            methods.validate_client_request("tools/call", version, message["params"])
        except (ValidationError, KeyError):
            return None
        return call

    def _finish(self, body: dict[str, Any]) -> dict[str, Any]:
        body["resultType"] = "complete"
        body["_meta"] = self._meta
        return body
