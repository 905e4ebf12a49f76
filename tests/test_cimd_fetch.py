"""Fetching Client ID Metadata Documents safely (issue 11: F4 and the CIMD items of "also fix").

Documents are served over real TLS on 127.0.0.1 by a throwaway CA (the policy allows loopback
only for these tests); Thoughtline runs with the fake GitHub and the injected clock.
"""

from __future__ import annotations

import gzip
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests import oauth_support
from tests.oauth_support import CLIENT_REDIRECT, authorize_url, make_test_ca, pkce, running_stack, serve
from tests.support import free_port
from thoughtline.oauth.addresses import address_allowed
from thoughtline.oauth.cimd import CimdError, CimdPolicy, fetch_client

pytestmark = pytest.mark.anyio


@dataclass
class Documents:
    """What the metadata server answers, path by path, and how often it was asked."""

    status: int = 200
    redirect_uris: list[str] = field(default_factory=lambda: [CLIENT_REDIRECT])
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    hits: int = 0

    async def document(self, request: Request) -> Response:
        self.hits += 1
        if self.body is not None:
            return Response(self.body, status_code=self.status, headers=self.headers, media_type="application/json")
        doc: dict[str, Any] = {
            "client_id": str(request.url),
            "client_name": "CIMD test client",
            "redirect_uris": self.redirect_uris,
            "token_endpoint_auth_method": "none",
        }
        return JSONResponse(doc, status_code=self.status)


@contextmanager
def metadata_server(tmp_path: Path, docs: Documents) -> Iterator[tuple[str, oauth_support.TestCA]]:
    ca = make_test_ca(tmp_path)
    with serve(Starlette(routes=[Route("/client.json", docs.document)]), tls=(ca.cert_file, ca.key_file)) as running:
        yield running.url + "/client.json", ca


def refusal(response: httpx.Response) -> str:
    assert response.status_code == 400, response.text
    assert response.json()["error"] == "invalid_client"
    return str(response.json()["error_description"])


async def test_a_document_redirect_that_only_looks_like_loopback_is_refused(tmp_path: Path) -> None:
    sneaky = "http://evil.example\\@127.0.0.1/cb"
    docs = Documents(redirect_uris=[CLIENT_REDIRECT, sneaky])
    with metadata_server(tmp_path, docs) as (url, ca):
        async with (
            running_stack(tmp_path, cimd=CimdPolicy(allow_loopback=True, verify=ca.context)) as stack,
            httpx.AsyncClient(base_url=stack.thoughtline.url) as http,
        ):
            described = refusal(await http.get(authorize_url(stack.thoughtline.url, url, pkce()[1])))
            assert "evil.example" in described
            registered = await http.post(
                "/register", json={"redirect_uris": [sneaky], "token_endpoint_auth_method": "none"}
            )
            assert registered.status_code == 400
            assert registered.json()["error"] == "invalid_redirect_uri"


@pytest.mark.parametrize(
    "address",
    [
        "::10.0.0.1",  # IPv4-compatible
        "::127.0.0.1",
        "64:ff9b::10.0.0.1",  # NAT64
        "64:ff9b::169.254.169.254",
        "64:ff9b:1::a00:1",  # NAT64 local-use
        "2002:0a00:0001::1",  # 6to4 of 10.0.0.1
        "2002:a9fe:a9fe::1",  # 6to4 of 169.254.169.254
        "2001:0:4136:e378:8000:63bf:f5ff:fffe",  # Teredo, client 10.0.0.1
        "::ffff:192.168.0.1",
    ],
)
def test_ipv6_forms_that_carry_a_private_ipv4_address_are_refused(address: str) -> None:
    assert not address_allowed(address)
    assert not address_allowed(address, allow_loopback=True)


@pytest.mark.parametrize("address", ["64:ff9b::8.8.8.8", "2002:0808:0808::1", "2606:4700::1111", "8.8.8.8"])
def test_public_addresses_in_those_forms_stay_allowed(address: str) -> None:
    assert address_allowed(address)


async def test_every_fetch_failure_gives_the_same_message_so_ports_cannot_be_scanned(tmp_path: Path) -> None:
    plain = Starlette(routes=[Route("/client.json", Documents().document)])
    docs = Documents(status=404)
    with metadata_server(tmp_path, docs) as (url, ca), serve(plain) as plain_http:
        policy = CimdPolicy(allow_loopback=True, verify=ca.context)
        candidates = {
            "closed port": f"https://127.0.0.1:{free_port()}/client.json",
            "not TLS": plain_http.url.replace("http://", "https://") + "/client.json",
            "HTTP 404": url,
        }
        messages = set()
        for name, candidate in candidates.items():
            with pytest.raises(CimdError) as caught:
                await fetch_client(candidate, policy)
            messages.add(str(caught.value).replace(candidate, "URL"))
            assert "could not fetch" in str(caught.value), name
        assert len(messages) == 1, messages


async def test_a_failed_fetch_is_remembered_briefly_instead_of_repeated(tmp_path: Path) -> None:
    docs = Documents(status=500)
    with metadata_server(tmp_path, docs) as (url, ca):
        policy = CimdPolicy(allow_loopback=True, verify=ca.context)
        async with (
            running_stack(tmp_path, cimd=policy) as stack,
            httpx.AsyncClient(base_url=stack.thoughtline.url) as http,
        ):
            first = refusal(await http.get(authorize_url(stack.thoughtline.url, url, pkce()[1])))
            second = refusal(await http.get(authorize_url(stack.thoughtline.url, url, pkce()[1])))
            assert first == second
            assert docs.hits == 1
            stack.clock.advance(policy.failure_seconds + 1)
            refusal(await http.get(authorize_url(stack.thoughtline.url, url, pkce()[1])))
            assert docs.hits == 2


async def test_a_gzip_bomb_is_refused_without_inflating_it(tmp_path: Path) -> None:
    bomb = gzip.compress(b" " * 15_000_000, compresslevel=9)
    assert len(bomb) < 16 * 1024  # small on the wire: only the decoded size gives it away
    docs = Documents(body=bomb, headers={"Content-Encoding": "gzip"})
    with metadata_server(tmp_path, docs) as (url, ca):
        policy = CimdPolicy(allow_loopback=True, verify=ca.context)
        tracemalloc.start()
        try:
            with pytest.raises(CimdError, match="could not fetch"):
                await fetch_client(url, policy)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert peak < 4_000_000, f"fetching the bomb allocated {peak} bytes"


async def test_a_compressed_document_within_the_limits_is_accepted(tmp_path: Path) -> None:
    docs = Documents(headers={"Content-Encoding": "gzip"})
    with metadata_server(tmp_path, docs) as (url, ca):
        doc = (
            f'{{"client_id":"{url}","client_name":"Zipped","redirect_uris":["{CLIENT_REDIRECT}"],'
            '"token_endpoint_auth_method":"none"}'
        )
        docs.body = gzip.compress(doc.encode())
        client = await fetch_client(url, CimdPolicy(allow_loopback=True, verify=ca.context))
    assert client.client_name == "Zipped"


async def test_an_oversized_document_on_the_wire_is_refused(tmp_path: Path) -> None:
    docs = Documents(body=b'{"pad":"' + b"x" * 40_000 + b'"}')
    with metadata_server(tmp_path, docs) as (url, ca), pytest.raises(CimdError, match="at most 16384 bytes"):
        await fetch_client(url, CimdPolicy(allow_loopback=True, verify=ca.context))
