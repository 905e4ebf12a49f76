"""The library in a browser (SPEC §9): the `/library` route group and how it is signed into.

`LibraryPages(settings, clock)` is built before the OAuth door (the door's GitHub callback hands
library sign-ins to it); `routes(router, library, door)` gives the routes to mount. Every page and
action runs through `_guarded`, the pages' outermost handler: no session, no page; a change needs
the session's CSRF token and a same-origin Origin; a refusal from the library is shown in the
pages' words (`refusals.py`) with a fitting status and a link back; a failure below is a 503
page, never a 500 or a trace.
With `THOUGHTLINE_LIBRARY=off` only signing in and reading a sequence by its id remain.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING

import apsw
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Match, Route

from thoughtline.api.wiring import library_search
from thoughtline.clock import Clock
from thoughtline.config import Settings
from thoughtline.errors import DomainError
from thoughtline.library.review import ProposalReview
from thoughtline.library.threads import Periods
from thoughtline.oauth import OAuthDoor
from thoughtline.pages import actions, views
from thoughtline.pages.gate import CookieAuth, as_session, undecodable_form
from thoughtline.pages.layout import message_page
from thoughtline.pages.refusals import explained
from thoughtline.pages.session import Session, Sessions
from thoughtline.pages.signin import SignIn
from thoughtline.pages.source import Source
from thoughtline.storage.faults import StorageError, caller_text
from thoughtline.storage.migrations import SchemaTooNewError
from thoughtline.storage.router import StoreRouter
from thoughtline.storage.signin import SigninStore
from thoughtline.ui_assets import ui_file

if TYPE_CHECKING:
    from thoughtline.mcp.library_tools import Library

logger = logging.getLogger(__name__)

View = Callable[[Request, Session, Source], Awaitable[Response]]
Endpoint = Callable[[Request], Awaitable[Response]]

# A function endpoint serves only GET unless told otherwise (Starlette adds HEAD).
_ANY_METHOD = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"]
CONFLICTS = frozenset({"thread_exists", "thread_archived", "branch_conflict", "idempotency_conflict"})
# The two assets, each one file of ours assembled from ui/: what the App shares comes first.
ASSET_PARTS = {
    "library.css": (("theme.css", "process.css", "library.css"), "text/css; charset=utf-8"),
    "library.js": (("render.js", "library.js"), "text/javascript; charset=utf-8"),
}


def refusal_status(code: str) -> int:
    """The HTTP status of a library refusal: 404 for a missing thing, 409 for a clash, else 400."""
    if code.endswith("_not_found"):
        return 404
    if code in CONFLICTS:
        return 409
    return 503 if code == "storage_error" else 400


class LibraryPages:
    """The sign-in machinery and, once the tool registry exists, the page routes."""

    def __init__(self, settings: Settings, clock: Clock) -> None:
        self.settings = settings
        self.clock = clock
        self.store = SigninStore(settings.data_dir, settings.journal)
        self.sessions = Sessions(self.store, clock)
        self.auth = CookieAuth(self.sessions, settings.public_url, settings.allowed_github_logins)
        self.signin = SignIn(self.sessions, self.auth, settings)

    def _guarded(self, view: View, source: Source, *, write: bool) -> Endpoint:
        auth = self.auth

        async def endpoint(request: Request) -> Response:
            session = auth.session(request)
            if session is None:
                if write:
                    return message_page("Not signed in", "Sign in again: run `thoughtline open`.", status=401)
                return RedirectResponse("/library/signin", status_code=303)
            if write:
                try:
                    refusal = await auth.write_refusal(request, session)
                    unreadable = await undecodable_form(request) if refusal is None else None
                    if refusal is None and unreadable is None:
                        # Parsed here (the request keeps it) even when the token came as a header, so a
                        # form the parser refuses is this 400 page and never reaches a view as a failure.
                        await request.form()
                except HTTPException as exc:  # Starlette's form parser: too many fields, no multipart boundary
                    text = f"{exc.detail} Nothing changed; send the form from its page again."
                    return message_page("The form could not be read", text, status=exc.status_code, session=session)
                if refusal is not None:
                    said = refusal.partition(": ")[2] or refusal  # the page speaks; the code is for scripts
                    return message_page("Request refused", said[:1].upper() + said[1:], status=403, session=session)
                if unreadable is not None:
                    return message_page("The form could not be read", unreadable, status=400, session=session)

            async def run() -> Response:
                try:
                    return await view(request, session, source)
                except DomainError as refused:
                    on = self.settings.library
                    said = await explained(refused, request, on)
                    back = (said.back, said.back_label)
                    status = refusal_status(refused.code)
                    return message_page(said.title, said.message, status=status, session=session, back=back, library=on)
                except SchemaTooNewError as exc:
                    return message_page("Your store cannot be read", f"storage_error: {exc}", status=503)
                except (StorageError, apsw.Error) as exc:
                    logger.warning("page %s: storage failure %s", _route(request), type(exc).__name__)
                    return message_page("Your store cannot be read", f"storage_error: {caller_text(exc)}", status=503)
                except Exception as exc:
                    # The message could quote stored text, so only the type and frames are logged.
                    frames = "".join(traceback.format_tb(exc.__traceback__))
                    logger.error("page %s failed with %s\n%s", _route(request), type(exc).__name__, frames)
                    text = "The server failed on this page; a change may or may not have been made, so reload first."
                    return message_page("Something went wrong", text, status=503, session=session)

            return await as_session(session, run)

        return endpoint

    def routes(self, router: StoreRouter, library: Library, door: OAuthDoor | None) -> list[BaseRoute]:
        """The `/library` routes over the library's operations; fewer with the library off."""
        settings = self.settings
        source = Source(
            router=router,
            clock=self.clock,
            periods=Periods(settings.thread_dormant_days, settings.thread_closed_days),
            review=ProposalReview(library.embedder, library.term_caches, settings.match_budget_seconds),
            search_fn=library_search(library) if settings.library else None,
        )

        def page(view: View) -> Endpoint:
            return self._guarded(view, source, write=False)

        def act(view: View) -> Endpoint:
            return self._guarded(view, source, write=True)

        sequence_steps = dict.fromkeys(actions.SEQUENCE_STEPS, act(actions.lifecycle))
        routes: list[BaseRoute] = [
            Route("/library/signin", self.signin.page, methods=["GET"]),
            Route(
                "/library/signin/github",
                self.signin.github_start(door.library_start if door else None),
                methods=["POST"],
            ),
            Route("/library/signout", self.signin.signout, methods=["POST"]),
            *(_asset(name) for name in ASSET_PARTS),
            _icon(),
            Route("/library/sequences/{sequence_id}", page(views.sequence_page), methods=["GET"]),
        ]
        if not self.settings.library:
            # Only reading remains, as on the API: no status steps, no curation.
            off = [*routes, Route("/library", page(_library_off), methods=["GET"])]
            return [*off, *_not_found_routes(off, False)]
        sequence_steps.update(dict.fromkeys(("pin", "unpin"), act(actions.membership)))
        routes = [
            *routes,
            Route("/library/sequences/{sequence_id}/{step}", _steps(sequence_steps), methods=["POST"]),
            Route("/library", page(views.library_page), methods=["GET"]),
            Route("/library/threads", page(views.threads_page), methods=["GET"]),
            Route("/library/threads", act(actions.create_thread), methods=["POST"]),
            Route("/library/threads/{name:path}", page(views.thread_page), methods=["GET"]),
            Route(
                "/library/threads/{name:path}/{step}",
                _steps(dict.fromkeys(actions.THREAD_STEPS, act(actions.thread_step))),
                methods=["POST"],
            ),
            Route("/library/proposals", page(views.proposals_page), methods=["GET"]),
            Route(
                "/library/proposals/{proposal_id}/{step}",
                _steps(dict.fromkeys(("accept", "reject"), act(actions.review))),
                methods=["POST"],
            ),
        ]
        return [*routes, *_not_found_routes(routes, True)]

    def close(self) -> None:
        """Close the sign-in database's kept connection."""
        self.store.close()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """While the app runs (its route group's resource): the sign-in database closes after."""
        try:
            yield
        finally:
            self.close()


