"""The service's own pages: `GET /` (what this server is) and `GET /healthz` (is it up, is my store fine).

`/healthz` is open; `/healthz?deep=1` goes through the same bearer gate as the MCP endpoints (one
auth check, one 401 challenge) and then opens the caller's store and reads its schema version:
503 with `storage_error` when the store cannot be opened or is not current.
"""

from __future__ import annotations

from typing import Any

import apsw
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from thoughtline import __version__
from thoughtline.config import Settings
from thoughtline.identity import current_principal
from thoughtline.storage import migrations
from thoughtline.storage.faults import StorageError, caller_text
from thoughtline.storage.migrations import SchemaTooNewError
from thoughtline.storage.router import StoreRouter
from thoughtline.web.auth import BearerGate
from thoughtline.web.groups import RouteGroup, Services

DEEP_HEALTH_AUDIENCE = "/mcp"  # a deep check proves the token works where it will be used


def durability(settings: Settings) -> dict[str, Any]:
    """What `GET /` says about the disk: a loud warning when the stores would not survive."""
    if settings.ephemeral_storage is None:
        return {"durable": True}
    return {
        "durable": False,
        "warning": f"Not durable: {settings.ephemeral_storage}. Thoughts stored here will be lost.",
    }


def person_endpoints(settings: Settings) -> dict[str, str]:
    """The surfaces for a person and for scripts (docs/api.md): all of them with the library on,
    only the read of a sequence by its id with it off."""
    if not settings.library:
        return {"api": "/api/v1/sequences/{sequenceId} (the library is off: reading a sequence by its id only)"}
    return {
        "api": "/api/v1 (REST: sequences, search, threads, proposals, briefings; bearer token or session)",
        "library": "/library (pages for a person; sign in with the link `thoughtline open` prints)",
    }


class Index:
    """`GET /`: name, version, endpoints, tools, and whether storage is durable."""

    def __init__(self, services: Services) -> None:
        self._settings = services.settings
        self._tools = [tool.name for tool in services.registry.tools]
        self._people = person_endpoints(services.settings)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = JSONResponse(
            {
                "name": "thoughtline",
                "version": __version__,
                "description": "Durable sequential thinking over MCP; thoughts are committed before acknowledgement.",
                "endpoints": {
                    "mcp": "/mcp (protocol 2026-07-28)",
                    "mcp-compat": "/mcp-compat (protocols 2025-03-26, 2025-06-18, 2025-11-25)",
                    "health": "/healthz",
                    "oauth-protected-resource": "/.well-known/oauth-protected-resource/mcp",
                    **self._people,
                },
                "tools": self._tools,
                **durability(self._settings),
            }
        )
        await response(scope, receive, send)


class _StoreCheck:
    """The deep part, run behind the bearer gate: the caller's store opens and its schema is current."""

    def __init__(self, router: StoreRouter, settings: Settings) -> None:
        self._router = router
        self._settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body: dict[str, Any] = {"ok": True, "version": __version__, "durable": self._settings.ephemeral_storage is None}
        try:
            opened = await self._router.get(current_principal().user_key)
            version = await opened.read(migrations.schema_version)
        except (StorageError, SchemaTooNewError, apsw.Error) as exc:
            message = str(exc) if isinstance(exc, SchemaTooNewError) else caller_text(exc)
            problem = {"ok": False, "error": "storage_error", "message": message}
            await JSONResponse(problem, status_code=503)(scope, receive, send)
            return
        current = len(migrations.MIGRATIONS)
        body["store"] = {"schemaVersion": version, "current": version == current}
        body["ok"] = version == current
        await JSONResponse(body, status_code=200 if body["ok"] else 503)(scope, receive, send)


class Health:
    """`GET /healthz`: open liveness; `?deep=1` behind the MCP endpoints' own bearer gate."""

    def __init__(self, services: Services) -> None:
        self._settings = services.settings
        self._deep = BearerGate(
            _StoreCheck(services.router, services.settings), services.authenticator, DEEP_HEALTH_AUDIENCE
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope)
        if request.query_params.get("deep") not in (None, "", "0", "false"):
            await self._deep(scope, receive, send)
            return
        body = {"ok": True, "version": __version__, "durable": self._settings.ephemeral_storage is None}
        await JSONResponse(body)(scope, receive, send)


def group(services: Services) -> RouteGroup:
    """`/` and `/healthz`."""
    return RouteGroup(
        routes=[
            Route("/", Index(services), methods=["GET"]),
            Route("/healthz", Health(services), methods=["GET"]),
        ]
    )
