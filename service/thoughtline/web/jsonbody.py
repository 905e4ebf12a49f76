"""The one JSON reader of the MCP endpoints: every POST body, on every route and era, passes here.

Before this gate, each path parsed bodies its own way (Python's `json` on `/mcp` and the direct
path, pydantic's on the SDK's compat path), with different limits: a deeply nested body on `/mcp`
without a protocol header raised RecursionError into a 500, and a UTF-16 body slipped past the
direct path's lone-surrogate check (issue 19). Now one parser (pydantic-core's, in Rust: no
recursion in Python, and ~5x faster than `json` on a tool call) with one set of limits decides,
and a body it refuses is answered here with HTTP 400 and JSON-RPC -32700, naming the problem and
the fix. Nothing downstream sees a body this gate did not accept.

Limits: at most `max_body_bytes` (413 beyond, also for chunked bodies without a length), UTF-8
only and without a byte order mark (RFC 8259 §8.1), nesting at most `MAX_DEPTH` levels, strings
free of lone UTF-16 surrogates (no UTF-8 answer could carry them back), and numbers that are finite
(`NaN`, `Infinity`, `1e999`) and at most 4,300 digits long (Python's own integer limit).

A JSON array body (a JSON-RPC batch) parses but is refused here too, with -32600 Invalid Request:
no protocol version this server speaks accepts batches (2025-06-18 dropped them; the SDK never
took them), and the SDK's own answer was a raw pydantic validation dump.

The accepted message rides along in the ASGI scope under `MESSAGE_KEY`, so the direct paths and
the era gate read it without parsing again; the SDK, when it handles the request, re-reads the same
body from a replayed `receive`.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from typing import Any

import pydantic_core
from mcp_types import INVALID_REQUEST, PARSE_ERROR
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from thoughtline.mcp.fastpath import MESSAGE_KEY
from thoughtline.web.guards import too_large
from thoughtline.web.replay import replay

MAX_DEPTH = 64
_BOMS = (
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\xef\xbb\xbf", "UTF-8 with a byte order mark"),
    (b"\xfe\xff", "UTF-16"),
    (b"\xff\xfe", "UTF-16"),
)
_FIX = "send one JSON-RPC message as UTF-8 JSON"
_JSON_STARTS = frozenset(b"{[")
# A number literal may overflow to infinity only with an exponent of three or more digits or more
# digits than a finite double holds. To spot either at C speed, the body is mapped to a skeleton
# (digits → 0, e/E → e, signs → s, all else → space) and searched for those shapes; text can
# match too, which only costs the walk in `_check_shape`.
_SKELETON = bytes(
    ord("0") if b in b"0123456789" else ord("e") if b in b"eE" else ord("s") if b in b"+-" else ord(" ")
    for b in range(256)
)
_HUGE_SHAPES = (b"e000", b"es000", b"0" * 309)


BATCH_REFUSED = (
    "Invalid Request: the body is a JSON array (a JSON-RPC batch), and batches are not supported by "
    "this protocol version; send one request per POST, as a single JSON object."
)


class BodyError(ValueError):
    """A body the gate refuses; `str()` is the whole JSON-RPC error message, `code` its error code."""

    def __init__(self, message: str, code: int = PARSE_ERROR) -> None:
        super().__init__(message)
        self.code = code


def _foreign_encoding(body: bytes) -> str | None:
    """The encoding a body announces or shows (RFC 4627 §3: NULs among the first four bytes), if not UTF-8."""
    if len(body) >= 2 and body[0] in _JSON_STARTS and body[1] != 0:
        return None  # the usual case, `{"` or `[{`: no BOM, and UTF-16/32 would put a NUL second
    for bom, name in _BOMS:
        if body.startswith(bom):
            return name
    head = body[:4]
    if len(head) == 4 and b"\x00" in head:
        return "UTF-32" if head.count(b"\x00") == 3 else "UTF-16"
    if len(head) >= 2 and b"\x00" in head:
        return "UTF-16"
    return None


def _check_shape(value: Any) -> None:
    """Refuse nesting deeper than MAX_DEPTH and non-finite numbers; iterative, so depth costs no stack."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            if depth > MAX_DEPTH:
                raise BodyError(
                    f"Parse error: the JSON nests deeper than {MAX_DEPTH} levels; {_FIX} nested less deeply."
                )
            for child in node.values() if isinstance(node, dict) else node:
                stack.append((child, depth + 1))
        elif isinstance(node, float) and not math.isfinite(node):
            raise BodyError(f"Parse error: a number is too large to be finite; {_FIX} with finite numbers.")