def _route(request: Request) -> str:
    """The route's pattern (never the path itself: it carries thread names)."""
    return str(getattr(request.scope.get("route"), "path", "?"))


async def _library_off(request: Request, session: Session, source: Source) -> Response:
    """/library with the library off: what is left, instead of a bare 404 after signing in."""
    text = (
        "This server runs with THOUGHTLINE_LIBRARY=off, so there is no list, search, threads or proposals. "
        "A sequence is still read by its id at /library/sequences/<id> (the id is in the tool results)."
    )
    return message_page("The library is off", text, status=200, session=session, library=False)


def _not_found_routes(served: list[BaseRoute], library: bool) -> list[BaseRoute]:
    """Last of the group: any other /library path (or method) gets a page of ours, with its headers.

    Without them Starlette answers in plain text, without the pages' security headers. A path a
    route serves with other methods answers 405 with `Allow`, as the API does; with the library off
    the 404 names the setting, as `/library` and the API do.
    """

    async def not_found(request: Request) -> Response:
        allowed = sorted(
            {
                m
                for r in served
                if isinstance(r, Route) and r.matches(request.scope)[0] == Match.PARTIAL
                for m in r.methods or ()
            }
        )
        if allowed:
            text = f"This page does not take a {request.method} request; it takes {', '.join(allowed)}."
            response = message_page("Method not allowed", text, status=405, library=library)
            response.headers["Allow"] = ", ".join(allowed)
            return response
        if library:
            return message_page("Not found", "There is no page here; the library starts at /library.", status=404)
        text = (
            "There is no page here: this server runs with THOUGHTLINE_LIBRARY=off, so only signing in and reading "
            "a sequence by its id (/library/sequences/<id>) remain."
        )
        return message_page("Not found", text, status=404, library=False)

    return [Route(path, not_found, methods=_ANY_METHOD) for path in ("/library", "/library/{rest:path}")]


