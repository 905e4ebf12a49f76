"""`create_app(settings)`: the Starlette application, its route groups, middleware order and lifespan.

Middleware, outermost first: access log → Host/Origin/body-size guard → routes. Each route group
(web/groups.py) brings its routes and the resources they need running: the service's own pages
(web/site.py), the MCP endpoints behind the bearer gate (web/mcp_endpoints.py), the OAuth door.
Process resources (store router, library, MCP session managers) live in the lifespan; nothing is
created at import.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import BaseRoute

from thoughtline.api.wiring import api_mount
from thoughtline.clock import Clock, SystemClock
from thoughtline.config import Settings, settings_from_process_env
from thoughtline.library.briefing import Periods
from thoughtline.library.related_open import RelatedOnOpen
from thoughtline.mcp import ui_resource
from thoughtline.mcp.core_tools import core_tools
from thoughtline.mcp.library_tools import Library
from thoughtline.mcp.proposal_tools import ProposalTools
from thoughtline.mcp.thread_tools import ThreadTools
from thoughtline.mcp.tools import ToolRegistry, ToolSpec
from thoughtline.oauth import OAuthDoor, build_oauth
from thoughtline.pages import LibraryPages
from thoughtline.storage.router import StoreRouter
from thoughtline.web import mcp_endpoints, site
from thoughtline.web.auth import Authenticator
from thoughtline.web.groups import Extras, RouteGroup, Services
from thoughtline.web.guards import AccessLog, HostOriginGuard

if TYPE_CHECKING:
    from thoughtline.library.embed import Embedder

__all__ = ["Extras", "create_app", "create_app_from_env"]

logger = logging.getLogger(__name__)

SWEEP_SECONDS = 60.0


def _allowed_hosts(settings: Settings) -> list[str]:
    hosts = list(settings.allowed_hostnames)
    if settings.public_url:
        name = urlsplit(settings.public_url).hostname
        if name:
            hosts.append(name)
    if settings.host not in ("0.0.0.0", "::", ""):  # noqa: S104 - comparing, not binding
        hosts.append(settings.host)
    return hosts


def _with_oauth_door(
    settings: Settings, clock: Clock, extras: Extras, pages: LibraryPages
) -> tuple[Extras, OAuthDoor | None]:
    """Mount the OAuth door (issue 3) unless the caller brought its own verifier."""
    if extras.verifier is not None:
        return extras, None
    door = build_oauth(settings, clock, cimd=extras.cimd, library_signed_in=pages.signin.github_signed_in)
    return dataclasses.replace(extras, routes=[*extras.routes, *door.routes], verifier=door.verify), door


def _with_app_resource(extras: Extras) -> Extras:
    """The MCP App's resource and extension (SPEC §6), unless the caller replaced them."""
    return dataclasses.replace(
        extras,
        resources={ui_resource.PROCESS_URI: mcp_endpoints.app_resource(), **extras.resources},
        extensions={mcp_endpoints.APPS_EXTENSION: {"mimeTypes": [ui_resource.APP_MIME]}, **extras.extensions},
    )


def _tools(settings: Settings, library: Library, extras: Extras) -> list[ToolSpec]:
    """Every tool: the core three, the library's, the thread and proposal tools (library on), extras."""
    tools = [
        *core_tools(
            mcp_endpoints.UI_TOOL_META,
            library=settings.library,
            related=library.related if settings.related else None,
        ),
        *library.tools(discovery=settings.library),
    ]
    if settings.library:
        periods = Periods(settings.thread_dormant_days, settings.thread_closed_days)
        review = ProposalTools(library.embedder, library.term_caches, settings.match_budget_seconds)
        tools += [*ThreadTools(periods).tools(), *review.tools()]
    return [*tools, *extras.tools]


