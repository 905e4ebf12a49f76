"""Thoughtline's OAuth 2.1 authorization server ("the OAuth door"), with GitHub as upstream identity.

`build_oauth(settings, clock)` returns an `OAuthDoor`: the routes to mount (discovery documents,
/authorize, /consent, /callback, /token, /register, /revoke), `verify` for the bearer middleware of
the MCP endpoints, and `aclose` for shutdown. One module per endpoint or concern lives beside this
file; docs/oauth.md explains the flow and how to operate it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial

import anyio
from mcp.server.auth.handlers.authorize import AuthorizationHandler
from mcp.server.auth.handlers.register import RegistrationHandler
from mcp.server.auth.handlers.token import TokenHandler
from mcp.server.auth.middleware.client_auth import ClientAuthenticator
from mcp.server.auth.settings import ClientRegistrationOptions
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, RequestBodyLimitMiddleware
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route, request_response
from starlette.types import ASGIApp

from thoughtline.clock import Clock, SystemClock
from thoughtline.config import Settings
from thoughtline.identity import Principal
from thoughtline.oauth.authorize import authorize_endpoint
from thoughtline.oauth.callback import github_callback
from thoughtline.oauth.cimd import CimdPolicy
from thoughtline.oauth.clients import MAX_BODY_BYTES
from thoughtline.oauth.consent import show_consent, submit_consent
from thoughtline.oauth.context import DoorContext
from thoughtline.oauth.errors import not_configured
from thoughtline.oauth.github import AuthlibGitHub, GitHubIdentity
from thoughtline.oauth.library_signin import LibrarySignedIn, start_library_sign_in
from thoughtline.oauth.metadata import (
    authorization_server_metadata,
    json_document,
    protected_resource_metadata,
)
from thoughtline.oauth.provider import Provider
from thoughtline.oauth.ratelimit import RateLimiter
from thoughtline.oauth.register import register_endpoint
from thoughtline.oauth.revoke import revoke_endpoint
from thoughtline.oauth.storage import AuthStore
from thoughtline.oauth.token import token_endpoint
from thoughtline.oauth.urls import MCP_PATHS, PROTECTED_RESOURCE_PREFIX, canonical_resource, public_origin

__all__ = ["CimdPolicy", "Clock", "OAuthDoor", "SystemClock", "Verifier", "build_oauth"]

Verifier = Callable[[str, str], Awaitable[Principal | None]]
Endpoint = Callable[[Request], Awaitable[Response]]


@dataclass(frozen=True)
class OAuthDoor:
    """What the app needs from the authorization server."""

    routes: list[BaseRoute]
    verify: Verifier
    aclose: Callable[[], Awaitable[None]]
    # POST /library/signin/github's work once the pages checked the form; None without GitHub.
    library_start: Endpoint | None = None


def _limited(endpoint: Endpoint, max_bytes: int = DEFAULT_MAX_REQUEST_BODY_SIZE) -> ASGIApp:
    return RequestBodyLimitMiddleware(request_response(endpoint), max_bytes)


def _cors(endpoint: Endpoint, methods: list[str], max_bytes: int = DEFAULT_MAX_REQUEST_BODY_SIZE) -> ASGIApp:
    # Browser-based MCP clients (e.g. the MCP Inspector) call these cross-origin; no cookies involved.
    # CORS outermost so a 413 from the body limit still carries CORS headers.
    return CORSMiddleware(
        _limited(endpoint, max_bytes),
        allow_origins=["*"],
        allow_methods=methods,
        allow_headers=[MCP_PROTOCOL_VERSION_HEADER],
    )


def build_oauth(
    settings: Settings,
    clock: Clock | None = None,
    *,
    github: GitHubIdentity | None = None,
    cimd: CimdPolicy | None = None,
    library_signed_in: LibrarySignedIn | None = None,
) -> OAuthDoor:
    """Wire the authorization server. Nothing is opened until the first request needs the database."""
    clock = clock or SystemClock()
    store = AuthStore(settings.data_dir, settings.journal)
    provider = Provider(settings=settings, store=store, clock=clock, cimd=cimd or CimdPolicy())
    ctx = DoorContext(
        settings=settings,
        provider=provider,
        github=github or AuthlibGitHub(settings),
        clock=clock,
        library_signed_in=library_signed_in,
    )
    authenticator = ClientAuthenticator(provider)
    token_handler = TokenHandler(provider, authenticator)
    registration = RegistrationHandler(provider, ClientRegistrationOptions(enabled=True))
    authorization = AuthorizationHandler(provider)
    limiter = RateLimiter(clock, settings.registrations_per_hour)

    def issuer(request: Request) -> str:
        return public_origin(request, settings.public_url)

    async def as_metadata(request: Request) -> Response:
        return json_document(authorization_server_metadata(issuer(request)), request)

    def pr_metadata(path: str) -> Endpoint:
        async def endpoint(request: Request) -> Response:
            origin = issuer(request)
            return json_document(protected_resource_metadata(origin + path, origin), request)

        return endpoint

    async def consent(request: Request) -> Response:
        if not settings.github_enabled:
            return not_configured()
        if request.method == "POST":
            return await submit_consent(ctx, request)
        return await show_consent(ctx, request)

    async def callback(request: Request) -> Response:
        if not settings.github_enabled:
            return not_configured()
        return await github_callback(ctx, request)

    routes: list[BaseRoute] = [
        Route(
            "/.well-known/oauth-authorization-server",
            _cors(as_metadata, ["GET", "OPTIONS"]),
            methods=["GET", "OPTIONS"],
        ),
        *(
            Route(
                PROTECTED_RESOURCE_PREFIX + path,
                _cors(pr_metadata(path), ["GET", "OPTIONS"]),
                methods=["GET", "OPTIONS"],
            )
            for path in MCP_PATHS
        ),
        Route(
            "/authorize",
            _limited(partial(authorize_endpoint, provider, authorization)),
            methods=["GET", "POST"],
        ),
        Route("/consent", _limited(consent), methods=["GET", "POST"]),
        Route("/callback", _limited(callback), methods=["GET"]),
        Route(
            "/token",
            _cors(partial(token_endpoint, provider, token_handler), ["POST", "OPTIONS"]),
            methods=["POST", "OPTIONS"],
        ),
        Route(
            "/register",
            _cors(partial(register_endpoint, provider, registration, limiter), ["POST", "OPTIONS"], MAX_BODY_BYTES),
            methods=["POST", "OPTIONS"],
        ),
        Route(
            "/revoke",
            _cors(partial(revoke_endpoint, provider, authenticator), ["POST", "OPTIONS"]),
            methods=["POST", "OPTIONS"],
        ),
    ]

    async def verify(token: str, resource_url: str) -> Principal | None:
        """The caller behind an OAuth access token, if it is live and was issued for `resource_url`."""
        access = await provider.load_access_token(token)
        resource = canonical_resource(resource_url)
        if access is None or resource not in access.resources:
            return None
        return Principal(
            user_key=access.user_key, via="oauth", login=access.login, resource=resource, client_id=access.client_id
        )

    async def aclose() -> None:
        await anyio.to_thread.run_sync(store.close)

    async def library_start(request: Request) -> Response:
        return await start_library_sign_in(ctx, request)

    started = library_start if settings.github_enabled and library_signed_in is not None else None
    return OAuthDoor(routes=routes, verify=verify, aclose=aclose, library_start=started)
