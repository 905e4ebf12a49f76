"""Signing in and out of the library: the one-time link, "Sign in with GitHub", and sign-out.

`GET /library/signin?link=…` claims a link minted by `thoughtline open` (or `make serve`) and
starts the owner's session (a HEAD request never claims it); a used, expired or altered link
gets a page that says which. Without
a link the page explains how to get one and, when GitHub is configured, offers its button.
The cookie is HttpOnly, SameSite=Strict, scoped to the library and the API, and Secure on https.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from thoughtline.config import Settings
from thoughtline.oauth.urls import public_origin
from thoughtline.pages.gate import CookieAuth
from thoughtline.pages.layout import document, message_page
from thoughtline.pages.session import COOKIE, SESSION_TTL_SECONDS, LinkRefused, Session, Sessions

Endpoint = Callable[[Request], Awaitable[Response]]

REFUSALS = {
    "used": ("This sign-in link was already used", "Each link signs in once. Run `thoughtline open` for a new one."),
    "expired": ("This sign-in link has expired", "Links work for 60 seconds. Run `thoughtline open` for a new one."),
    "invalid": (
        "This sign-in link is not valid",
        "It was altered, or made with another data directory's key: run `thoughtline open --data-dir <the server's>`.",
    ),
}


@dataclass(frozen=True)
class SignIn:
    """The sign-in endpoints over one `Sessions` and the cookie rules."""

    sessions: Sessions
    auth: CookieAuth
    settings: Settings

    def _secure(self, request: Request) -> bool:
        return public_origin(request, self.settings.public_url).startswith("https://")

    def signed_in(self, request: Request, session: Session, *, from_elsewhere: bool = False) -> Response:
        """303 to /library with the session cookie set.

        `from_elsewhere`: the request arrived by a redirect from another site (GitHub). A browser
        withholds a SameSite=Strict cookie from the rest of such a chain, so the answer is a page of
        ours that moves on to /library itself (a same-site navigation that carries the cookie).
        """
        response: Response = RedirectResponse("/library", status_code=303, headers={"Cache-Control": "no-store"})
        if from_elsewhere:
            response = document(
                "Signed in",
                '<h1>Signed in</h1><p><a href="/library">Continue to your library</a></p>',
                session=None,
                head='<meta http-equiv="refresh" content="0; url=/library">',
            )
        response.set_cookie(
            COOKIE,
            self.sessions.cookie_value(session),
            max_age=int(SESSION_TTL_SECONDS),
            path="/",  # /library and /api/v1; the MCP endpoints never read it
            httponly=True,
            samesite="strict",
            secure=self._secure(request),
        )
        return response

    async def github_signed_in(self, request: Request, user_key: str, login: str) -> Response:
        """The OAuth door's hook: a checked, allowlisted GitHub account gets a session."""
        return self.signed_in(request, self.sessions.start(user_key, login), from_elsewhere=True)

    async def page(self, request: Request) -> Response:
        """GET /library/signin: redeem `?link=`, or explain how to sign in."""
        link = request.query_params.get("link")
        if link is not None:
            # Link checkers and chat previews send HEAD (RFC 9110: safe, no effect): it answers as a
            # GET would, and only a GET claims the link.
            head = request.method == "HEAD"
            try:
                if head:
                    await anyio.to_thread.run_sync(self.sessions.check_link, link)
                    return message_page("Sign in", "Open this link in your browser to sign in.", status=200)
                session = await anyio.to_thread.run_sync(self.sessions.redeem_link, link)
            except LinkRefused as refused:
                title, hint = REFUSALS[refused.reason]
                return message_page(title, hint, status=400 if refused.reason == "invalid" else 410)
            return self.signed_in(request, session)
        if self.auth.session(request) is not None:
            return RedirectResponse("/library", status_code=303)
        github = ""
        form_action: tuple[str, ...] = ()
        if self.settings.github_enabled:
            github = (
                '<form method="post" action="/library/signin/github">'
                '<button type="submit" class="btn primary">Sign in with GitHub</button></form>'
            )
            form_action = (self.settings.github_base_url.rstrip("/"),)
        body = (
            "<h1>Sign in to your library</h1>"
            "<p>On the machine that runs Thoughtline, run <code>thoughtline open</code>: it prints a sign-in "
            "link that works once, within a minute.</p>"
            f"{github}"
        )
        return document("Sign in", body, session=None, status=401, form_action=form_action)

    def github_start(self, start: Endpoint | None) -> Endpoint:
        """POST /library/signin/github: checked for a same-origin form, then on to GitHub."""

        async def endpoint(request: Request) -> Response:
            if start is None:
                return message_page("GitHub sign-in is not set up", "This server has no GitHub OAuth app.", status=404)
            if not self.auth.same_origin(request):
                return message_page("Request refused", "The sign-in form was sent from another site.", status=403)
            return await start(request)

        return endpoint

    async def signout(self, request: Request) -> Response:
        """POST /library/signout: end the session everywhere and drop the cookie."""
        session = self.auth.session(request)
        if session is not None:
            refusal = await self.auth.write_refusal(request, session)
            if refusal is not None:
                return message_page("Request refused", refusal, status=403, session=session)
            await anyio.to_thread.run_sync(self.sessions.end, session)
        response = message_page(
            "Signed out", "You are signed out. Run `thoughtline open` to sign in again.", status=200
        )
        response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict", secure=self._secure(request))
        return response
