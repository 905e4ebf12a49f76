"""POST /token: the SDK's token handler, with reuse detection, RFC 8707 checks and clear refusals in front.

The SDK handler validates the grant (client auth, redirect URI, PKCE S256, expiry) but treats a
reused code or refresh token as merely unknown and never sees the `resource` parameter. Before it
runs we look the presented secret up: reuse revokes the whole grant (OAuth 2.1 §4.1.3, §4.3.1) and
says so (except a client's own concurrent refresh, see `REFRESH_GRACE_SECONDS`); an expired, foreign
or cut-off secret is refused with what happened (refusals.py) instead of the SDK's "does not exist";
a `resource` outside the grant is `invalid_target`; a narrower one narrows the access token.
"""

from __future__ import annotations

from mcp.server.auth.handlers.token import TokenHandler
from mcp.server.auth.middleware.client_auth import AuthenticationError
from starlette.requests import Request
from starlette.responses import Response

from thoughtline.oauth.cimd import CimdError
from thoughtline.oauth.errors import not_configured, oauth_error
from thoughtline.oauth.provider import (
    CODE_TTL_SECONDS,
    REFRESH_GRACE_SECONDS,
    REFRESH_TTL_SECONDS,
    Provider,
    requested_resources,
)
from thoughtline.oauth.refusals import code_refusal, refresh_refusal
from thoughtline.oauth.signing import digest
from thoughtline.oauth.urls import canonical_resource, public_origin


def asked_resources(form_values: list[str], origin: str, allowed: tuple[str, ...]) -> tuple[str, ...]:
    """The RFC 8707 `resource` values of a token request, canonical; the bare origin means the whole
    grant, as it does at /authorize (urls.granted_resources)."""
    asked: list[str] = []
    for value in form_values:
        wanted = canonical_resource(value)
        for resource in allowed if wanted == origin and allowed else (wanted,):
            if resource not in asked:
                asked.append(resource)
    return tuple(asked)


async def token_endpoint(provider: Provider, handler: TokenHandler, request: Request) -> Response:
    """Check reuse, usability and resource, then let the SDK's handler finish the exchange."""
    if not provider.settings.github_enabled:
        return not_configured()
    form = await request.form()  # Starlette caches the parsed form; the SDK handler reads it again
    grant_type = form.get("grant_type")
    secret = form.get("code") if grant_type == "authorization_code" else form.get("refresh_token")
    client_id = str(form.get("client_id") or "")
    now = provider.clock.now()
    allowed: tuple[str, ...] = ()
    refusal: str | None = None
    if isinstance(secret, str) and grant_type == "authorization_code":
        code = await provider.store.find_code(digest(secret))
        if code is not None and code.used:
            await provider.store.revoke_grant(code.grant.id, "authorization code reused", now)
            return oauth_error(
                "invalid_grant",
                "this authorization code was already used; every token it issued is now revoked. Sign in again.",
            )
        allowed = code.grant.resources if code else ()
        refusal = code_refusal(code, client_id, now, CODE_TTL_SECONDS, provider.login_allowed)
    elif isinstance(secret, str) and grant_type == "refresh_token":
        token = await provider.store.find_token(digest(secret))
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
        # The grant's resources: a refresh may ask for any of them, whatever the last access token had.
        allowed = token.grant.resources if token else ()
        refusal = refresh_refusal(token, client_id, now, REFRESH_TTL_SECONDS, provider.login_allowed)
    if refusal is not None and await _client_authenticates(handler, request):
        # Only an authenticated client learns why; anyone else gets the SDK's 401 below.
        return oauth_error("invalid_grant", refusal)
    origin = public_origin(request, provider.settings.public_url)
    asked = asked_resources([str(r) for r in form.getlist("resource")], origin, allowed)
    outside = [r for r in asked if allowed and r not in allowed]
    if outside:
        return oauth_error(
            "invalid_target",
            f"resource {outside[0]!r} is not covered by this sign-in, which covers: {', '.join(allowed)}. "
            "Ask for one of those, or sign in again asking for that resource.",
        )
    reset = requested_resources.set(asked)
    try:
        response: Response = await handler.handle(request)
        return response
    except CimdError as exc:
        return oauth_error("invalid_client", str(exc), 401)
    finally:
        requested_resources.reset(reset)


async def _client_authenticates(handler: TokenHandler, request: Request) -> bool:
    try:
        await handler.client_authenticator.authenticate_request(request)
    except (AuthenticationError, CimdError):
        return False
    return True
