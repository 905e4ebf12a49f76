""" "Sign in with GitHub" for the library pages: the same GitHub leg and allowlist as the OAuth door.

A person at `/library` is sent to GitHub with our signed state marked `library` and bound to
this browser by the same short-lived cookie the door's consent step sets; `/callback` checks
them exactly as for an MCP client, then, instead of issuing an authorization code, hands the
account's store key to the pages, which start a session (pages/signin.py).
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from thoughtline.oauth.context import SIGNIN_COOKIE, DoorContext
from thoughtline.oauth.provider import PENDING_TTL_SECONDS
from thoughtline.oauth.signing import GITHUB_STATE, digest
from thoughtline.oauth.urls import CALLBACK_PATH

LibrarySignedIn = Callable[[Request, str, str], Awaitable[Response]]
"""`(request, user_key, login) -> response`: start a library session for a checked GitHub account."""

LIBRARY_MARK = "library"


async def start_library_sign_in(ctx: DoorContext, request: Request) -> Response:
    """Send the browser to GitHub for a library sign-in (the caller has checked the form's origin)."""
    signer = await ctx.provider.signer()
    browser = secrets.token_urlsafe(24)
    state = signer.dumps(GITHUB_STATE, {"p": {LIBRARY_MARK: True}, "b": digest(browser)}, PENDING_TTL_SECONDS)
    target = await ctx.github.authorize_url(ctx.callback_url(request), state)
    response = RedirectResponse(target, status_code=303, headers={"Cache-Control": "no-store"})
    # Binds the GitHub round trip to this browser (login CSRF, RFC 6749 §10.12), as consent.py does.
    response.set_cookie(
        SIGNIN_COOKIE,
        browser,
        max_age=int(PENDING_TTL_SECONDS),
        path=CALLBACK_PATH,
        httponly=True,
        samesite="lax",
        secure=ctx.secure_cookies(request),
    )
    return response


def is_library_sign_in(pending: dict[str, object]) -> bool:
    """Whether a checked GitHub state belongs to a library sign-in rather than an MCP client's."""
    return pending.get(LIBRARY_MARK) is True
