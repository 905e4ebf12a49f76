"""Who calls the API: a list of authenticators, tried in order, that bind the caller's principal.

Each authenticator looks at the request and returns a `Principal`, None when the request does
not carry its kind of credential, or raises `ApiRefusal` when it does but is refused (a forged
session, a state-changing request without its CSRF token). The first principal wins and is
bound to the identity contextvar (`identity.set_principal`) for the operation, so everything
below reads the caller through `current_principal()` as the MCP tools do.

The bearer authenticator accepts `MCP_API_TOKEN`. It asks the bearer door for the `/api/v1` audience
(RFC 8707 `resource`), which the authorization server never grants: OAuth access tokens are for
`/mcp` and `/mcp-compat` only, and are refused here (a browser user has the session cookie).
The pages' session cookie is another authenticator in the same list (see docs/api.md).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from starlette.requests import Request
from starlette.types import Scope

from thoughtline.api.errors import ApiRefusal
from thoughtline.identity import Principal

RequestAuthenticator = Callable[[Request], Awaitable[Principal | None]]
"""`request -> Principal | None`; raises `ApiRefusal` to refuse a credential it recognises."""

API_RESOURCE = "/api/v1"


class BearerCheck(Protocol):
    """The bearer door's check (`web.auth.Authenticator`): `(principal, token_was_sent)` for a resource path."""

    async def principal(self, scope: Scope, path: str) -> tuple[Principal | None, bool]:
        """The principal a request's bearer token names for `path`."""
        ...


def bearer(authenticator: BearerCheck) -> RequestAuthenticator:
    """The `Authorization: Bearer` door, for the API's own resource."""

    async def identify(request: Request) -> Principal | None:
        principal, sent = await authenticator.principal(request.scope, API_RESOURCE)
        if sent and principal is None:
            raise ApiRefusal(
                401,
                "invalid_token",
                "the bearer token is not valid for /api/v1; send MCP_API_TOKEN (a token issued for /mcp "
                "or /mcp-compat is valid only there), or sign in at /library.",
                {"www-authenticate": 'Bearer error="invalid_token"'},
            )
        return principal

    return identify


async def identify(request: Request, authenticators: Sequence[RequestAuthenticator]) -> Principal:
    """The caller, from the first authenticator that recognises the request, or 401."""
    for authenticate in authenticators:
        principal = await authenticate(request)
        if principal is not None:
            return principal
    raise ApiRefusal(
        401,
        "unauthorized",
        "send 'Authorization: Bearer <MCP_API_TOKEN>', or sign in at /library for a session.",
        {"www-authenticate": "Bearer"},
    )
