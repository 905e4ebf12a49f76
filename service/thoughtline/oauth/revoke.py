"""POST /revoke (RFC 7009), accepting public clients.

The SDK's revocation handler requires a `client_secret` form field even from clients registered
with `token_endpoint_auth_method=none` (every CIMD client and most DCR clients), so it refuses the
very clients that need it. We authenticate with the SDK's ClientAuthenticator — which handles
public clients correctly — and revoke ourselves.
"""

from __future__ import annotations

from mcp.server.auth.middleware.client_auth import AuthenticationError, ClientAuthenticator
from starlette.requests import Request
from starlette.responses import Response

from thoughtline.oauth.cimd import CimdError
from thoughtline.oauth.errors import NO_STORE, not_configured, oauth_error
from thoughtline.oauth.provider import Provider
from thoughtline.oauth.signing import digest


async def revoke_endpoint(provider: Provider, authenticator: ClientAuthenticator, request: Request) -> Response:
    """Revoke the grant behind a token of the calling client; 200 whenever the client authenticates."""
    if not provider.settings.github_enabled:
        return not_configured()
    try:
        client = await authenticator.authenticate_request(request)
    except AuthenticationError as exc:
        return oauth_error("invalid_client", f"{exc.message}; send client_id (and client_secret if you have one)", 401)
    except CimdError as exc:
        return oauth_error("invalid_client", str(exc), 401)
    token = (await request.form()).get("token")
    if not isinstance(token, str) or not token:
        return oauth_error("invalid_request", "the form field 'token' is required")
    record = await provider.store.find_token(digest(token))
    # RFC 7009 §2.2: unknown tokens, and tokens of other clients, get the same 200 as success.
    if record is not None and record.grant.client_id == client.client_id:
        await provider.store.revoke_grant(record.grant.id, "revoked by the client", provider.clock.now())
    return Response(status_code=200, headers=NO_STORE)
