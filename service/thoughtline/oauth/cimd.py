"""Client ID Metadata Documents: a URL as client_id, fetched by us without becoming an SSRF tool.

A CIMD client_id is an https URL whose document describes the client (its name, redirect URIs).
Fetching an attacker-chosen URL from inside our network is the classic SSRF, so the fetch:
- accepts https only, no credentials in the URL, a non-root path;
- resolves the host once, refuses any address that is not globally routable (private, loopback,
  link-local, reserved, multicast; IPv4-mapped IPv6 included), and connects to exactly that
  address (TLS still verified against the hostname), so DNS cannot be re-bound between check and use;
- follows no redirects, reads at most `max_bytes`, and gives up after `timeout` seconds.
Loopback is allowed only when a test builds the policy with `allow_loopback=True`.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import anyio
import httpx
from mcp.shared.auth import OAuthClientInformationFull
from pydantic import ValidationError

from thoughtline.oauth.clients import client_problem

MAX_BYTES = 16 * 1024
PUBLIC_CLIENT = "none"  # token_endpoint_auth_method of a client without a secret
TIMEOUT_SECONDS = 5.0


@dataclass(frozen=True)
class CimdPolicy:
    """How Client ID Metadata Documents may be fetched. The defaults are the production policy."""

    allow_loopback: bool = False
    verify: ssl.SSLContext | bool = True
    timeout: float = TIMEOUT_SECONDS
    max_bytes: int = MAX_BYTES
    cache_seconds: float = 3600.0


class CimdError(Exception):
    """The client_id URL or its document cannot be used; the message says which rule failed."""


def is_metadata_url(client_id: str) -> bool:
    """Whether a client_id is a URL (CIMD) rather than an id we issued at registration."""
    parts = urlsplit(client_id)
    return parts.scheme.lower() in ("https", "http") and bool(parts.netloc)


def _check_url(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    if parts.scheme != "https":
        raise CimdError(f"client_id {url!r} must be an https URL to be used as a Client ID Metadata Document")
    if parts.username or parts.password or parts.fragment:
        raise CimdError(f"client_id {url!r} must not contain credentials or a fragment")
    if parts.path in ("", "/"):
        raise CimdError(f"client_id {url!r} needs a path (e.g. /oauth/client.json), not the bare origin")
    if not parts.hostname:
        raise CimdError(f"client_id {url!r} has no host")
    return parts.hostname, parts.port or 443


def _address_allowed(address: str, allow_loopback: bool) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback:
        return allow_loopback
    return ip.is_global and not ip.is_multicast


async def _resolve(host: str, port: int, policy: CimdPolicy) -> str:
    try:
        infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        raise CimdError(f"the host {host!r} of the client_id does not resolve") from None
    addresses = [str(info[4][0]) for info in infos]
    refused = [a for a in addresses if not _address_allowed(a, policy.allow_loopback)]
    if not addresses or refused:
        # One bad address is enough to refuse: we must not let DNS pick a private target for us.
        raise CimdError(
            f"the client_id host {host!r} resolves to a private, loopback or reserved address; "
            "a Client ID Metadata Document must be served from a public address"
        )
    return addresses[0]


async def _download(url: str, policy: CimdPolicy) -> bytes:
    host, port = _check_url(url)
    address = await _resolve(host, port, policy)
    parts = urlsplit(url)
    pinned_host = f"[{address}]" if ":" in address else address
    pinned = urlunsplit(("https", f"{pinned_host}:{port}", parts.path, parts.query, ""))
    async with httpx.AsyncClient(
        verify=policy.verify, follow_redirects=False, timeout=policy.timeout, trust_env=False
    ) as client:
        request = client.build_request(
            "GET",
            pinned,
            headers={"Host": parts.netloc, "Accept": "application/json"},
            extensions={"sni_hostname": host},
        )
        with anyio.fail_after(policy.timeout):
            response = await client.send(request, stream=True)
            try:
                if response.status_code != 200:
                    raise CimdError(f"fetching the client_id document {url!r} answered HTTP {response.status_code}")
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > policy.max_bytes:
                        raise CimdError(f"the client_id document {url!r} is larger than {policy.max_bytes} bytes")
                return bytes(body)
            finally:
                await response.aclose()


def parse_document(url: str, raw: bytes) -> OAuthClientInformationFull:
    """Validate a fetched document and turn it into the client record /authorize and /token use."""
    try:
        doc = json.loads(raw)
    except ValueError:
        raise CimdError(f"the client_id document {url!r} is not JSON") from None
    if not isinstance(doc, dict):
        raise CimdError(f"the client_id document {url!r} must be a JSON object")
    if doc.get("client_id") != url:
        raise CimdError(f"the document's client_id must equal its URL exactly ({url!r})")
    if doc.get("token_endpoint_auth_method", "none") != "none" or "client_secret" in doc:
        raise CimdError("a Client ID Metadata Document client must be public: token_endpoint_auth_method 'none'")
    uris = doc.get("redirect_uris")
    if not isinstance(uris, list) or not all(isinstance(u, str) for u in uris):
        raise CimdError("the client_id document needs redirect_uris, a list of URLs")
    fields = {k: doc[k] for k in ("client_name", "client_uri", "logo_uri", "scope") if isinstance(doc.get(k), str)}
    try:
        client = OAuthClientInformationFull(
            client_id=url,
            redirect_uris=uris,
            token_endpoint_auth_method=PUBLIC_CLIENT,
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            **fields,
        )
    except ValidationError as exc:
        raise CimdError(f"the client_id document has invalid fields: {exc.errors()[0]['msg']}") from None
    # Checked as stored (normalised), with the same rules as /register (issue 11, F4).
    problem = client_problem(client, [str(uri) for uri in client.redirect_uris or []])
    if problem:
        raise CimdError(problem)
    return client


async def fetch_client(url: str, policy: CimdPolicy) -> OAuthClientInformationFull:
    """Fetch and validate the document behind a URL client_id."""
    try:
        raw = await _download(url, policy)
    except TimeoutError:
        raise CimdError(f"fetching the client_id document {url!r} took longer than {policy.timeout:g}s") from None
    except httpx.HTTPError as exc:
        raise CimdError(f"could not fetch the client_id document {url!r}: {type(exc).__name__}") from None
    return parse_document(url, raw)
