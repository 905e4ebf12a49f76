"""The bearer door in front of the MCP endpoints.

A request is let through with a principal when its bearer token is the static `MCP_API_TOKEN`
(compared in constant time; it maps to the owner's store) or when the OAuth verifier accepts it
for this exact endpoint (RFC 8707 audience). Anything else gets 401 with a `WWW-Authenticate`
header pointing at the endpoint's protected-resource metadata (RFC 9728), so clients can discover
how to sign in.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from thoughtline.identity import OWNER_KEY, Principal, reset_principal, set_principal

TokenVerifier = Callable[[str, str], Awaitable[Principal | None]]
"""`(token, resource_url) -> Principal | None`: the OAuth door's access-token check."""


def public_origin(scope: Scope, public_url: str | None) -> str:
    """The origin clients see: `THOUGHTLINE_PUBLIC_URL` if set, else the request's scheme and Host."""
    if public_url:
        return public_url
    request = Request(scope)
    host = request.headers.get("host") or f"{request.url.hostname}:{request.url.port}"
    return f"{request.url.scheme}://{host}"


def resource_metadata_url(origin: str, path: str) -> str:
    """Where an endpoint's RFC 9728 document lives (path-specific)."""
    return f"{origin}/.well-known/oauth-protected-resource{path}"


def _digest(value: str) -> bytes:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).digest()


class Authenticator:
    """Turns a bearer token into a principal, or says why not."""

    def __init__(self, static_token: str | None, verifier: TokenVerifier | None, public_url: str | None) -> None:
        # Comparing fixed-length digests keeps the comparison constant-time whatever the input length.
        self._static = _digest(static_token) if static_token else None
        self._verifier = verifier
        self._public_url = public_url

    async def principal(self, scope: Scope, path: str) -> tuple[Principal | None, bool]:
        """`(principal, token_was_sent)` for this request against endpoint `path`."""
        header = ""
        for key, value in scope.get("headers", []):
            if key == b"authorization":
                header = value.decode("latin-1")
                break
        scheme, _, token = header.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return None, False
        if self._static is not None and hmac.compare_digest(_digest(token), self._static):
            return Principal(user_key=OWNER_KEY, via="token"), True
        if self._verifier is not None and len(token) <= 4096:
            resource = public_origin(scope, self._public_url) + path
            return await self._verifier(token, resource), True
        return None, True

    def challenge(self, scope: Scope, path: str, token_sent: bool) -> tuple[dict[str, str], bytes]:
        """The 401's headers and JSON body."""
        url = resource_metadata_url(public_origin(scope, self._public_url), path)
        value = f'Bearer resource_metadata="{url}"'
        if token_sent:
            value += ', error="invalid_token", error_description="The access token is expired or not valid here"'
            body = {
                "error": "invalid_token",
                "error_description": "The bearer token is not valid for this endpoint. Use MCP_API_TOKEN, "
                f"or sign in through OAuth (see {url}).",
            }
        else:
            body = {
                "error": "unauthorized",
                "error_description": f"Send 'Authorization: Bearer <token>'. OAuth discovery: {url}",
            }
        return {"www-authenticate": value, "content-type": "application/json"}, json.dumps(body).encode()


class BearerGate:
    """ASGI wrapper: binds the caller's principal for `app`, or answers 401."""

    def __init__(self, app: ASGIApp, authenticator: Authenticator, path: str) -> None:
        self._app = app
        self._auth = authenticator
        self._path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        principal, sent = await self._auth.principal(scope, self._path)
        if principal is None:
            headers, body = self._auth.challenge(scope, self._path, sent)
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        token = set_principal(principal)
        try:
            await self._app(scope, receive, send)
        finally:
            reset_principal(token)
