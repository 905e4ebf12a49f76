"""GET/POST /authorize: the SDK's authorization handler, with our checks before it and `iss` after it.

The SDK handler validates the request (response_type, registered redirect URI, scope) and calls
our provider, which forwards to the consent page. Around it:
- a URL client_id whose metadata document cannot be fetched safely would surface there as an opaque
  server error, so it is resolved first and refused with the reason;
- PKCE is checked here (the SDK reads a missing method as S256 and never looks at the challenge),
  so a wrong challenge fails before the person signs in with GitHub, not after at /token;
- every error redirect carries `iss` (RFC 9207 §2), as the metadata promises: the SDK's own error
  redirects do not, and clients that check it would hide the real error behind a missing `iss`.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

from mcp.server.auth.handlers.authorize import AuthorizationHandler
from mcp.server.auth.provider import construct_redirect_uri
from mcp.shared.auth import InvalidRedirectUriError
from pydantic import AnyUrl, TypeAdapter, ValidationError
from starlette.datastructures import FormData, QueryParams
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from thoughtline.oauth.cimd import CimdError, is_metadata_url
from thoughtline.oauth.errors import NO_STORE, not_configured, oauth_error
from thoughtline.oauth.provider import Provider
from thoughtline.oauth.urls import public_origin

# RFC 7636 §4.2: an S256 challenge is BASE64URL(SHA256(verifier)) without padding, always 43 characters.
S256_CHALLENGE = re.compile(r"[A-Za-z0-9_-]{43}")
_URL = TypeAdapter(AnyUrl)


def pkce_problem(params: QueryParams | FormData) -> str | None:
    """Why the PKCE parameters cannot work, or None (a missing challenge is left to the SDK's message)."""
    challenge = params.get("code_challenge")
    if not isinstance(challenge, str) or not challenge:
        return None
    if params.get("code_challenge_method") != "S256":
        return (
            "code_challenge_method=S256 is required; plain (which a missing method means, RFC 7636 §4.3) "
            "is not supported"
        )
    if not S256_CHALLENGE.fullmatch(challenge):
        return (
            "code_challenge must be 43 base64url characters: BASE64URL(SHA256(code_verifier)) without '=' "
            "padding (RFC 7636 §4.2)"
        )
    return None


async def authorize_endpoint(provider: Provider, handler: AuthorizationHandler, request: Request) -> Response:
    """Refuse early when GitHub is not configured, a URL client_id is unusable or PKCE cannot work;
    else run the SDK handler, adding `iss` to its error redirects."""
    if not provider.settings.github_enabled:
        return not_configured()
    params = request.query_params if request.method == "GET" else await request.form()
    client_id = params.get("client_id")
    if isinstance(client_id, str) and is_metadata_url(client_id):
        try:
            await provider.get_client(client_id)
        except CimdError as exc:
            return oauth_error("invalid_client", str(exc))
    origin = public_origin(request, provider.settings.public_url)
    problem = pkce_problem(params)
    if problem is not None:
        redirect_uri = await _registered_redirect(provider, params)
        if redirect_uri is not None:  # else the SDK answers 400 for the client or redirect URI itself
            state = params.get("state")
            url = construct_redirect_uri(
                redirect_uri,
                error="invalid_request",
                error_description=problem,
                state=state if isinstance(state, str) else None,
                iss=origin,
            )
            return RedirectResponse(url, status_code=302, headers=NO_STORE)
    response = await handler.handle(request)
    response.headers.update(NO_STORE)
    return _with_iss(response, origin)


async def _registered_redirect(provider: Provider, params: QueryParams | FormData) -> str | None:
    """The redirect URI an error may be sent to, as the SDK decides it; None when there is none."""
    client_id = params.get("client_id")
    client = await provider.get_client(client_id) if isinstance(client_id, str) else None
    if client is None:
        return None
    raw = params.get("redirect_uri")
    try:
        asked = _URL.validate_python(raw) if raw is not None else None
        return str(client.validate_redirect_uri(asked))
    except (ValidationError, InvalidRedirectUriError):
        return None


def _with_iss(response: Response, origin: str) -> Response:
    """Add `iss` to an error redirect to the client that lacks it (RFC 9207 §2)."""
    location = response.headers.get("location")
    if response.status_code != 302 or not location:
        return response
    query = parse_qs(urlsplit(location).query)
    if "error" in query and "iss" not in query:
        response.headers["location"] = construct_redirect_uri(location, iss=origin)
    return response
