"""The `/api/v1` route table (SPEC §9), mounted by `create_app` with one line.

With the library off (`THOUGHTLINE_LIBRARY=off`) only reading a sequence by its id is served;
every other API path answers 404 in the API's error shape and says why. Unknown paths and
methods answer in that shape too, never with Starlette's plain-text pages.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route

from thoughtline.api import proposals, search, sequences, threads
from thoughtline.api.auth import RequestAuthenticator
from thoughtline.api.calls import Api, Call, Search
from thoughtline.api.errors import error_response
from thoughtline.clock import Clock
from thoughtline.library.review import ProposalReview
from thoughtline.library.threads import Periods
from thoughtline.storage.router import StoreRouter

PREFIX = "/api/v1"
Handler = Callable[[Call], Awaitable[Response]]
Endpoint = Callable[[Request], Awaitable[Response]]
# Every route accepts these so that `_dispatch` answers a wrong one in the API's shape.
_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]

# (path, methods, handler, served with the library off)
ROUTES: tuple[tuple[str, tuple[str, ...], Handler, bool], ...] = (
    ("/sequences", ("GET",), sequences.list_sequences, False),
    ("/sequences/{sequence_id}", ("GET",), sequences.read_sequence, True),
    ("/sequences/{sequence_id}", ("DELETE",), sequences.delete_sequence, False),
    ("/sequences/{sequence_id}/{action}", ("POST",), sequences.lifecycle_action, False),
    ("/search", ("GET",), search.search, False),
    ("/threads", ("GET",), threads.list_threads, False),
    ("/threads", ("POST",), threads.create_thread, False),
    # Thread names may hold "/", so they match as paths; the longer routes come first.
    ("/threads/{name:path}/briefing", ("GET",), threads.briefing, False),
    ("/threads/{name:path}/members/{sequence_id}", ("PUT",), threads.pin, False),
    ("/threads/{name:path}/members/{sequence_id}", ("DELETE",), threads.unpin, False),
    ("/threads/{name:path}", ("GET",), threads.read_thread, False),
    ("/threads/{name:path}", ("PATCH",), threads.change_thread, False),
    ("/threads/{name:path}", ("DELETE",), threads.delete_thread, False),
    ("/proposals", ("GET",), proposals.list_proposals, False),
    ("/proposals/{proposal_id}/accept", ("POST",), proposals.accept, False),
    ("/proposals/{proposal_id}/reject", ("POST",), proposals.reject, False),
)


def _grouped(api: Api, library: bool) -> list[BaseRoute]:
    """One Starlette route per path, dispatching on the method (so a wrong method is 405, not 404)."""
    by_path: dict[str, dict[str, Handler]] = {}
    for path, methods, handler, always in ROUTES:
        if library or always:
            for method in methods:
                by_path.setdefault(path, {})[method] = handler
    routes: list[BaseRoute] = []
    for path, handlers in by_path.items():
        endpoints = {method: api.endpoint(h, f"{method} {PREFIX}{path}") for method, h in handlers.items()}
        routes.append(Route(path, _dispatch(endpoints, None if library else _fallback(library)), methods=_METHODS))
    return routes


def _dispatch(endpoints: Mapping[str, Endpoint], otherwise: Endpoint | None) -> Endpoint:
    """Routes a request to its method's endpoint; another method is `otherwise`, else 405 in the API's shape."""
    allow = ", ".join(endpoints)

    async def dispatch(request: Request) -> Response:
        endpoint = endpoints.get(request.method)
        if endpoint is None and otherwise is not None:
            return await otherwise(request)
        if endpoint is None:
            return error_response(
                "method_not_allowed",
                f"{request.method} is not served here; this route takes {allow}.",
                405,
                {"allow": allow},
            )
        return await endpoint(request)

    return dispatch


def _fallback(library: bool) -> Endpoint:
    async def not_found(request: Request) -> Response:
        if not library:
            return error_response(
                "not_found",
                "the library is off on this server (THOUGHTLINE_LIBRARY=off): the API serves only "
                "GET /api/v1/sequences/{sequenceId}.",
                404,
            )
        return error_response("not_found", "no such API route; the routes are listed in docs/api.md.", 404)

    return not_found


def api_routes(
    *,
    library: bool,
    router: StoreRouter,
    clock: Clock,
    periods: Periods,
    review: ProposalReview,
    search_fn: Search,
    authenticators: Sequence[RequestAuthenticator],
) -> list[BaseRoute]:
    """The `/api/v1` mount: every route of SPEC §9 (only history with `library` off)."""
    api = Api(router, clock, periods, review, search_fn, list(authenticators))
    routes = [*_grouped(api, library), Route("/{rest:path}", _fallback(library), methods=_METHODS)]
    return [Mount(PREFIX, routes=routes)]
