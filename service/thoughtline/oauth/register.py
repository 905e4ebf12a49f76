"""POST /register (RFC 7591): the SDK's registration handler behind a rate limit and a pending cap.

Anyone may register, so registration is where the disk could be filled (issue 11, F1). In front of
the SDK handler: a per-address rate limit (429 with Retry-After) and a cap on registrations that
have not completed an authorization yet (503). The body is capped where the route is mounted, and
every field is bounded by `clients.client_problem` when the provider stores the client.
"""

from __future__ import annotations

import math

from mcp.server.auth.handlers.register import RegistrationHandler
from starlette.requests import Request
from starlette.responses import Response

from thoughtline.oauth.errors import not_configured, oauth_error
from thoughtline.oauth.provider import Provider
from thoughtline.oauth.ratelimit import RateLimiter

# Registrations awaiting their first authorization, across all addresses; unused ones expire after
# a day (records.UNUSED_CLIENT_SECONDS), so this bounds the clients table at about 40 MB worst case.
MAX_UNUSED_CLIENTS = 5000


async def register_endpoint(
    provider: Provider, handler: RegistrationHandler, limiter: RateLimiter, request: Request
) -> Response:
    """Refuse when the caller registers too often or too many registrations are pending; else register."""
    if not provider.settings.github_enabled:
        return not_configured()
    wait = limiter.take(request.client.host if request.client else "")
    if wait is not None:
        seconds = max(1, math.ceil(wait))
        refused = oauth_error(
            "temporarily_unavailable",
            f"too many client registrations from your address; retry in {seconds} s "
            "(THOUGHTLINE_REGISTRATIONS_PER_HOUR)",
            429,
        )
        refused.headers["Retry-After"] = str(seconds)
        return refused
    if await provider.store.unused_clients(provider.clock.now()) >= MAX_UNUSED_CLIENTS:
        return oauth_error(
            "temporarily_unavailable",
            f"{MAX_UNUSED_CLIENTS} registered clients have not signed in yet; registration reopens as they "
            "expire (within a day). Retry later.",
            503,
        )
    response: Response = await handler.handle(request)
    return response
