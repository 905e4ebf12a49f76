"""A minimal HTTP/1.1 keep-alive client on asyncio streams, for load generation only.

httpx spends about a millisecond of CPU per request; on a 2-core machine that shares the CPUs with
the server under test, the load generator then caps the result. This client writes one
pre-formatted request and reads one `Content-Length` response, nothing more (no chunked bodies, no
redirects, no TLS) — enough for the JSON responses of either MCP endpoint from uvicorn.
"""

from __future__ import annotations

import asyncio
import json
import types
from typing import Any

from bench.rpc import MODERN_PATH, call_message, headers

MAX_HEADER_LINES = 100


class WireClient:
    """One TCP connection to 127.0.0.1:`port`; one request in flight at a time."""

    def __init__(self, port: int, path: str, token: str) -> None:
        self._port = port
        lines = [f"POST {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Connection: keep-alive"]
        lines += [f"{name}: {value}" for name, value in headers(token, path).items()]
        self._head = "\r\n".join(lines)
        self._path = path
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._ids = 0

    async def __aenter__(self) -> WireClient:
        self._reader, self._writer = await asyncio.open_connection("127.0.0.1", self._port)
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: types.TracebackType | None
    ) -> None:
        if self._writer is not None:
            self._writer.close()
            await self._writer.wait_closed()

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """One `tools/call`; returns the JSON-RPC `result`, raising on any HTTP or JSON-RPC error."""
        if self._reader is None or self._writer is None:
            raise RuntimeError("open the client with `async with` first")
        self._ids += 1
        body = json.dumps(call_message(self._ids, name, arguments, self._path)).encode()
        routing = f"\r\nMcp-Name: {name}" if self._path == MODERN_PATH else ""
        self._writer.write(f"{self._head}{routing}\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
        status_line = await self._reader.readline()
        status = int(status_line.split()[1])
        length = 0
        for _ in range(MAX_HEADER_LINES):
            line = await self._reader.readline()
            if line in (b"\r\n", b""):
                break
            key, _, value = line.partition(b":")
            if key.strip().lower() == b"content-length":
                length = int(value)
        data = await self._reader.readexactly(length)
        if status != 200:
            raise RuntimeError(f"HTTP {status}: {data[:300]!r}")
        reply = json.loads(data)
        if "error" in reply or reply.get("result", {}).get("isError"):
            raise RuntimeError(f"tool call failed: {str(reply)[:300]}")
        result: dict[str, Any] = reply["result"]
        return result
