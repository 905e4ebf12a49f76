"""Connection limits for `thoughtline serve`: uvicorn's options plus the deadlines it lacks.

uvicorn 0.54 closes a connection only when it is idle *between* requests (`timeout_keep_alive`).
Nothing bounds a connection that opens and stays silent, sends half a header, or sends half a body:
each was still held open after minutes (issue 11, F2), and enough of them exhaust descriptors and
memory for everyone. uvicorn takes the HTTP protocol class as a setting, so we extend its
httptools protocol (a declared dependency) with two deadlines and a header size cap:

- headers: from the connection opening (or the first byte of the next request on a kept-alive
  connection) until the header block is complete, at most `header_timeout` seconds;
- body: from the end of the headers until the last body byte, at most `body_timeout` seconds;
- the request line and headers together may hold at most `max_header_bytes` bytes (431).

A missed deadline answers 408 if nothing was answered yet, tells a waiting application the client
went away (it sees `http.disconnect`), and closes the connection. Once a request has arrived in
full, no deadline applies to the application's own work.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

MAX_HEADER_BYTES = 64 * 1024


@dataclass(frozen=True)
class ConnectionLimits:
    """What `thoughtline serve` passes to uvicorn; the numbers come from `Settings`."""

    max_connections: int
    header_timeout: float
    body_timeout: float
    keep_alive_seconds: int = 5
    max_header_bytes: int = MAX_HEADER_BYTES

    def uvicorn_options(self) -> dict[str, Any]:
        """Keyword arguments for `uvicorn.run` / `uvicorn.Config`."""
        return {
            "http": deadline_protocol(self),
            "limit_concurrency": self.max_connections,
            "timeout_keep_alive": self.keep_alive_seconds,
        }


def _status(code: int, reason: str, message: str) -> bytes:
    body = f'{{"error":"{reason}","message":"{message}"}}'.encode()
    head = (
        f"HTTP/1.1 {code} {reason.replace('_', ' ').title()}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode() + body


TIMED_OUT = _status(
    408, "request_timeout", "The request did not arrive in time; send its headers and body without pausing."
)


class _HeadersTooLarge(Exception):
    """Raised inside the parser callback to stop parsing; turned into a 431 below."""


class DeadlineProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with header and body deadlines and a header size cap."""

    limits: ConnectionLimits = ConnectionLimits(max_connections=512, header_timeout=10.0, body_timeout=30.0)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._awaiting_headers = True
        self._header_bytes = 0
        self._oversized = False

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(seconds, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        cycle = self.cycle
        if self._awaiting_headers or not cycle.response_started:
            self.transport.write(TIMED_OUT)
        if not self._awaiting_headers and not cycle.response_complete:
            # As connection_lost does: the application's receive() returns http.disconnect now.
            cycle.disconnected = True
            cycle.message_event.set()
        self.transport.close()

    def _count(self, size: int) -> None:
        self._header_bytes += size
        if self._header_bytes > self.limits.max_header_bytes:
            self._oversized = True
            raise _HeadersTooLarge

    # --- uvicorn / httptools callbacks ----------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._awaiting_headers = True
        self._arm(self.limits.header_timeout)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._header_bytes = 0
        self._awaiting_headers = True
        self._arm(self.limits.header_timeout)

    def on_url(self, url: bytes) -> None:
        self._count(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count(len(name) + len(value) + 4)
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._awaiting_headers = False
        self._arm(self.limits.body_timeout)
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._disarm()
        super().on_message_complete()

    def send_400_response(self, msg: str) -> None:
        """uvicorn answers every parser error with 400; an oversized header block gets its 431."""
        self._disarm()
        if not self._oversized:
            super().send_400_response(msg)
            return
        limit = self.limits.max_header_bytes
        self.transport.write(
            _status(431, "request_header_fields_too_large", f"The request line and headers exceed {limit} bytes.")
        )
        self.transport.close()


def deadline_protocol(limits: ConnectionLimits) -> type[DeadlineProtocol]:
    """A protocol class bound to `limits` (uvicorn instantiates the class itself, per connection)."""
    return type("BoundDeadlineProtocol", (DeadlineProtocol,), {"limits": limits})
