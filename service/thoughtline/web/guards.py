"""HTTP guards every request passes: Host/Origin validation, early body-size refusal, access log.

Host and Origin checks are the DNS-rebinding defence: a page on an attacker's domain that
resolves to 127.0.0.1 still sends its own name in Host/Origin, which is not on the list. A
request with two Host or two Origin headers is refused (400): the guard and the URL builders
(issuer, resource metadata) must see the same single value (SPEC §4; issue 11, F3). Two
Authorization headers are refused alike (RFC 9110 §11.6.2: one credential), also when they arrive
joined by a comma, as Lambda's front end delivers repeated headers: a proxy or WAF that reads the
last one must not see another credential than the one the bearer gate checks. The access log
records method, path, status and duration only — never query strings (OAuth codes travel there),
headers (tokens) or bodies (thought text) — and escapes control characters (F6). A path below
`/api/v1/threads/` or `/library/threads/` is logged as its pattern: it carries a thread name, user
content (a `case` thread is often a person's name), which the error logs leave out as well; any
other segment below `/api/v1/` or `/library/` that is not a route's word or an issued id (a
mistyped path, a name sent where an id goes) is logged as `{?}`.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Iterable
from html import escape
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from thoughtline.logsafe import log_safe
from thoughtline.web.replay import replay

logger = logging.getLogger("thoughtline.access")

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


# `name` or `name:port` with a plain DNS name or IPv4 address: read without urlsplit (the common case).
_PLAIN_HOST = re.compile(r"([A-Za-z0-9.-]+)(?::([0-9]{1,5}))?")


def host_name(value: str) -> str | None:
    """The lower-cased host name of a Host header value (port stripped), or None if malformed."""
    value = value.strip()
    plain = _PLAIN_HOST.fullmatch(value)
    if plain is not None:
        port = plain.group(2)
        return plain.group(1).lower() if port is None or int(port) <= 65535 else None
    if not value or any(c in value for c in "/@\\ \t?#"):
        return None
    try:
        parts = urlsplit(f"//{value}")
        name = parts.hostname
        _ = parts.port  # raises on a malformed port
    except ValueError:
        return None
    return name.lower() if name else None


# Headers the guard reads; each but Content-Length must come once (see the module docstring).
_SINGLE_VALUED = (b"host", b"origin", b"authorization", b"content-length")
# A second credential after a comma (`Bearer a,Bearer b`): what two Authorization headers become when
# Lambda's front end (or a proxy) joins repeated headers into one. A comma followed by a scheme and
# a space never occurs in one bearer credential (RFC 6750 §2.1: a b64token has no comma or space).
_JOINED_CREDENTIALS = re.compile(rb",[ \t]*[A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]*[ \t]+[^ \t]")


async def _reply(send: Send, status: int, error: str, message: str) -> None:
    body = json.dumps({"error": error, "message": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


# A refusal a person meets: a library form posted from a browser (it asks for HTML). The pages'
# own frame lives in `pages/`, above this guard; this page is self-contained and loads nothing.
_PAGE_HEADERS = [
    (b"content-type", b"text/html; charset=utf-8"),
    (b"content-security-policy", b"default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"cache-control", b"no-store"),
]


def _wants_page(scope: Scope) -> bool:
    accept = next((v for k, v in scope.get("headers", []) if k == b"accept"), b"")
    return str(scope.get("path", "")).startswith("/library") and b"text/html" in accept


async def _reply_page(send: Send, status: int, title: str, message: str) -> None:
    body = (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)} · Thoughtline</title>'
        f"</head><body><main><h1>{escape(title)}</h1><p>{escape(message)}</p>"
        '<p><a href="/library">Back to your library</a></p></main></body></html>'
    ).encode()
    headers = [*_PAGE_HEADERS, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def too_large(limit: int) -> str:
    """The 413 message for a body over `limit` bytes whose size was not declared up front."""
    return f"The request body is over {limit} bytes (THOUGHTLINE_MAX_BODY_BYTES); send a smaller one."


class _Gone(Exception):
    """The client went away before its chunked body was whole: nobody to answer, nothing to run."""


async def _bounded_body(receive: Receive, limit: int) -> bytes | None:
    """The whole request body, or None once it passes `limit` bytes (the rest is left unread)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            raise _Gone  # a cut-off body must never reach a route that could act on part of it
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


