"""Test support for the OAuth door: real servers on 127.0.0.1, a movable clock, a TLS test CA,
and a browser stand-in that walks the consent → GitHub → callback chain with httpx.

Servers run under uvicorn in a thread each (real sockets, real HTTP); readiness is an event, never a
sleep. Thoughtline is built by `create_app` exactly as `thoughtline serve` builds it (the OAuth door,
the library's sign-in): only the outside world is replaced, GitHub by `FakeGitHub` on its own
loopback port and the clock by `FakeClock`.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import hashlib
import ipaddress
import re
import secrets
import ssl
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import httpx
import httpx2
import uvicorn
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from mcp import Client
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from starlette.types import ASGIApp

from tests.fake_github import API_PREFIX, FakeGitHub
from thoughtline.config import Settings
from thoughtline.oauth import CimdPolicy
from thoughtline.web.app import Extras, create_app

START_TIMEOUT = 10.0


# An MCP initialize request: what each OAuth test sends with a token to see it accepted.
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


class FakeClock:
    """A clock tests move by hand; it starts at the real time so the SDK's own checks agree."""

    def __init__(self, start: float) -> None:
        self._now = start
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, ready: threading.Event) -> None:
        super().__init__(config)
        self._ready = ready

    async def startup(self, sockets: list[Any] | None = None) -> None:
        await super().startup(sockets)
        self._ready.set()


@dataclass
class RunningServer:
    """A server listening on 127.0.0.1; `url` is its origin."""

    url: str
    server: uvicorn.Server
    thread: threading.Thread


@contextmanager
def serve(app: ASGIApp, *, tls: tuple[Path, Path] | None = None) -> Iterator[RunningServer]:
    """Run `app` under uvicorn on a free loopback port until the block ends."""
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=0,
        log_level="warning",
        access_log=False,  # as in production: guards.AccessLog leaves query strings out
        lifespan="auto",
        ssl_certfile=str(tls[0]) if tls else None,
        ssl_keyfile=str(tls[1]) if tls else None,
    )
    ready = threading.Event()
    server = _Server(config, ready)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), name="test-server", daemon=True)
    thread.start()
    if not ready.wait(START_TIMEOUT) or not server.servers:
        raise RuntimeError("test server did not start")
    port = server.servers[0].sockets[0].getsockname()[1]
    scheme = "https" if tls else "http"
    try:
        yield RunningServer(f"{scheme}://127.0.0.1:{port}", server, thread)
    finally:
        server.should_exit = True
        thread.join(START_TIMEOUT)


@dataclass(frozen=True)
class TestCA:
    """A throwaway certificate authority and a leaf certificate for 127.0.0.1."""

    cert_file: Path
    key_file: Path
    context: ssl.SSLContext


