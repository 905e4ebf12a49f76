"""Stalled connections are closed within seconds and the server keeps answering others (issue 11, F2).

Against a real `thoughtline serve` process with short deadlines, over raw sockets: a silent
connection, a half-sent header and a half-sent body each get 408 and a closed socket; beyond the
connection limit a request gets 503 at once instead of waiting; an oversized header block gets 431.
Each wait is a socket read with a timeout, never a sleep.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest

from tests import raw_http
from tests.support import ChildServer, start_child, stop_child

LIMITS = {
    "THOUGHTLINE_HEADER_TIMEOUT_SECONDS": "1",
    "THOUGHTLINE_BODY_TIMEOUT_SECONDS": "1",
    "THOUGHTLINE_MAX_CONNECTIONS": "8",
}


@pytest.fixture
def limited(tmp_path: Path) -> Iterator[ChildServer]:
    child = start_child(tmp_path / "data", extra_env=LIMITS)
    try:
        yield child
    finally:
        stop_child(child)


def opened(stack: ExitStack, port: int, first_bytes: bytes) -> socket.socket:
    sock = stack.enter_context(socket.create_connection(("127.0.0.1", port), timeout=10))
    if first_bytes:
        sock.sendall(first_bytes)
    return sock


def test_silent_half_header_and_half_body_connections_are_closed_while_others_are_answered(
    limited: ChildServer,
) -> None:
    half_body = (
        b"POST /mcp-compat HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Accept: application/json\r\nAuthorization: Bearer " + limited.token.encode() + b"\r\n"
        b"Content-Length: 1000000\r\n\r\n" + b"[" * 1000
    )
    with ExitStack() as stack:
        stalled = [
            opened(stack, limited.port, b""),
            opened(stack, limited.port, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Half: "),
            opened(stack, limited.port, half_body),
        ]
        assert httpx.get(limited.base_url + "/healthz", timeout=10).status_code == 200
        for sock in stalled:
            answer = raw_http.read_until_closed(sock)
            assert raw_http.status_of(answer) == 408, answer[:200]


def test_a_kept_alive_connection_that_starts_a_request_and_stalls_is_closed(limited: ChildServer) -> None:
    with socket.create_connection(("127.0.0.1", limited.port), timeout=10) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        sock.settimeout(10)
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127")
        assert raw_http.status_of(raw_http.read_until_closed(sock)) == 408


def test_beyond_the_connection_limit_requests_get_503_at_once_and_service_resumes(tmp_path: Path) -> None:
    # A longer header deadline here, so none of the idle connections is closed before the check.
    limited = start_child(tmp_path / "data", extra_env={**LIMITS, "THOUGHTLINE_HEADER_TIMEOUT_SECONDS": "30"})
    try:
        assert_limit_holds(limited)
    finally:
        stop_child(limited)


def assert_limit_holds(limited: ChildServer) -> None:
    with ExitStack() as stack:
        for _ in range(8):
            opened(stack, limited.port, b"")
        busy = raw_http.exchange(limited.port, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        assert raw_http.status_of(busy) == 503
    # The idle sockets are closed (by us); service is back.
    ok = raw_http.exchange(limited.port, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    assert raw_http.status_of(ok) == 200


def test_an_oversized_header_block_gets_431(limited: ChildServer) -> None:
    request = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 70_000 + b"\r\nConnection: close\r\n\r\n"
    answer = raw_http.exchange(limited.port, request)
    assert raw_http.status_of(answer) == 431
    assert b"65536 bytes" in answer
