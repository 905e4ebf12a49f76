"""Protocol-era gate for `/mcp`: it serves revision 2026-07-28 only.

A 2025-era request (an `initialize` handshake, or a handshake-era `MCP-Protocol-Version` header,
or none) gets JSON-RPC error -32022 naming the supported versions and pointing at `/mcp-compat`,
instead of being half-served by the legacy transport.
"""

from __future__ import annotations

import json
from typing import Any

from mcp_types import UNSUPPORTED_PROTOCOL_VERSION
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Message, Receive, Scope, Send

_MAX_PEEK = 1_048_576


def _request_id(body: bytes) -> Any:
    try:
        message = json.loads(body)
    except ValueError:
        return None
    if isinstance(message, dict):
        rid = message.get("id")
        return rid if isinstance(rid, str | int) and not isinstance(rid, bool) else None
    return None


class ModernOnly:
    """Pass 2026-07-28 requests (and non-POST methods) to `app`; answer other POSTs with -32022."""

    def __init__(self, app: ASGIApp, compat_path: str = "/mcp-compat") -> None:
        self._app = app
        self._compat = compat_path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        version = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"mcp-protocol-version"), None)
        if version in MODERN_PROTOCOL_VERSIONS or scope.get("method") != "POST":
            await self._app(scope, receive, send)
            return
        body = b""
        more = True
        while more:
            message: Message = await receive()
            body += message.get("body", b"")
            # Only the JSON-RPC id is wanted from it; don't buffer an oversized body.
            more = bool(message.get("more_body")) and len(body) < _MAX_PEEK
        payload = {
            "jsonrpc": "2.0",
            "id": _request_id(body),
            "error": {
                "code": UNSUPPORTED_PROTOCOL_VERSION,
                "message": (
                    f"Unsupported protocol version {version or '(none sent)'}: this endpoint serves "
                    f"{', '.join(MODERN_PROTOCOL_VERSIONS)} only. 2025-era clients (initialize handshake) "
                    f"should connect to {self._compat} instead."
                ),
                "data": {"supported": list(MODERN_PROTOCOL_VERSIONS), "requested": version},
            },
        }
        data = json.dumps(payload).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 400,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(data)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": data})
