"""A small stand-in for GitHub's OAuth web flow and `/user` API, served over real HTTP in tests.

It speaks the three calls Thoughtline makes — `GET /login/oauth/authorize` (approves at once for the
configured account, as GitHub does for an app the user already authorised), `POST
/login/oauth/access_token`, and `GET /api/v3/user` — and checks what real GitHub checks: client id
and secret, redirect URI, single-use codes, bearer token on `/user`.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

API_PREFIX = "/api/v3"


@dataclass
class FakeGitHub:
    """GitHub's state for one test: who is signed in, and what was issued."""

    client_id: str = "gh-client-id"
    client_secret: str = "gh-client-secret"
    account_id: int = 1001
    login: str = "owner-login"
    codes: dict[str, tuple[str, int, str]] = field(default_factory=dict)
    tokens: dict[str, tuple[int, str]] = field(default_factory=dict)
    authorize_requests: list[dict[str, str]] = field(default_factory=list)

    def sign_in_as(self, account_id: int, login: str) -> None:
        """Make the next authorizations come back as this account."""
        self.account_id, self.login = account_id, login

    async def authorize(self, request: Request) -> Response:
        params = dict(request.query_params)
        self.authorize_requests.append(params)
        if params.get("client_id") != self.client_id:
            return JSONResponse({"error": "unknown client"}, status_code=404)
        code = secrets.token_hex(10)
        self.codes[code] = (params.get("redirect_uri", ""), self.account_id, self.login)
        query = urlencode({"code": code, "state": params.get("state", "")})
        return RedirectResponse(f"{params.get('redirect_uri')}?{query}", status_code=302)

    async def access_token(self, request: Request) -> Response:
        form = await request.form()
        if form.get("client_id") != self.client_id or form.get("client_secret") != self.client_secret:
            return JSONResponse({"error": "incorrect_client_credentials"})
        entry = self.codes.pop(str(form.get("code")), None)
        if entry is None or entry[0] != form.get("redirect_uri"):
            return JSONResponse({"error": "bad_verification_code"})
        token = "gho_" + secrets.token_hex(18)
        self.tokens[token] = (entry[1], entry[2])
        return JSONResponse({"access_token": token, "token_type": "bearer", "scope": "read:user"})

    async def user(self, request: Request) -> Response:
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        who = self.tokens.get(token) if scheme.lower() in ("bearer", "token") else None
        if who is None:
            return JSONResponse({"message": "Bad credentials"}, status_code=401)
        return JSONResponse({"id": who[0], "login": who[1], "name": None})

    def app(self) -> Starlette:
        """The ASGI app to serve."""
        return Starlette(
            routes=[
                Route("/login/oauth/authorize", self.authorize, methods=["GET"]),
                Route("/login/oauth/access_token", self.access_token, methods=["POST"]),
                Route(f"{API_PREFIX}/user", self.user, methods=["GET"]),
            ]
        )