def make_test_ca(directory: Path) -> TestCA:
    """Create a CA and a 127.0.0.1 certificate signed by it; the context trusts only that CA."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Thoughtline test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    cert_file, key_file = directory / "leaf.pem", directory / "leaf.key"
    cert_file.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    context = ssl.create_default_context(cadata=ca.public_bytes(serialization.Encoding.PEM).decode())
    return TestCA(cert_file, key_file, context)


_INPUT = re.compile(r'<input type="hidden" name="(\w+)" value="([^"]*)">')


@dataclass
class Browser:
    """Walks the sign-in chain like a browser: cookies kept, redirects followed, forms posted.

    It stops at the first redirect that leaves Thoughtline and GitHub (the client's redirect URI)
    and returns that URL; every page it saw is kept for assertions.
    """

    stops: tuple[str, ...]
    decision: str = "allow"
    pages: list[httpx.Response] = field(default_factory=list)
    cookies: httpx.Cookies = field(default_factory=httpx.Cookies)

    async def follow(self, client: httpx.AsyncClient, response: httpx.Response) -> httpx.Response | str:
        """Follow redirects inside our servers; return the final page, or the URL that left them."""
        while response.is_redirect:
            target = urljoin(str(response.url), response.headers["location"])
            if not target.startswith(self.stops):
                return target
            response = await client.get(target)
        self.pages.append(response)
        return response

    async def authorize(self, url: str) -> str:
        """Open an authorization URL, approve (or deny) on the consent page, return the client redirect."""
        async with httpx.AsyncClient(follow_redirects=False, timeout=10, cookies=self.cookies) as client:
            return await self._authorize(client, url)

    async def _authorize(self, client: httpx.AsyncClient, url: str) -> str:
        page = await self.follow(client, await client.get(url))
        if isinstance(page, str):
            return page
        if page.status_code != 200 or "<form" not in page.text:
            raise AssertionError(f"expected the consent page, got {page.status_code}: {page.text[:300]}")
        fields = {name: unescape(value) for name, value in _INPUT.findall(page.text)}
        fields["decision"] = self.decision
        posted = await client.post(urljoin(str(page.url), "/consent"), data=fields)
        result = await self.follow(client, posted)
        if isinstance(result, str):
            return result
        raise AssertionError(f"sign-in stopped at {result.status_code}: {result.text.split('<body>')[-1][:400]}")


def query_of(url: str) -> dict[str, str]:
    """The single-valued query parameters of a URL."""
    return {key: values[0] for key, values in parse_qs(urlsplit(url).query).items()}


class MemoryTokenStorage(TokenStorage):
    """Where the MCP client keeps its tokens and registration during one test."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


CLIENT_REDIRECT = "http://127.0.0.1:9/oauth/callback"


@dataclass
class SignInClient:
    """The official MCP client's OAuth support, with the browser step played by `Browser`."""

    server_url: str
    browser: Browser
    client_metadata_url: str | None = None
    storage: MemoryTokenStorage = field(default_factory=MemoryTokenStorage)
    redirects: list[str] = field(default_factory=list)

    async def _redirect(self, authorization_url: str) -> None:
        self.redirects.append(await self.browser.authorize(authorization_url))

    async def _callback(self) -> AuthorizationCodeResult:
        params = query_of(self.redirects[-1])
        if "code" not in params:
            raise AssertionError(f"the client was sent back without a code: {params}")
        return AuthorizationCodeResult(code=params["code"], state=params.get("state"), iss=params.get("iss"))

    def provider(self) -> OAuthClientProvider:
        """A fresh OAuthClientProvider sharing this client's storage."""
        return OAuthClientProvider(
            server_url=self.server_url,
            client_metadata=OAuthClientMetadata(
                client_name="Flow test client",
                redirect_uris=[CLIENT_REDIRECT],  # type: ignore[list-item]  # pydantic parses the str
                token_endpoint_auth_method="none",
            ),
            storage=self.storage,
            redirect_handler=self._redirect,
            callback_handler=self._callback,
            client_metadata_url=self.client_metadata_url,
        )


@asynccontextmanager
async def connected(oauth: OAuthClientProvider, url: str) -> AsyncIterator[Client]:
    """An MCP client session on `url` authenticated by `oauth` (/mcp speaks 2026-07-28 only)."""
    mode = "2026-07-28" if url.endswith("/mcp") else "legacy"
    async with (
        httpx2.AsyncClient(auth=oauth, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield client


TOKEN = "static-token-" + "y" * 40
OWNER_LOGIN = "Owner-Login"


@dataclass
class Stack:
    """Thoughtline, the fake GitHub, and the clock they share."""

    thoughtline: RunningServer
    github: RunningServer
    fake: FakeGitHub
    clock: FakeClock
    settings: Settings

    def browser(self, decision: str = "allow") -> Browser:
        """A fresh browser that stays within Thoughtline and GitHub."""
        return Browser(stops=(self.thoughtline.url, self.github.url), decision=decision)

    def sign_in_client(self, path: str = "/mcp-compat", client_metadata_url: str | None = None) -> SignInClient:
        """An MCP client for `path` that signs in through a fresh browser."""
        return SignInClient(self.thoughtline.url + path, self.browser(), client_metadata_url=client_metadata_url)


@asynccontextmanager
async def running_stack(
    tmp_path: Path,
    *,
    cimd: CimdPolicy | None = None,
    allowed: tuple[str, ...] = ("owner-login", "friend"),
    owner_login: str | None = OWNER_LOGIN,
    owner_id: int | None = None,
) -> AsyncIterator[Stack]:
    """Start the fake GitHub and Thoughtline (with the OAuth door) on loopback ports."""
    fake = FakeGitHub()
    with serve(fake.app()) as github:
        settings = Settings(
            data_dir=tmp_path / "data",
            api_token=TOKEN,
            github_client_id=fake.client_id,
            github_client_secret=fake.client_secret,
            allowed_github_logins=allowed,
            owner_login=owner_login,
            owner_id=owner_id,
            github_base_url=github.url,
            github_api_url=github.url + API_PREFIX,
        )
        clock = FakeClock(time.time())
        # The production wiring: create_app builds the door itself; the only extra is the client
        # metadata fetch policy (CIMD tests serve their documents from loopback under a test CA).
        with serve(create_app(settings, clock=clock, extras=Extras(cimd=cimd))) as thoughtline:
            yield Stack(thoughtline, github, fake, clock, settings)


@dataclass(frozen=True)
class SignedIn:
    """The result of one raw sign-in: the client and the token response."""

    client_id: str
    tokens: dict[str, Any]
    redirect: str


def pkce() -> tuple[str, str]:
    """A PKCE verifier and its S256 challenge."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


async def register(http: httpx.AsyncClient, redirect_uris: list[str] | None = None) -> httpx.Response:
    """Dynamic client registration of a public client."""
    return await http.post(
        "/register",
        json={
            "client_name": "Security test client",
            "redirect_uris": redirect_uris or [CLIENT_REDIRECT],
            "token_endpoint_auth_method": "none",
        },
    )


def authorize_url(base: str, client_id: str, challenge: str, **extra: str) -> str:
    """An /authorize URL for a public client with PKCE S256."""
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": CLIENT_REDIRECT,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "client-state-123",
        **extra,
    }
    return f"{base}/authorize?{urlencode(params)}"


async def sign_in(stack: Stack, http: httpx.AsyncClient, *, resource: str | None = None) -> SignedIn:
    """Register, consent, pass GitHub, and redeem the code by hand (no MCP client)."""
    client_id = (await register(http)).json()["client_id"]
    verifier, challenge = pkce()
    extra = {"resource": resource} if resource else {}
    redirect = await stack.browser().authorize(authorize_url(stack.thoughtline.url, client_id, challenge, **extra))
    code = query_of(redirect)["code"]
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": CLIENT_REDIRECT,
        "client_id": client_id,
        "code_verifier": verifier,
        **extra,
    }
    response = await http.post("/token", data=form)
    assert response.status_code == 200, response.text
    return SignedIn(client_id, response.json(), redirect)
