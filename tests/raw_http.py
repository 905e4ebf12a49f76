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


def post(port: int, path: str, body: bytes, headers: dict[str, str], *, chunked: bool = False) -> tuple[int, bytes]:
    """POST `body` to `path` exactly as given (no re-encoding); returns the status and the response body.

    `chunked` sends the body in chunked transfer encoding, without a Content-Length.
    """
    lines = [f"POST {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    if chunked:
        lines.append("Transfer-Encoding: chunked")
        payload = f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n" if body else b"0\r\n\r\n"
    else:
        lines.append(f"Content-Length: {len(body)}")
        payload = body
    answer = exchange(port, ("\r\n".join(lines) + "\r\n\r\n").encode() + payload)
    head, _, rest = answer.partition(b"\r\n\r\n")
    if b"transfer-encoding: chunked" in head.lower():
        rest = _unchunk(rest)
    return status_of(answer), rest


def _unchunk(data: bytes) -> bytes:
    out: list[bytes] = []
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out.append(data[:size])
        data = data[size + 2 :]
    return b"".join(out)