def _maybe_huge(body: bytes) -> bool:
    skeleton = body.translate(_SKELETON)
    return any(shape in skeleton for shape in _HUGE_SHAPES)


# A \uD800-\uDFFF escape (after an even number of backslashes, so not an escaped backslash).
_SURROGATE_ESCAPE = re.compile(rb"(?<!\\)(?:\\\\)*\\u([dD][89a-fA-F][0-9a-fA-F]{2})")


def _lone_surrogate(body: bytes) -> str | None:
    """The first lone surrogate escape in `body`, described (pydantic-core's own text misnames the kind)."""
    escapes = list(_SURROGATE_ESCAPE.finditer(body))
    paired: set[int] = set()
    for first, second in itertools.pairwise(escapes):
        leading = int(first.group(1), 16) < 0xDC00
        if (
            leading
            and int(second.group(1), 16) >= 0xDC00
            and second.start() == first.end()
            and first.start() not in paired
        ):
            paired |= {first.start(), second.start()}
    for escape in escapes:
        if escape.start() not in paired:
            code = escape.group(1).decode().lower()
            kind = "leading (high)" if int(code, 16) < 0xDC00 else "trailing (low)"
            return (
                f"a string holds a lone {kind} UTF-16 surrogate escape \\u{code} at byte {escape.start(1) - 2}; "
                "a surrogate is text only as half of a pair, and JSON bodies must be valid Unicode"
            )
    return None


def parse_message(body: bytes) -> Any:
    """The decoded JSON value of `body`, or BodyError saying why not (the limits above)."""
    encoding = _foreign_encoding(body)
    if encoding is not None:
        raise BodyError(f"Parse error: the body is {encoding}, but JSON bodies must be UTF-8 (RFC 8259); {_FIX}.")
    try:
        value = pydantic_core.from_json(body, allow_inf_nan=False)
    except ValueError as exc:
        detail = str(exc)
        if detail.startswith("recursion limit exceeded"):
            raise BodyError(
                f"Parse error: the JSON nests deeper than {MAX_DEPTH} levels; {_FIX} nested less deeply."
            ) from None
        lone = _lone_surrogate(body) if "hex escape" in detail or "surrogate" in detail else None
        if lone is not None:
            raise BodyError(f"Parse error: {lone}; {_FIX} with the character itself or a full pair.") from None
        raise BodyError(f"Parse error: {detail[:200]}; {_FIX}.") from None
    # Fewer brackets than the depth limit (counting those inside strings too) cannot nest past it;
    # that is every ordinary tool call, which then skips the walk.
    if body.count(b"[") + body.count(b"{") > MAX_DEPTH or _maybe_huge(body):
        _check_shape(value)
    return value


def _error_body(error: BodyError) -> bytes:
    payload = {"jsonrpc": "2.0", "id": None, "error": {"code": error.code, "message": str(error)}}
    return json.dumps(payload).encode()


async def _answer(send: Send, status: int, body: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


class JsonBodyGate:
    """ASGI wrapper: reads a POST body once, answers what `parse_message` refuses, passes the rest on."""

    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self._app = app
        self._max_body = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self._app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message: Message = await receive()
            if message["type"] != "http.request":
                return  # the client went away; there is nobody to answer
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self._max_body:
                message_text = too_large(self._max_body)
                await _answer(send, 413, json.dumps({"error": "payload_too_large", "message": message_text}).encode())
                return
            chunks.append(chunk)
            more = bool(message.get("more_body"))
        body = b"".join(chunks)
        try:
            decoded = parse_message(body)
            if isinstance(decoded, list):
                raise BodyError(BATCH_REFUSED, INVALID_REQUEST)
        except BodyError as exc:
            await _answer(send, 400, _error_body(exc))
            return
        scope[MESSAGE_KEY] = decoded
        await self._app(scope, replay(body, receive), send)
