"""Who a browser request speaks for, and whether a change it asks for came from our own page.

The session cookie names the caller for `/library` and `/api/v1` only (the MCP endpoints read
nothing but `Authorization`). Every state-changing request made with the cookie must carry a
same-origin `Origin` header and the session's CSRF token (form field `csrf`, or header
`X-CSRF-Token` for scripts); SameSite=Strict is a second lock, not the only one.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import unquote_to_bytes

from starlette.requests import Request
from starlette.responses import Response

from thoughtline.api.errors import ApiRefusal
from thoughtline.identity import Principal, login_key, reset_principal, set_principal
from thoughtline.oauth.urls import public_origin
from thoughtline.pages.session import COOKIE, Session, Sessions

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
CSRF_FIELD = "csrf"
CSRF_HEADER = "x-csrf-token"

Page = Callable[[Request, Session], Awaitable[Response]]

CSRF_MISSING = "csrf_refused: the form's security token is missing or belongs to another session; reload the page."
# The same refusal for a script calling /api/v1 with the cookie: it sends the token as a header.
API_CSRF_MISSING = (
    "the session's CSRF token is missing or belongs to another session; send it in the X-CSRF-Token header "
    "with every change made with the session cookie (docs/security.md). Nothing changed."
)


@dataclass(frozen=True)
class CookieAuth:
    """Reads the session cookie and checks the origin and CSRF token of writes made with it."""

    sessions: Sessions
    public_url: str | None
    allowed_logins: tuple[str, ...] = ()

    def session(self, request: Request) -> Session | None:
        """The live session the request's cookie carries, if any.

        A GitHub session ends as soon as its login leaves ALLOWED_GITHUB_LOGIN, as the account's
        OAuth tokens do; the owner's link session has no login and only its expiry.
        """
        session = self.sessions.from_cookie(request.cookies.get(COOKIE))
        if session is None or session.login is None:
            return session
        return session if login_key(session.login) in {login_key(a) for a in self.allowed_logins} else None

    def same_origin(self, request: Request) -> bool:
        """Whether the request's Origin header is exactly our own origin (absent counts as foreign)."""
        origin = request.headers.get("origin")
        return origin is not None and origin.rstrip("/").lower() == public_origin(request, self.public_url)

    async def write_refusal(self, request: Request, session: Session) -> str | None:
        """Why a state-changing request may not proceed, or None when its origin and token check out."""
        if not self.same_origin(request):
            return "csrf_refused: this change was sent from another site (its Origin is not this server's)."
        sent = request.headers.get(CSRF_HEADER)
        if sent is None and request.headers.get("content-type", "").startswith(
            ("application/x-www-form-urlencoded", "multipart/form-data")
        ):
            await request.body()  # kept by the request, so `undecodable_form` can read the bytes after the form
            value = (await request.form()).get(CSRF_FIELD)
            sent = value if isinstance(value, str) else None
        if not session.csrf_matches(sent):
            return CSRF_MISSING
        return None

    def api_authenticator(self) -> Callable[[Request], Awaitable[Principal | None]]:
        """The API's cookie door: the session's principal, with the same checks on every change."""

        async def identify(request: Request) -> Principal | None:
            session = self.session(request)
            if session is None:
                return None
            if request.method not in SAFE_METHODS:
                refusal = await self.write_refusal(request, session)
                if refusal is not None:
                    code, _, message = refusal.partition(": ")
                    raise ApiRefusal(403, code, API_CSRF_MISSING if refusal == CSRF_MISSING else message)
            return session.principal()

        return identify


async def undecodable_form(request: Request) -> str | None:
    """Why a form body's text cannot be read as UTF-8, or None when it can (or it is no form).

    Starlette reads urlencoded bytes as Latin-1 and invalid percent-escapes as U+FFFD, and a
    multipart part that is not UTF-8 as Latin-1: either would store text nobody typed. The API
    refuses such a body too ("not valid JSON in UTF-8"). The pages take no file uploads, so a
    multipart body is plain text throughout.
    """
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind not in ("application/x-www-form-urlencoded", "multipart/form-data"):
        return None
    body = await request.body()  # kept by the request: the form is parsed from it afterwards
    try:
        if kind == "multipart/form-data":
            body.decode("utf-8")
        else:
            # A browser percent-encodes every non-ASCII byte, so the body itself is ASCII.
            for part in body.decode("ascii").split("&"):
                unquote_to_bytes(part.replace("+", " ")).decode("utf-8")
    except UnicodeDecodeError:
        return (
            "The form's text could not be read: a form is sent as percent-encoded UTF-8, as a browser sends it, "
            "and this one was not, so nothing was stored. Go back, reload the page and send the form again."
        )
    return None


async def as_session(session: Session, run: Callable[[], Awaitable[Response]]) -> Response:
    """Run `run` with the session's principal bound, as the bearer door binds a token's."""
    token = set_principal(session.principal())
    try:
        return await run()
    finally:
        reset_principal(token)