class HostOriginGuard:
    """Refuses requests whose Host or Origin is not one of ours (403, JSON body)."""

    def __init__(self, app: ASGIApp, hosts: Iterable[str], origins: Iterable[str], max_body_bytes: int) -> None:
        self._app = app
        self._hosts = frozenset(h.lower() for h in hosts) | LOOPBACK_NAMES
        self._origins = self._hosts | frozenset(o.lower() for o in origins)
        self._max_body = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        headers: dict[bytes, bytes] = {}
        for key, value in scope.get("headers", []):
            if key in _SINGLE_VALUED:
                if key in headers and key != b"content-length":  # the server refuses two lengths itself
                    name = key.decode().capitalize()
                    await _reply(send, 400, "bad_request", f"The request has two {name} headers; send exactly one.")
                    return
                headers[key] = value
        if _JOINED_CREDENTIALS.search(headers.get(b"authorization", b"")):
            await _reply(
                send,
                400,
                "bad_request",
                "The request has two Authorization headers (two credentials joined by a comma); send exactly one.",
            )
            return
        raw_host = headers.get(b"host", b"").decode("latin-1")
        name = host_name(raw_host)
        if name is None or name not in self._hosts:
            await _reply(
                send,
                403,
                "forbidden_host",
                f"Host {raw_host[:100]!r} is not allowed; add its name to ALLOWED_HOSTNAMES "
                "or set THOUGHTLINE_PUBLIC_URL.",
            )
            return
        origin = headers.get(b"origin")
        if origin is not None:
            origin_text = origin.decode("latin-1")
            origin_name = urlsplit(origin_text).hostname if "://" in origin_text else None
            if origin_name is None or origin_name.lower() not in self._origins:
                if _wants_page(scope):
                    text = "This form was sent from another site (its Origin is not this server's), so nothing changed."
                    await _reply_page(send, 403, "Request refused", text)
                    return
                await _reply(
                    send,
                    403,
                    "forbidden_origin",
                    f"Origin {origin_text[:100]!r} is not allowed; add its host name to ALLOWED_ORIGIN_HOSTNAMES.",
                )
                return
        length = headers.get(b"content-length")
        if length is None and any(key == b"transfer-encoding" for key, _ in scope.get("headers", [])):
            # A chunked body declares no size, and uvicorn reads whatever arrives: every route that
            # reads a body (REST, forms, OAuth's /token) would buffer it whole. Read it here, bounded.
            try:
                body = await _bounded_body(receive, self._max_body)
            except _Gone:
                return
            if body is None:
                if _wants_page(scope):
                    await _reply_page(send, 413, "The form is too large", too_large(self._max_body))
                    return
                await _reply(send, 413, "payload_too_large", too_large(self._max_body))
                return
            await self._app(scope, replay(body, receive), send)
            return
        if length is not None:
            if not length.isdigit():
                await _reply(send, 400, "bad_request", "Content-Length must be a whole number of bytes.")
                return
            if int(length) > self._max_body:
                if _wants_page(scope):
                    text = (
                        f"The form is {int(length)} bytes; this server takes at most {self._max_body} "
                        "(THOUGHTLINE_MAX_BODY_BYTES). Nothing changed; go back and shorten the text."
                    )
                    await _reply_page(send, 413, "The form is too large", text)
                    return
                await _reply(
                    send,
                    413,
                    "payload_too_large",
                    f"The request body is {int(length)} bytes; the limit is {self._max_body} "
                    "(THOUGHTLINE_MAX_BODY_BYTES).",
                )
                return
        await self._app(scope, receive, send)


# Paths whose rest is a thread name (and what follows it): logged as the prefix and this pattern.
_NAMED_PREFIXES = ("/api/v1/threads/", "/library/threads/")
NAME_PATTERN = "{name}..."


# Below these prefixes a path segment is logged only when it is one of the routes' own words or an
# id the server issued; anything else (a mistyped route, a thread name sent to a route that takes
# an id) could be user text, so it becomes UNKNOWN_SEGMENT, matched by a route or not (docs/api.md).
_MASKED_PREFIXES = ("/api/v1/", "/library/")
_ROUTE_WORDS = frozenset(
    {
        *("sequences", "threads", "proposals", "search", "members", "briefing", "accept", "reject"),
        *("pause", "resume", "complete", "abandon", "pin", "unpin", "rename", "describe", "archive"),
        *("unarchive", "type", "signin", "signout", "github", "assets", "library.css", "library.js", "icon.svg"),
    }
)
_ISSUED_ID = re.compile(r"seq_[0-9a-f]{32}|prp_[0-9]{1,20}")
UNKNOWN_SEGMENT = "{?}"
# The first segments of every path the server answers (the OAuth door's, the MCP endpoints', the
# site's): a path starting with any other (`/api/v2/threads/Jane Doe`) is logged as UNKNOWN_SEGMENT.
_OUR_FIRST_SEGMENTS = frozenset(
    {
        *("", "mcp", "mcp-compat", "healthz", "library", "api", ".well-known"),
        *("authorize", "token", "register", "revoke", "consent", "callback"),
    }
)


def logged_path(path: str) -> str:
    """The path as the access log writes it: a thread name, or any segment not ours, replaced by a pattern."""
    for prefix in _NAMED_PREFIXES:
        if path.startswith(prefix):
            return prefix + NAME_PATTERN
    for prefix in _MASKED_PREFIXES:
        if path.startswith(prefix):
            segments = path[len(prefix) :].split("/")
            kept = (s if s in _ROUTE_WORDS or _ISSUED_ID.fullmatch(s) or not s else UNKNOWN_SEGMENT for s in segments)
            return prefix + "/".join(kept)
    first = path[1:].split("/", 1)[0]
    if first not in _OUR_FIRST_SEGMENTS:
        return "/" + UNKNOWN_SEGMENT
    if first == "api" and path not in ("/api", "/api/", "/api/v1"):  # another version: its rest may name things
        return "/api/" + UNKNOWN_SEGMENT
    return path


class AccessLog:
    """Logs one line per request: method, path, status, milliseconds."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def record(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self._app(scope, receive, record)
        finally:
            elapsed = (time.perf_counter() - started) * 1000
            logger.info(
                "%s %s %d %.1fms",
                log_safe(scope.get("method")),
                log_safe(logged_path(str(scope.get("path", "")))),
                status,
                elapsed,
            )
