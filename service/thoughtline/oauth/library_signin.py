""" "Sign in with GitHub" for the library pages: the same GitHub leg and allowlist as the OAuth door.

A person at `/library` is sent to GitHub with our signed state marked `library` and bound to
this browser by the same short-lived cookie the door's consent step sets; `/callback` checks
them exactly as for an MCP client, then, instead of issuing an authorization code, hands the
account's store key to the pages, which start a session (pages/signin.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response

from thoughtline.oauth.context import DoorContext
from thoughtline.oauth.github_leg import redirect_to_github

LibrarySignedIn = Callable[[Request, str, str], Awaitable[Response]]
"""`(request, user_key, login) -> response`: start a library session for a checked GitHub account."""

LIBRARY_MARK = "library"


async def start_library_sign_in(ctx: DoorContext, request: Request) -> Response:
    """Send the browser to GitHub for a library sign-in (the caller has checked the form's origin)."""
    return await redirect_to_github(ctx, request, {LIBRARY_MARK: True})


def is_library_sign_in(pending: dict[str, object]) -> bool:
    """Whether a checked GitHub state belongs to a library sign-in rather than an MCP client's."""
    return pending.get(LIBRARY_MARK) is True
