"""Building the API's mount from the app's parts: the one call `create_app` makes.

`api_mount(settings, router, clock, library, bearer_check, *more)` returns the `/api/v1` mount.
The bearer check is tried first; `more` are further authenticators (the pages' session cookie
with its CSRF and Origin checks), tried in order after it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from starlette.routing import BaseRoute

from thoughtline.api.auth import BearerCheck, RequestAuthenticator, bearer
from thoughtline.api.calls import Search
from thoughtline.api.routes import api_routes
from thoughtline.clock import Clock
from thoughtline.config import Settings
from thoughtline.library import searching
from thoughtline.library.review import ProposalReview
from thoughtline.library.threads import Periods
from thoughtline.mcp.library_tools import Library, parse_search, render
from thoughtline.storage.router import StoreRouter, UserStore


def library_search(library: Library) -> Search:
    """The library's search (`library/searching.py`), with `search_thoughts`' argument rules and JSON.

    The search runs in the library; the checks of its arguments (`parse_search`) and its JSON
    (`render`) still live with the tool in `mcp/library_tools.py`, so the API borrows both rather
    than keep a second copy that could drift. The pages' search box can take the same function.
    """

    async def run(opened: UserStore, args: Mapping[str, Any]) -> dict[str, Any]:
        return render(await searching.search(library, opened, parse_search(args))).structured

    return run


def api_mount(
    settings: Settings,
    router: StoreRouter,
    clock: Clock,
    library: Library,
    bearer_check: BearerCheck,
    *more: RequestAuthenticator,
) -> list[BaseRoute]:
    """The `/api/v1` mount for these settings (SPEC §9)."""
    return api_routes(
        library=settings.library,
        router=router,
        clock=clock,
        periods=Periods(settings.thread_dormant_days, settings.thread_closed_days),
        review=ProposalReview(library.embedder, library.term_caches, settings.match_budget_seconds),
        search_fn=library_search(library),
        authenticators=[bearer(bearer_check), *more],
    )
