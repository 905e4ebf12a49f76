"""Protocol-era gate for `/mcp`: it serves revision 2026-07-28 only.

A 2025-era request (an `initialize` handshake, or a handshake-era `MCP-Protocol-Version` header,
or none) gets JSON-RPC error -32022 naming the supported versions and pointing at `/mcp-compat`,
instead of being half-served by the legacy transport. The gate sits behind the body gate
(web/jsonbody.py), so a body that is not acceptable JSON is a -32700 whatever the header says.
"""

from __future__ import annotations

import json
from typing import Any

from mcp_types import UNSUPPORTED_PROTOCOL_VERSION
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Receive, Scope, Send

from thoughtline.mcp.fastpath import MESSAGE_KEY


def _request_id(message: Any) -> Any:
    """The JSON-RPC id of the decoded message, when it is one an error answer may echo."""
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
        payload = {
            "jsonrpc": "2.0",
            # The body gate in front (web/jsonbody.py) has read and decoded the body already.
            "id": _request_id(scope.get(MESSAGE_KEY)),
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
