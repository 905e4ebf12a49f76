"""Raw HTTP/1.1 over a socket, for requests no client library will send (duplicate headers, stalls)."""

from __future__ import annotations

import socket

READ_TIMEOUT = 10.0


def read_until_closed(sock: socket.socket, timeout: float = READ_TIMEOUT) -> bytes:
    """Everything the server sends until it closes the connection (or `timeout` passes between reads)."""
    sock.settimeout(timeout)
    chunks: list[bytes] = []
    while True:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            raise AssertionError(f"the server kept the connection open for {timeout:g}s") from None
        except ConnectionResetError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def exchange(port: int, request: bytes, timeout: float = READ_TIMEOUT) -> bytes:
    """Send `request` (it should say `Connection: close`) and return the whole answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(request)
        return read_until_closed(sock, timeout)


def status_of(answer: bytes) -> int:
    """The status code of a raw HTTP answer."""
    return int(answer.split(b" ", 2)[1])
