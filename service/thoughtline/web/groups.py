"""What a route group is, and the services create_app hands every group.

A route group is a set of Starlette routes plus the process resources they need running (entered
by the app's lifespan, in order) and the names they publish on `app.state` for tests and
benchmarks. `create_app` builds the services once and lists its groups, one line each: a new
surface (a REST API, pages) is a function `Services -> RouteGroup` and one more line there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from starlette.routing import BaseRoute

from thoughtline.clock import Clock
from thoughtline.config import Settings
from thoughtline.mcp.library_tools import Library
from thoughtline.mcp.tools import ToolRegistry, ToolSpec
from thoughtline.oauth.cimd import CimdPolicy
from thoughtline.storage.router import StoreRouter
from thoughtline.web.auth import Authenticator, TokenVerifier


@dataclass
class Extras:
    """Optional parts plugged in by other features: extra tools, routes, the OAuth verifier, resources."""

    tools: Sequence[ToolSpec] = ()
    routes: Sequence[BaseRoute] = ()
    verifier: TokenVerifier | None = None
    resources: dict[str, tuple[types.Resource, str]] = field(default_factory=dict)
    extensions: dict[str, dict[str, Any]] = field(default_factory=dict)
    cimd: CimdPolicy | None = None  # how the door fetches client metadata documents (tests: a loopback CA)


@dataclass(frozen=True)
class Services:
    """Everything a route group may use; built once per app by `create_app`."""

    settings: Settings
    clock: Clock
    router: StoreRouter
    library: Library
    registry: ToolRegistry
    authenticator: Authenticator
    extras: Extras
    direct_tool_calls: bool = True


@dataclass(frozen=True)
class RouteGroup:
    """Routes, the resources they need while the app runs, and what they publish on `app.state`."""

    routes: Sequence[BaseRoute]
    running: Sequence[Callable[[], AbstractAsyncContextManager[object]]] = ()
    state: Mapping[str, Any] = field(default_factory=dict)


GroupFactory = Callable[[Services], RouteGroup]