def _services(
    settings: Settings,
    clock: Clock,
    extras: Extras,
    embedder_factory: Callable[[], Embedder] | None,
    direct_tool_calls: bool,
) -> Services:
    router = StoreRouter(
        settings.data_dir,
        settings.journal,
        clock,
        idle_seconds=settings.idle_store_seconds,
        retention_days=settings.retention_days,
        max_open=settings.max_open_stores,
    )
    index_budget = settings.index_memory_mb * 2**20
    related = RelatedOnOpen(background=settings.background_work, memory_budget_bytes=settings.related_memory_mb * 2**20)
    library = (
        Library(embedder_factory, background=settings.background_work, index_budget_bytes=index_budget, related=related)
        if embedder_factory is not None
        else Library(background=settings.background_work, index_budget_bytes=index_budget, related=related)
    )
    router.on_open.append(library.attach)
    router.on_close.append(library.detach)
    registry = ToolRegistry(_tools(settings, library, extras), router, clock)
    static_token = None if settings.token_problem else settings.api_token
    authenticator = Authenticator(static_token, extras.verifier, settings.public_url)
    return Services(settings, clock, router, library, registry, authenticator, extras, direct_tool_calls)


def create_app(
    settings: Settings,
    *,
    clock: Clock | None = None,
    extras: Extras | None = None,
    embedder_factory: Callable[[], Embedder] | None = None,
    direct_tool_calls: bool = True,
) -> Starlette:
    """Build the whole service for `settings`.

    The outside boundaries are arguments: `clock`, `extras` (OAuth verifier, routes, resources) and
    `embedder_factory` (called on the first search, never at start). `direct_tool_calls=False`
    sends every tools/call through the SDK's machinery (tests compare the two paths).
    """
    clock = clock or SystemClock()
    pages = LibraryPages(settings, clock)  # before the door: its GitHub callback signs in to the pages
    extras, oauth_door = _with_oauth_door(settings, clock, extras or Extras(), pages)
    services = _services(settings, clock, _with_app_resource(extras), embedder_factory, direct_tool_calls)
    groups: Sequence[RouteGroup] = [
        mcp_endpoints.group(services),  # /mcp, /mcp-compat (first: the router tries routes in order)
        site.group(services),  # GET /, /healthz
        RouteGroup(routes=pages.routes(services.router, services.library, oauth_door), running=[pages.running]),
        RouteGroup(
            routes=api_mount(
                settings,
                services.router,
                clock,
                services.library,
                services.authenticator,
                pages.auth.api_authenticator(),
            )
        ),
        RouteGroup(routes=services.extras.routes),  # the OAuth door and callers' own routes
    ]

    routes: list[BaseRoute] = [route for group in groups for route in group.routes]
    app = Starlette(
        routes=routes,
        lifespan=_lifespan(services, groups, oauth_door),
        middleware=[
            Middleware(AccessLog),
            Middleware(
                HostOriginGuard,
                hosts=_allowed_hosts(settings),
                origins=settings.allowed_origin_hostnames,
                max_body_bytes=settings.max_body_bytes,
            ),
        ],
    )
    app.state.router = services.router
    app.state.registry = services.registry
    app.state.library = services.library
    for group in groups:
        for name, value in group.state.items():
            setattr(app.state, name, value)
    return app


def _lifespan(
    services: Services, groups: Sequence[RouteGroup], oauth_door: OAuthDoor | None
) -> Callable[[Starlette], contextlib.AbstractAsyncContextManager[None]]:
    """Start what the groups need running and the idle-store sweep; on the way out, close it all."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if services.settings.ephemeral_storage is not None:
            logger.warning("NOT DURABLE: %s", services.settings.ephemeral_storage)
        async with contextlib.AsyncExitStack() as stack:
            for running in (run for group in groups for run in group.running):
                await stack.enter_async_context(running())
            sweeper = asyncio.create_task(_sweep(services.router))
            try:
                yield
            finally:
                sweeper.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await sweeper
                await services.library.close()  # one running batch, not the whole backlog
                await services.router.close_all()
                if oauth_door is not None:
                    await oauth_door.aclose()

    return lifespan


async def _sweep(router: StoreRouter) -> None:
    while True:
        await asyncio.sleep(SWEEP_SECONDS)
        try:
            await router.close_idle()
        except Exception as exc:  # keep sweeping; a failed close is retried next round
            logger.warning("idle store sweep failed: %s", type(exc).__name__)


def create_app_from_env() -> Starlette:
    """Zero-argument factory for `uvicorn --factory thoughtline.web.app:create_app_from_env`."""
    return create_app(settings_from_process_env())
