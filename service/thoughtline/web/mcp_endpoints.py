"""The MCP transport wiring: the low-level MCP server, its two endpoints and what stands in front of them.

Each endpoint is a stack of ASGI wrappers, outermost first:

  /mcp         bearer gate → body gate → era gate (2026-07-28 only) → direct tools/call → SDK
  /mcp-compat  bearer gate → body gate → version gate (known versions) → direct tools/call → SDK

The bearer gate runs before any body is read, so an unauthenticated caller costs no parsing. The
body gate (web/jsonbody.py) is the one JSON reader for both routes and every era. The direct
paths (mcp/fastpath.py) answer a plain tools/call themselves; everything else reaches the SDK's
session manager, which runs for the app's lifetime (the group's `running`).
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from thoughtline import __version__
from thoughtline.mcp import ui_resource
from thoughtline.mcp.fastpath import DirectToolCalls, ModernToolCalls
from thoughtline.mcp.param_errors import ToolArgumentsShape
from thoughtline.mcp.tools import ToolRegistry
from thoughtline.web.auth import BearerGate
from thoughtline.web.eras import KnownVersionsOnly, ModernOnly
from thoughtline.web.groups import Extras, RouteGroup, Services
from thoughtline.web.jsonbody import JsonBodyGate

INSTRUCTIONS = (
    "Thoughtline stores step-by-step reasoning durably. Call sequentialthinking once per thought and "
    "keep passing the sequenceId it returns; read a sequence back with get_thought_history."
)
APPS_EXTENSION = "io.modelcontextprotocol/ui"
# Hosts read `_meta.ui.resourceUri` (MCP Apps 2026-01-26); the flat key is what earlier hosts read.
UI_TOOL_META = {"ui": {"resourceUri": ui_resource.PROCESS_URI}, "ui/resourceUri": ui_resource.PROCESS_URI}
MODERN_PATH = "/mcp"
COMPAT_PATH = "/mcp-compat"


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

    # Without this lookup the SDK's 2026 path lists every tool (and serialises every schema) on each
    # tools/call, just to check Mcp-Param-* headers: ~2 ms of CPU per call (issue 19).
    input_schemas = {tool.name: tool.input_schema for tool in registry.tools}
    server: Server[Any] = Server(
        "thoughtline",
        version=__version__,
        title="Thoughtline",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources if extras.resources else None,
        on_read_resource=read_resource if extras.resources else None,
        get_tool_input_schema=input_schemas.get,
    )
    server.extensions.update(extras.extensions)
    server.middleware.append(ToolArgumentsShape())  # inside the SDK's tracing span, which sees the answer
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


def group(services: Services) -> RouteGroup:
    """`/mcp` and `/mcp-compat`, their session managers, and the direct paths (on `app.state`)."""
    registry, limit = services.registry, services.settings.max_body_bytes
    server = build_mcp_server(registry, services.extras)
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)  # HostOriginGuard does it
    managers = [
        StreamableHTTPSessionManager(
            server, json_response=True, stateless=True, security_settings=security, max_request_body_size=limit
        )
        for _ in (MODERN_PATH, COMPAT_PATH)
    ]
    modern_sdk: ASGIApp = _Endpoint(managers[0])
    compat_sdk: ASGIApp = _Endpoint(managers[1])
    modern_direct = compat_direct = None
    if services.direct_tool_calls:
        modern_direct = ModernToolCalls(modern_sdk, registry, server.server_info_stamp)
        compat_direct = DirectToolCalls(compat_sdk, registry)
    modern = ModernOnly(modern_direct or modern_sdk, COMPAT_PATH)
    compat = KnownVersionsOnly(compat_direct or compat_sdk)
    auth = services.authenticator
    return RouteGroup(
        routes=[
            Route(MODERN_PATH, BearerGate(JsonBodyGate(modern, limit), auth, MODERN_PATH)),
            Route(COMPAT_PATH, BearerGate(JsonBodyGate(compat, limit), auth, COMPAT_PATH)),
        ],
        running=[manager.run for manager in managers],
        state={"direct_tool_calls": compat_direct, "modern_tool_calls": modern_direct},
    )
