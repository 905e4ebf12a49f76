"""POST /token: the SDK's token handler, with reuse detection and RFC 8707 checks in front.

The SDK handler validates the grant (client auth, redirect URI, PKCE S256, expiry) but treats a
reused code or refresh token as merely unknown and never sees the `resource` parameter. Before it
runs we look the presented secret up: reuse revokes the whole grant (OAuth 2.1 §4.1.3, §4.3.1) and
says so (except a client's own concurrent refresh, see `REFRESH_GRACE_SECONDS`); a `resource`
outside the grant is `invalid_target`; a narrower one narrows the token.
"""

from __future__ import annotations

from mcp.server.auth.handlers.token import TokenHandler
from starlette.requests import Request
from starlette.responses import Response

from thoughtline.oauth.cimd import CimdError
from thoughtline.oauth.errors import not_configured, oauth_error
from thoughtline.oauth.provider import REFRESH_GRACE_SECONDS, Provider, requested_resources
from thoughtline.oauth.signing import digest
from thoughtline.oauth.urls import canonical_resource


async def token_endpoint(provider: Provider, handler: TokenHandler, request: Request) -> Response:
    """Check reuse and resource, then let the SDK's handler finish the exchange."""
    if not provider.settings.github_enabled:
        return not_configured()
    form = await request.form()  # Starlette caches the parsed form; the SDK handler reads it again
    grant_type = form.get("grant_type")
    secret = form.get("code") if grant_type == "authorization_code" else form.get("refresh_token")
    asked = tuple(canonical_resource(str(r)) for r in form.getlist("resource"))
    allowed: tuple[str, ...] = ()
    if isinstance(secret, str) and grant_type == "authorization_code":
        code = await provider.store.find_code(digest(secret))
        if code is not None and code.used:
            await provider.store.revoke_grant(code.grant.id, "authorization code reused", provider.clock.now())
            return oauth_error(
                "invalid_grant",
                "this authorization code was already used; every token it issued is now revoked. Sign in again.",
            )
        allowed = code.grant.resources if code else ()
    elif isinstance(secret, str) and grant_type == "refresh_token":
        token = await provider.store.find_token(digest(secret))
        now = provider.clock.now()
        if (
            token is not None
            and token.kind == "refresh"
            and token.used
            and not await provider.store.refresh_just_rotated(digest(secret), now, REFRESH_GRACE_SECONDS)
        ):
            await provider.store.revoke_grant(token.grant.id, "refresh token reused", now)
            return oauth_error(
                "invalid_grant",
                "this refresh token was already used (tokens rotate on every refresh); the grant is now "
                "revoked as a precaution. Sign in again.",
            )
        allowed = token.resources if token else ()
    outside = [r for r in asked if allowed and r not in allowed]
    if outside:
        return oauth_error(
            "invalid_target",
            f"resource {outside[0]!r} was not part of this authorization; allowed: {', '.join(allowed)}",
        )
    reset = requested_resources.set(asked)
    try:
        response: Response = await handler.handle(request)
        return response
    except CimdError as exc:
        return oauth_error("invalid_client", str(exc), 401)
    finally:
        requested_resources.reset(reset)
