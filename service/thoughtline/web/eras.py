"""Protocol-version gates for the two MCP endpoints.

`/mcp` serves revision 2026-07-28 only (`ModernOnly`). A 2025-era request (an `initialize`
handshake, or a handshake-era `MCP-Protocol-Version` header, or none) gets JSON-RPC error -32022
naming the supported versions and pointing at `/mcp-compat`, instead of being half-served by the
legacy transport.

`/mcp-compat` serves every revision the SDK knows (`KnownVersionsOnly`). The SDK hands a header
naming any other version to its 2026 path, whose first check is the 2026 `_meta` envelope, so a
2025 client sending `1999-01-01` was told about envelope keys it has never heard of. This gate
answers first, with the same -32022 (and `data.supported`) the SDK gives an unsupported version
inside a valid envelope.

Both gates sit behind the body gate (web/jsonbody.py), so a body that is not acceptable JSON is a
-32700 whatever the header says. Non-POST methods pass untouched (GET is a 405, DELETE a no-op).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from mcp_types import UNSUPPORTED_PROTOCOL_VERSION
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Receive, Scope, Send

from thoughtline.mcp.fastpath import MESSAGE_KEY


def _request_id(message: Any) -> Any:
    """The JSON-RPC id of the decoded message, when it is one an error answer may echo."""
    if isinstance(message, dict):
        rid = message.get("id")
        return rid if isinstance(rid, str | int) and not isinstance(rid, bool) else None
    return None


def _initialize_version(message: Any) -> str | None:
    """The protocolVersion an `initialize` request's params name, when it names one as a string."""
    if isinstance(message, dict) and message.get("method") == "initialize":
        params = message.get("params")
        if isinstance(params, dict) and isinstance(params.get("protocolVersion"), str):
            return str(params["protocolVersion"])
    return None


def _header_version(scope: Scope) -> str | None:
    return next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"mcp-protocol-version"), None)


async def _refuse(scope: Scope, send: Send, version: str | None, supported: Sequence[str], message: str) -> None:
    """HTTP 400 with JSON-RPC -32022 and `data: {supported, requested}`, as the SDK words its own."""
    payload = {
        "jsonrpc": "2.0",
        # The body gate in front (web/jsonbody.py) has read and decoded the body already.
        "id": _request_id(scope.get(MESSAGE_KEY)),
        "error": {
            "code": UNSUPPORTED_PROTOCOL_VERSION,
            "message": message,
            "data": {"supported": list(supported), "requested": version},
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


class ModernOnly:
    """Pass 2026-07-28 requests (and non-POST methods) to `app`; answer other POSTs with -32022."""

    def __init__(self, app: ASGIApp, compat_path: str = "/mcp-compat") -> None:
        self._app = app
        self._compat = compat_path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        version = _header_version(scope)
        if version in MODERN_PROTOCOL_VERSIONS or scope.get("method") != "POST":
            await self._app(scope, receive, send)
            return
        if version is not None:
            said = f"{version[:40]!r} (MCP-Protocol-Version header)"
        else:
            # A 2025 client's first request is `initialize` with the version in its params and no
            # header yet: report what it asked for, not that it sent nothing.
            version = _initialize_version(scope.get(MESSAGE_KEY))
            said = f"{version[:40]!r} (initialize's protocolVersion)" if version else "(no MCP-Protocol-Version header)"
        message = (
            f"Unsupported protocol version {said}: this endpoint serves "
            f"{', '.join(MODERN_PROTOCOL_VERSIONS)} only. 2025-era clients (initialize handshake) "
            f"should connect to {self._compat} instead."
        )
        await _refuse(scope, send, version, MODERN_PROTOCOL_VERSIONS, message)


class KnownVersionsOnly:
    """Pass requests without an `MCP-Protocol-Version` header or with one the SDK serves (and
    non-POST methods) to `app`; answer a POST naming any other version with -32022."""

    SUPPORTED = (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS)

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self._app(scope, receive, send)
            return
        version = _header_version(scope)
        if version is None or version in self.SUPPORTED:
            await self._app(scope, receive, send)
            return
        message = (
            f"Unsupported protocol version {version[:40]!r} in the MCP-Protocol-Version header: this endpoint "
            f"serves {', '.join(self.SUPPORTED)}. Send one of those (the version the initialize handshake "
            "agreed), or leave the header out."
        )
        await _refuse(scope, send, version, self.SUPPORTED, message)
