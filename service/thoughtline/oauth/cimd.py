"""Client ID Metadata Documents: a URL as client_id, fetched by us without becoming an SSRF tool.

A CIMD client_id is an https URL whose document describes the client (its name, redirect URIs).
Fetching an attacker-chosen URL from inside our network is the classic SSRF, so the fetch:
- accepts https only, no credentials in the URL, a non-root path;
- resolves the host once, refuses any address that is not globally routable (private, loopback,
  link-local, reserved, multicast; IPv6 forms that carry such an IPv4 address too, see
  addresses.py), and connects to exactly that address (TLS still verified against the hostname),
  so DNS cannot be re-bound between check and use;
- follows no redirects, and gives up after `timeout` seconds;
- reads at most `max_bytes` off the wire *and* at most `max_bytes` after decompression, counted
  while streaming, so a gzip bomb costs no more than a plain document (issue 11);
- answers every failure to fetch (refused, reset, TLS, timeout, non-200, too large) with one and
  the same message, so the fetch cannot be used to tell closed ports from open ones, and the
  provider remembers a failure briefly (`failure_seconds`) so retries do not hammer anyone.
Loopback is allowed only when a test builds the policy with `allow_loopback=True`.
"""

from __future__ import annotations

import json
import socket
import ssl
import zlib
from collections import OrderedDict
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import anyio
import httpx
from mcp.shared.auth import OAuthClientInformationFull
from pydantic import ValidationError

from thoughtline.oauth.addresses import address_allowed
from thoughtline.oauth.clients import client_problem

MAX_BYTES = 16 * 1024
PUBLIC_CLIENT = "none"  # token_endpoint_auth_method of a client without a secret
TIMEOUT_SECONDS = 5.0
MAX_REMEMBERED_FAILURES = 1000


@dataclass(frozen=True)
class CimdPolicy:
    """How Client ID Metadata Documents may be fetched. The defaults are the production policy."""

    allow_loopback: bool = False
    verify: ssl.SSLContext | bool = True
    timeout: float = TIMEOUT_SECONDS
    max_bytes: int = MAX_BYTES
    cache_seconds: float = 3600.0
    failure_seconds: float = 60.0


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


async def _resolve(url: str, host: str, port: int, policy: CimdPolicy) -> str:
    try:
        infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        raise CimdError(unreachable(url, policy)) from None
    addresses = [str(info[4][0]) for info in infos]
    refused = [a for a in addresses if not address_allowed(a, policy.allow_loopback)]
    if not addresses or refused:
        # One bad address is enough to refuse: we must not let DNS pick a private target for us.
        raise CimdError(
            f"the client_id host {host!r} resolves to a private, loopback or reserved address; "
            "a Client ID Metadata Document must be served from a public address"
        )
    return addresses[0]


def unreachable(url: str, policy: CimdPolicy) -> str:
    """The one message for every failure to fetch a document (no port-scan oracle)."""
    return (
        f"could not fetch the client_id document {url!r}: it must be served over https from a public "
        f"address and answer 200 with at most {policy.max_bytes} bytes of JSON within {policy.timeout:g}s"
    )


class _Unreachable(Exception):
    """Any failure of the fetch itself; reported as `unreachable(url)`."""


def _decoder(encoding: str) -> zlib._Decompress | None:
    if encoding in ("", "identity"):
        return None
    if encoding in ("gzip", "x-gzip", "deflate"):
        return zlib.decompressobj(zlib.MAX_WBITS | 32)  # gzip or zlib framing, detected
    raise _Unreachable


async def _read_capped(response: httpx.Response, max_bytes: int) -> bytes:
    """The body, decompressed by us with both the wire bytes and the decoded bytes capped."""
    decoder = _decoder(response.headers.get("content-encoding", "").strip().lower())
    body, wire = bytearray(), 0
    async for chunk in response.aiter_raw():
        wire += len(chunk)
        if wire > max_bytes:
            raise _Unreachable
        if decoder is None:
            body += chunk
        else:
            try:
                body += decoder.decompress(chunk, max_bytes + 1 - len(body))
            except zlib.error:
                raise _Unreachable from None
            if decoder.unconsumed_tail:
                raise _Unreachable
        if len(body) > max_bytes:
            raise _Unreachable
    return bytes(body)


async def _download(url: str, policy: CimdPolicy) -> bytes:
    host, port = _check_url(url)
    address = await _resolve(url, host, port, policy)
    parts = urlsplit(url)
    pinned_host = f"[{address}]" if ":" in address else address
    pinned = urlunsplit(("https", f"{pinned_host}:{port}", parts.path, parts.query, ""))
    async with httpx.AsyncClient(
        verify=policy.verify, follow_redirects=False, timeout=policy.timeout, trust_env=False
    ) as client:
        request = client.build_request(
            "GET",
            pinned,
            headers={"Host": parts.netloc, "Accept": "application/json", "Accept-Encoding": "gzip"},
            extensions={"sni_hostname": host},
        )
        try:
            with anyio.fail_after(policy.timeout):
                response = await client.send(request, stream=True)
                try:
                    if response.status_code != 200:
                        raise _Unreachable
                    return await _read_capped(response, policy.max_bytes)
                finally:
                    await response.aclose()
        except (TimeoutError, httpx.HTTPError, _Unreachable):
            raise CimdError(unreachable(url, policy)) from None


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
    return parse_document(url, await _download(url, policy))


class RecentFailures:
    """URLs whose fetch failed a moment ago, with the message; bounded, oldest forgotten first."""

    def __init__(self, max_entries: int = MAX_REMEMBERED_FAILURES) -> None:
        self._max = max_entries
        self._failed: OrderedDict[str, tuple[float, str]] = OrderedDict()

    def get(self, url: str, now: float) -> str | None:
        """The remembered message for `url`, while it is fresh."""
        entry = self._failed.get(url)
        if entry is None or entry[0] <= now:
            self._failed.pop(url, None)
            return None
        return entry[1]

    def remember(self, url: str, message: str, until: float) -> None:
        """Answer `message` for `url` without fetching until `until`."""
        self._failed.pop(url, None)
        self._failed[url] = (until, message)
        while len(self._failed) > self._max:
            self._failed.popitem(last=False)
