"""The `/api/v1` route table (SPEC §9), mounted by `create_app` with one line.

With the library off (`THOUGHTLINE_LIBRARY=off`) only reading a sequence by its id is served;
every other API path answers 404 in the API's error shape and says why. Unknown paths and
methods answer in that shape too, never with Starlette's plain-text pages.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import replace

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route, request_response
from starlette.types import Receive, Scope, Send

from thoughtline.api import proposals, search, sequences, thread_paths, threads
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
# The order methods are listed in an `Allow` header.
_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]

# (path, methods, handler, served with the library off)
ROUTES: tuple[tuple[str, tuple[str, ...], Handler, bool], ...] = (
    ("/sequences", ("GET",), sequences.list_sequences, False),
    ("/sequences/{sequence_id}", ("GET",), sequences.read_sequence, True),
    ("/sequences/{sequence_id}", ("DELETE",), sequences.delete_sequence, False),
    ("/sequences/{sequence_id}/{action}", ("POST",), sequences.lifecycle_action, False),
    ("/search", ("GET",), search.search, False),
    ("/threads", ("GET",), threads.list_threads, False),
    ("/threads", ("POST",), threads.create_thread, False),
    # Thread names may hold "/": these four paths are served as one route (`thread_paths.py`).
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
    """One Starlette route per path, dispatching on the method (so a wrong method is 405, not 404).

    The `/threads/{name}...` routes are one route together: a thread name may hold "/", so which
    of them a path means is read by `thread_paths.py`, not by Starlette's first match.
    """
    by_path: dict[str, dict[str, Handler]] = {}
    for path, methods, handler, always in ROUTES:
        if library or always:
            for method in methods:
                by_path.setdefault(path, {})[method] = handler
    family = {path: handlers for path, handlers in by_path.items() if path.startswith(thread_paths.FAMILY)}
    routes: list[BaseRoute] = []
    for path, handlers in by_path.items():
        if path in family:
            if path == thread_paths.FAMILY:
                routes.append(_any_method(path, _threads(api, family)))
            continue
        endpoints = {method: api.endpoint(h, f"{method} {PREFIX}{path}") for method, h in handlers.items()}
        routes.append(_any_method(path, _dispatch(endpoints, None if library else _fallback(library))))
    return routes


class _EveryMethod:
    """An endpoint as an ASGI app, so that its route takes every method (TRACE, PROPFIND, ...).

    Starlette gives a route whose endpoint is a function GET only, and answers any method outside
    a route's list with its own plain-text 405; the dispatchers answer them in the API's shape.
    """

    def __init__(self, endpoint: Endpoint) -> None:
        self._app = request_response(endpoint)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._app(scope, receive, send)


def _any_method(path: str, endpoint: Endpoint) -> Route:
    return Route(path, _EveryMethod(endpoint), methods=None)


def _as_served(method: str) -> str:
    """HEAD is answered as GET (the server sends the headers only, RFC 9110 §9.3.2)."""
    return "GET" if method == "HEAD" else method


def _allow(methods: Iterable[str]) -> str:
    """The `Allow` header value: these methods, and HEAD wherever GET is served."""
    given = set(methods)
    return ", ".join(m for m in _METHODS if m in given or (m == "HEAD" and "GET" in given))


def _not_allowed(method: str, allow: str) -> Response:
    return error_response(
        "method_not_allowed", f"{method} is not served here; this route takes {allow}.", 405, {"allow": allow}
    )


def _dispatch(endpoints: Mapping[str, Endpoint], otherwise: Endpoint | None) -> Endpoint:
    """Routes a request to its method's endpoint; another method is `otherwise`, else 405 in the API's shape."""
    allow = _allow(list(endpoints))

    async def dispatch(request: Request) -> Response:
        endpoint = endpoints.get(_as_served(request.method))
        if endpoint is None and otherwise is not None:
            return await otherwise(request)
        if endpoint is None:
            return _not_allowed(request.method, allow)
        return await endpoint(request)

    return dispatch


def _threads(api: Api, family: Mapping[str, Mapping[str, Handler]]) -> Endpoint:
    """The `/threads/{name}...` routes as one: the path's readings that serve the method, then the store decides."""

    def served(request: Request) -> tuple[list[thread_paths.Reading], str]:
        parts = thread_paths.segments(request.scope.get("raw_path"), str(request.path_params["name"]))
        found = thread_paths.readings(parts, list(family))
        method = _as_served(request.method)
        allow = _allow(m for reading in found for m in family[reading.route])
        return [reading for reading in found if method in family[reading.route]], allow

    async def run(call: Call) -> Response:
        reading = await thread_paths.choose(call.store, served(call.request)[0])
        handler = family[reading.route][_as_served(call.request.method)]
        return await handler(replace(call, params=reading.params))

    methods = {method for handlers in family.values() for method in handlers}
    endpoints = {method: api.endpoint(run, f"{method} {PREFIX}{thread_paths.FAMILY}/...") for method in methods}

    async def dispatch(request: Request) -> Response:
        readings, allow = served(request)
        if not readings:  # before authentication, as every other route's 405
            return _not_allowed(request.method, allow)
        return await endpoints[_as_served(request.method)](request)

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
    routes = [*_grouped(api, library), _any_method("/{rest:path}", _fallback(library))]
    return [Mount(PREFIX, routes=routes)]
