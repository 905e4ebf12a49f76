"""One API request's plumbing: the caller's store, query and body arguments, and the error mapping.

`Api.endpoint` wraps each route handler: it identifies the caller (`auth.py`), binds the
principal, opens the caller's own store and hands the handler a `Call`. It is the API's
outermost handler, so it alone catches every exception and answers in the one error shape
(`errors.py`): never a 500, never a stack trace, never an argument in the log.
"""

from __future__ import annotations

import json
import logging
import sys
import traceback
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import apsw
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from thoughtline.api.auth import RequestAuthenticator, identify
from thoughtline.api.errors import INTERNAL_MESSAGE, UNAVAILABLE, ApiRefusal, error_response, failure_response
from thoughtline.clock import Clock, now_ms
from thoughtline.domain.arguments import parse_proposal_id, require_sequence_id
from thoughtline.domain.coercion import reject_unknown
from thoughtline.errors import DomainError, InternalError, ThoughtlineError, invalid
from thoughtline.identity import reset_principal, set_principal
from thoughtline.library.review import ProposalReview
from thoughtline.library.threads import Periods
from thoughtline.storage.faults import StorageError, caller_text
from thoughtline.storage.migrations import SchemaTooNewError
from thoughtline.storage.router import StoreRouter, UserStore

Search = Callable[[UserStore, Mapping[str, Any]], Awaitable[dict[str, Any]]]
"""`(store, search_thoughts arguments) -> structured result`: the library's search."""

logger = logging.getLogger(__name__)

# Query parameters that may repeat; every other one is given once.
_REPEATABLE = frozenset({"alternatives"})


@dataclass
class Api:
    """What the routes share: the store router, clock, thread periods, review, search, and the doors."""

    router: StoreRouter
    clock: Clock
    periods: Periods
    review: ProposalReview
    search: Search
    authenticators: Sequence[RequestAuthenticator] = field(default_factory=list)

    def endpoint(
        self, handler: Callable[[Call], Awaitable[Response]], route: str
    ) -> Callable[[Request], Awaitable[Response]]:
        """A Starlette endpoint running `handler` for the authenticated caller in their own store.

        `route` names it in the log (its pattern: a path would carry thread names).
        """

        async def endpoint(request: Request) -> Response:
            try:
                principal = await identify(request, self.authenticators)
                bound = set_principal(principal)
                try:
                    opened = await self.router.get(principal.user_key)
                    with opened.in_use():  # not evicted between this request's reads and writes
                        return await handler(Call(request, opened, now_ms(self.clock), self))
                finally:
                    reset_principal(bound)
            except ApiRefusal as exc:
                return exc.response()
            except SchemaTooNewError as exc:
                return error_response("storage_error", str(exc), UNAVAILABLE)
            except (StorageError, apsw.Error) as exc:
                logger.warning("api %s: storage failure %s", route, type(exc).__name__)
                return error_response("storage_error", caller_text(exc), UNAVAILABLE)
            except ThoughtlineError as exc:
                return failure_response(exc)
            except Exception as exc:
                # The message could quote arguments (thought text), so only the type and frames are logged.
                frames = "".join(traceback.format_tb(exc.__traceback__))
                logger.error("api %s failed with %s\n%s", route, type(exc).__name__, frames)
                return failure_response(InternalError(INTERNAL_MESSAGE))

        return endpoint


@dataclass(frozen=True)
class Call:
    """One authenticated request: its store, the time it started, and its arguments."""

    request: Request
    store: UserStore
    now_ms: int
    api: Api
    # Path parameters read by the handler itself (`/threads/...`, `thread_paths.py`), over Starlette's.
    params: Mapping[str, str] = field(default_factory=dict)

    def path(self, name: str) -> str:
        """A path parameter (decoded)."""
        return self.params[name] if name in self.params else str(self.request.path_params[name])

    def sequence_id(self) -> str:
        """The path's sequence id, checked by the tools' rule; refused in the route's words.

        The tools' message names `sequenceId` and sequentialthinking; here the id is a path segment.
        """
        sent = self.path("sequence_id")
        try:
            return require_sequence_id({"sequenceId": sent})
        except DomainError:
            raise invalid(
                f"{sent[:80]!r} in the path is not a sequence id: send one as GET /api/v1/sequences lists them "
                "(seq_ followed by 32 hex characters)."
            ) from None

    def proposal_id(self) -> int:
        """The path's proposal id (its row), refused in the route's words."""
        sent = self.path("proposal_id")
        try:
            return parse_proposal_id({"proposalId": sent})
        except DomainError:
            raise invalid(
                f"{sent[:40]!r} in the path is not a proposal id: send one as GET /api/v1/proposals lists them "
                "(prp_ followed by digits)."
            ) from None

    def query(self, allowed: frozenset[str]) -> dict[str, Any]:
        """The query parameters as tool arguments: each given once (but `alternatives`), none unknown."""
        params = self.request.query_params
        if params and not allowed:
            names = ", ".join(repr(key) for key in sorted(set(params)))
            raise invalid(f"this route takes no query parameters; leave out {names}.")
        reject_unknown(params, allowed)
        args: dict[str, Any] = {}
        for key in params:
            values = params.getlist(key)
            if key in _REPEATABLE:
                args[key] = values
            elif len(values) > 1:
                raise invalid(f"'{key}' is given {len(values)} times; send it once.")
            else:
                args[key] = values[0]
        return args

    async def body(self, allowed: frozenset[str]) -> dict[str, Any]:
        """The JSON object the request carries, with only `allowed` fields."""
        kind = self.request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind != "application/json":
            raise invalid("send the request body as JSON with 'Content-Type: application/json'.")
        raw = await self.request.body()
        try:
            value = json.loads(raw.decode("utf-8"), parse_int=_whole_number)
            # A lone UTF-16 surrogate escape parses, but no store or answer could hold it.
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except _HugeNumber as exc:
            raise invalid(
                f"the request body holds a number of {exc.digits} digits, more than the {_MAX_DIGITS} "
                "this server reads; no field takes such a number, so send the value the field expects."
            ) from None
        except (ValueError, RecursionError):
            raise invalid("the request body is not valid JSON in UTF-8; send one JSON object.") from None
        if not isinstance(value, dict):
            raise invalid('the request body must be a JSON object, e.g. {"name": "hiring"}.')
        reject_unknown(value, allowed)
        return value


# Python refuses to read longer integers (a guard against quadratic conversion time).
_MAX_DIGITS = sys.get_int_max_str_digits() or 4300


class _HugeNumber(ValueError):
    """A JSON integer longer than Python will convert: valid JSON, but no field's value."""

    def __init__(self, digits: int) -> None:
        super().__init__(f"a number of {digits} digits")
        self.digits = digits


def _whole_number(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > _MAX_DIGITS:
        raise _HugeNumber(digits)
    return int(text)


def ok(body: Mapping[str, Any], status: int = 200) -> JSONResponse:
    """A successful JSON answer."""
    return JSONResponse(dict(body), status_code=status)