def _steps(table: dict[str, Endpoint]) -> Endpoint:
    """One route for `.../{step}`: the step's endpoint, or 404 for a step that does not exist."""

    async def run(request: Request) -> Response:
        endpoint = table.get(request.path_params.get("step", ""))
        if endpoint is None:
            return message_page("Not found", "That action does not exist here.", status=404)
        return await endpoint(request)

    return run


# The pages' icon: linked from every page, so a browser does not ask for /favicon.ico (a 404).
ICON = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">'
    '<path d="M2 4h12M2 8h9M2 12h6" stroke="#5b6b7f" stroke-width="2" stroke-linecap="round"/></svg>'
)


def _icon() -> Route:
    async def serve(request: Request) -> Response:
        headers = {"Cache-Control": "max-age=86400", "X-Content-Type-Options": "nosniff"}
        return Response(ICON, media_type="image/svg+xml", headers=headers)

    return Route("/library/assets/icon.svg", serve, methods=["GET"])


def _asset(name: str) -> Route:
    parts, media = ASSET_PARTS[name]
    body = "\n".join(ui_file(part) for part in parts).encode()
    etag = '"' + hashlib.sha256(body).hexdigest()[:20] + '"'
    headers = {"ETag": etag, "Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"}

    async def serve(request: Request) -> Response:
        if request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers=headers)
        return Response(body, media_type=media, headers=headers)

    return Route(f"/library/assets/{name}", serve, methods=["GET"])


__all__ = ["LibraryPages", "refusal_status"]
