"""What every browser-facing OAuth handler needs: settings, provider, GitHub, clock, and URL helpers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from mcp.server.auth.provider import construct_redirect_uri
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from thoughtline.clock import Clock
from thoughtline.config import Settings
from thoughtline.oauth.github import GitHubIdentity
from thoughtline.oauth.provider import Provider
from thoughtline.oauth.urls import CALLBACK_PATH, public_origin

CSRF_COOKIE = "thoughtline_consent"
SIGNIN_COOKIE = "thoughtline_signin"


@dataclass(frozen=True)
class DoorContext:
    """Shared, immutable wiring of the authorization server's handlers."""

    settings: Settings
    provider: Provider
    github: GitHubIdentity
    clock: Clock
    # Starts a library session for a checked account (pages/signin.py); None: no library sign-in.
    library_signed_in: Callable[[Request, str, str], Awaitable[Response]] | None = None

    def origin(self, request: Request) -> str:
        """Our public origin for this request (THOUGHTLINE_PUBLIC_URL wins)."""
        return public_origin(request, self.settings.public_url)

    def callback_url(self, request: Request) -> str:
        """The GitHub OAuth app's callback URL; it must match the app's setting on GitHub exactly."""
        return self.origin(request) + CALLBACK_PATH

    def secure_cookies(self, request: Request) -> bool:
        """Mark cookies Secure whenever clients reach us over https."""
        return self.origin(request).startswith("https://")

    def back_to_client(self, request: Request, pending: dict[str, object], **params: str | None) -> RedirectResponse:
        """Redirect to the client's registered redirect URI with `params`, its state and our `iss`."""
        state = pending.get("state")
        url = construct_redirect_uri(
            str(pending["redirect_uri"]),
            **params,
            state=state if isinstance(state, str) else None,
            iss=self.origin(request),  # RFC 9207: lets the client detect mix-up attacks
        )
        return RedirectResponse(url, status_code=302, headers={"Cache-Control": "no-store"})
