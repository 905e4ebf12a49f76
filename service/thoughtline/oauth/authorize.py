"""GET/POST /authorize: the SDK's authorization handler, with a clear answer for URL client ids.

The SDK handler validates the request (response_type, PKCE S256 only, registered redirect URI) and
calls our provider, which forwards to the consent page. A URL client_id whose metadata document
cannot be fetched safely would surface there as an opaque server error, so it is resolved first and
refused with the reason.
"""

from __future__ import annotations

from mcp.server.auth.handlers.authorize import AuthorizationHandler
from starlette.requests import Request
from starlette.responses import Response

from thoughtline.oauth.cimd import CimdError, is_metadata_url
from thoughtline.oauth.errors import NO_STORE, not_configured, oauth_error
from thoughtline.oauth.provider import Provider


async def authorize_endpoint(provider: Provider, handler: AuthorizationHandler, request: Request) -> Response:
    """Refuse early when GitHub is not configured or a URL client_id is unusable; else run the SDK handler."""
    if not provider.settings.github_enabled:
        return not_configured()
    params = request.query_params if request.method == "GET" else await request.form()
    client_id = params.get("client_id")
    if isinstance(client_id, str) and is_metadata_url(client_id):
        try:
            await provider.get_client(client_id)
        except CimdError as exc:
            return oauth_error("invalid_client", str(exc))
    response = await handler.handle(request)
    response.headers.update(NO_STORE)
    return response
