"""`create_app(settings)`: the Starlette application, its routes, middleware order and lifespan.

Middleware, outermost first: access log → Host/Origin/body-size guard → routes. The MCP endpoints
are wrapped again by the bearer gate, and `/mcp` by the protocol-era gate. Process resources
(store router, MCP session managers) live in the lifespan; nothing is created at import.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import apsw
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from thoughtline import __version__
from thoughtline.api.wiring import api_mount
from thoughtline.clock import Clock, SystemClock
from thoughtline.config import Settings, settings_from_process_env
from thoughtline.library.briefing import Periods
from thoughtline.mcp import ui_resource
from thoughtline.mcp.fastpath import DirectToolCalls
from thoughtline.mcp.library_tools import Library
from thoughtline.mcp.proposal_tools import ProposalTools
from thoughtline.mcp.thread_tools import ThreadTools
from thoughtline.mcp.tools import ToolRegistry, ToolSpec, core_tools
from thoughtline.oauth import CimdPolicy, OAuthDoor, build_oauth
from thoughtline.pages import LibraryPages
from thoughtline.storage import migrations
from thoughtline.storage.faults import StorageError, caller_text
from thoughtline.storage.migrations import SchemaTooNewError
from thoughtline.storage.router import StoreRouter
from thoughtline.web.auth import Authenticator, BearerGate, TokenVerifier
from thoughtline.web.eras import ModernOnly
from thoughtline.web.guards import AccessLog, HostOriginGuard

if TYPE_CHECKING:
    from thoughtline.library.embed import Embedder

logger = logging.getLogger(__name__)

SWEEP_SECONDS = 60.0
INSTRUCTIONS = (
    "Thoughtline stores step-by-step reasoning durably. Call sequentialthinking once per thought and "
    "keep passing the sequenceId it returns; read a sequence back with get_thought_history."
)


@dataclass
class Extras:
    """Optional parts plugged in by other features: extra tools, routes, the OAuth verifier, resources."""

    tools: Sequence[ToolSpec] = ()
    routes: Sequence[BaseRoute] = ()
    verifier: TokenVerifier | None = None
    resources: dict[str, tuple[types.Resource, str]] = field(default_factory=dict)
    extensions: dict[str, dict[str, Any]] = field(default_factory=dict)
    cimd: CimdPolicy | None = None  # how the door fetches client metadata documents (tests: a loopback CA)


def build_mcp_server(registry: ToolRegistry, extras: Extras) -> Server[Any]:
    """The low-level MCP server: tool listing/calls and the App resources."""

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=registry.tools)

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        return await registry.call(params.name, params.arguments)

    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[res for res, _ in extras.resources.values()])

    async def read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        found = extras.resources.get(uri)
        if found is None:
            # -32602 with data.uri is 2026-07-28's resource-not-found (SEP-2164); 2025 clients accept it too.
            raise MCPError(
                INVALID_PARAMS, f"unknown resource {uri[:100]}; list resources to see what exists", {"uri": uri}
            )
        resource, text = found
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(
                    uri=resource.uri, mime_type=resource.mime_type, text=text, _meta=resource.meta
                )
            ]
        )

    server: Server[Any] = Server(
        "thoughtline",
        version=__version__,
        title="Thoughtline",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources if extras.resources else None,
        on_read_resource=read_resource if extras.resources else None,
    )
    server.extensions.update(extras.extensions)
    return server


class _Endpoint:
    """Adapts a session manager to a Starlette route endpoint."""

    def __init__(self, manager: StreamableHTTPSessionManager) -> None:
        self._manager = manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("method") == "GET":
            # Stateless: the server never sends unsolicited messages, so a listening stream would only
            # hold a connection open (and a Lambda or Cloud Run instance busy). The spec allows 405.
            body = b'{"error":"method_not_allowed","message":"This endpoint is stateless; POST JSON-RPC requests."}'
            await send(
                {
                    "type": "http.response.start",
                    "status": 405,
                    "headers": [(b"allow", b"POST, DELETE"), (b"content-type", b"application/json")],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await self._manager.handle_request(scope, receive, send)


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


APPS_EXTENSION = "io.modelcontextprotocol/ui"


def app_resource() -> tuple[types.Resource, str]:
    """The MCP App (SPEC §6): its resource declaration and HTML."""
    resource = types.Resource(
        uri=ui_resource.PROCESS_URI,
        name="process.html",
        title="Thinking process",
        description="One card per thought; the final card shows the whole stored reasoning process.",
        mime_type=ui_resource.APP_MIME,
        _meta=ui_resource.resource_meta(),
    )
    return resource, ui_resource.load_process_html()


# Hosts read `_meta.ui.resourceUri` (MCP Apps 2026-01-26); the flat key is what earlier hosts read.
UI_TOOL_META = {"ui": {"resourceUri": ui_resource.PROCESS_URI}, "ui/resourceUri": ui_resource.PROCESS_URI}


def _thread_tools(settings: Settings) -> list[ToolSpec]:
    """The thread tools (SPEC §5.3); none exist with the library off."""
    if not settings.library:
        return []
    periods = Periods(settings.thread_dormant_days, settings.thread_closed_days)
    return ThreadTools(periods).tools()


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
    sends every compat request through the SDK's session machinery (tests compare the two paths).
    """
    clock = clock or SystemClock()
    pages = LibraryPages(settings, clock)
    extras, oauth_door = _with_oauth_door(settings, clock, extras or Extras(), pages)
    router = StoreRouter(
        settings.data_dir,
        settings.journal,
        clock,
        idle_seconds=settings.idle_store_seconds,
        retention_days=settings.retention_days,
        max_open=settings.max_open_stores,
    )
    extras = dataclasses.replace(
        extras,
        resources={ui_resource.PROCESS_URI: app_resource(), **extras.resources},
        extensions={APPS_EXTENSION: {"mimeTypes": [ui_resource.APP_MIME]}, **extras.extensions},
    )
    library = (
        Library(embedder_factory, background=settings.background_work)
        if embedder_factory is not None
        else Library(background=settings.background_work)
    )
    router.on_open.append(library.attach)
    router.on_close.append(library.detach)
    tools = [
        *core_tools(UI_TOOL_META, library=settings.library),
        *library.tools(discovery=settings.library),
        *_thread_tools(settings),
        *(ProposalTools(library.embedder).tools() if settings.library else []),
        *extras.tools,
    ]
    registry = ToolRegistry(tools, router, clock)
    server = build_mcp_server(registry, extras)
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)  # HostOriginGuard does it
    managers = {
        path: StreamableHTTPSessionManager(
            server,
            json_response=True,
            stateless=True,
            security_settings=security,
            max_request_body_size=settings.max_body_bytes,
        )
        for path in ("/mcp", "/mcp-compat")
    }
    authenticator = Authenticator(
        None if settings.token_problem else settings.api_token, extras.verifier, settings.public_url
    )
    modern: ASGIApp = BearerGate(ModernOnly(_Endpoint(managers["/mcp"])), authenticator, "/mcp")
    compat_endpoint = _Endpoint(managers["/mcp-compat"])
    direct = DirectToolCalls(compat_endpoint, registry, settings.max_body_bytes) if direct_tool_calls else None
    compat: ASGIApp = BearerGate(direct or compat_endpoint, authenticator, "/mcp-compat")

    async def index(request: Request) -> JSONResponse:
        return JSONResponse(
            {
                "name": "thoughtline",
                "version": __version__,
                "description": "Durable sequential thinking over MCP; thoughts are committed before acknowledgement.",
                "endpoints": {
                    "mcp": "/mcp (protocol 2026-07-28)",
                    "mcp-compat": "/mcp-compat (protocols 2025-03-26, 2025-06-18, 2025-11-25)",
                    "health": "/healthz",
                    "oauth-protected-resource": "/.well-known/oauth-protected-resource/mcp",
                },
                "tools": [tool.name for tool in registry.tools],
                **_durability(settings),
            }
        )

    async def healthz(request: Request) -> JSONResponse:
        body: dict[str, Any] = {"ok": True, "version": __version__, "durable": settings.ephemeral_storage is None}
        if request.query_params.get("deep") not in (None, "", "0", "false"):
            principal, sent = await authenticator.principal(request.scope, "/mcp")
            if principal is None:
                headers, _ = authenticator.challenge(request.scope, "/mcp", sent)
                return JSONResponse(
                    {
                        "ok": False,
                        "error": "unauthorized",
                        "message": "deep health checks need a bearer token",
                    },
                    status_code=401,
                    headers=headers,
                )
            try:
                opened = await router.get(principal.user_key)
                version = await opened.read(migrations.schema_version)
            except (StorageError, SchemaTooNewError, apsw.Error) as exc:
                message = str(exc) if isinstance(exc, SchemaTooNewError) else caller_text(exc)
                problem = {"ok": False, "error": "storage_error", "message": message}
                return JSONResponse(problem, status_code=503)
            current = len(migrations.MIGRATIONS)
            body["store"] = {"schemaVersion": version, "current": version == current}
            body["ok"] = version == current
        return JSONResponse(body, status_code=200 if body["ok"] else 503)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if settings.ephemeral_storage is not None:
            logger.warning("NOT DURABLE: %s", settings.ephemeral_storage)
        async with contextlib.AsyncExitStack() as stack:
            for manager in managers.values():
                await stack.enter_async_context(manager.run())
            sweeper = asyncio.create_task(_sweep(router))
            try:
                yield
            finally:
                sweeper.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await sweeper
                await library.close()  # one running batch, not the whole backlog
                await router.close_all()
                pages.close()
                if oauth_door is not None:
                    await oauth_door.aclose()

    routes: list[BaseRoute] = [
        Route("/", index, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/mcp", modern),
        Route("/mcp-compat", compat),
        *pages.routes(router, library, oauth_door),
        *api_mount(settings, router, clock, library, authenticator, pages.auth.api_authenticator()),
        *extras.routes,
    ]
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
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
    app.state.router = router
    app.state.registry = registry
    app.state.library = library
    app.state.direct_tool_calls = direct
    return app


def _durability(settings: Settings) -> dict[str, Any]:
    """What `GET /` says about the disk: a loud warning when the stores would not survive."""
    if settings.ephemeral_storage is None:
        return {"durable": True}
    return {
        "durable": False,
        "warning": f"Not durable: {settings.ephemeral_storage}. Thoughts stored here will be lost.",
    }


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
