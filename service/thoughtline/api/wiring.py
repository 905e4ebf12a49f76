"""Building the API's mount from the app's parts: the one call `create_app` makes.

`api_mount(settings, router, clock, library, bearer_check, *more)` returns the `/api/v1` mount.
The bearer check is tried first; `more` are further authenticators (the pages' session cookie
with its CSRF and Origin checks), tried in order after it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from starlette.routing import BaseRoute

from thoughtline.api.auth import BearerCheck, RequestAuthenticator, bearer
from thoughtline.api.calls import Search
from thoughtline.api.routes import api_routes
from thoughtline.clock import Clock
from thoughtline.config import Settings
from thoughtline.library.review import ProposalReview
from thoughtline.library.threads import Periods
from thoughtline.storage.router import StoreRouter, UserStore

if TYPE_CHECKING:
    from thoughtline.mcp.library_tools import Library


def _search(library: Library, clock: Clock) -> Search:
    """Search through `search_thoughts`' own handler: the orchestration still lives with the tool.

    The narrowest seam until the search orchestration moves into the library (issue 17's
    `search-alt` work); then this calls that library function instead.
    """
    from thoughtline.mcp.tools import ToolContext

    handler = next(spec.handler for spec in library.tools(discovery=True) if spec.tool.name == "search_thoughts")

    async def run(opened: UserStore, args: Mapping[str, Any]) -> dict[str, Any]:
        return (await handler(args, ToolContext(store=opened, clock=clock))).structured

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
        review=ProposalReview(library.embedder),
        search_fn=_search(library, clock),
        authenticators=[bearer(bearer_check), *more],
    )
