"""The redirect to GitHub that starts a sign-in, bound to the browser that asked for it.

Both the OAuth door's consent step and the library's "Sign in with GitHub" start here, so the
state's signing and the binding cookie are written once.
"""

from __future__ import annotations

import secrets
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse

from thoughtline.oauth.context import SIGNIN_COOKIE, DoorContext
from thoughtline.oauth.provider import PENDING_TTL_SECONDS
from thoughtline.oauth.signing import GITHUB_STATE, digest
from thoughtline.oauth.urls import CALLBACK_PATH


async def redirect_to_github(ctx: DoorContext, request: Request, pending: dict[str, Any]) -> RedirectResponse:
    """A 303 to GitHub carrying `pending` in signed state, and the cookie that ties it to this browser."""
    signer = await ctx.provider.signer()
    browser = secrets.token_urlsafe(24)
    state = signer.dumps(GITHUB_STATE, {"p": pending, "b": digest(browser)}, PENDING_TTL_SECONDS)
    target = await ctx.github.authorize_url(ctx.callback_url(request), state)
    response = RedirectResponse(target, status_code=303, headers={"Cache-Control": "no-store"})
    # Binds the GitHub round trip to this browser: a callback URL replayed elsewhere fails
    # (login CSRF, RFC 6749 §10.12). SameSite=Lax is sent on GitHub's top-level redirect back.
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
