"""/authorize over real HTTP: PKCE checked before GitHub, `iss` on every error redirect (RFC 9207),
and loopback redirect URIs on any port (RFC 8252 §7.3)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.oauth_support import CLIENT_REDIRECT, authorize_url, pkce, query_of, register, running_stack

pytestmark = pytest.mark.anyio


async def test_a_wrong_pkce_challenge_or_method_is_refused_before_github(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack, httpx.AsyncClient(base_url=stack.thoughtline.url) as http:
        client_id = (await register(http)).json()["client_id"]
        _, challenge = pkce()
        short = await http.get(authorize_url(stack.thoughtline.url, client_id, "abc"))
        no_method = authorize_url(stack.thoughtline.url, client_id, challenge).replace(
            "&code_challenge_method=S256", ""
        )
        missing_method = await http.get(no_method)
        padded = await http.get(authorize_url(stack.thoughtline.url, client_id, challenge + "="))
        for response, words in ((short, "43 base64url"), (missing_method, "S256 is required"), (padded, "padding")):
            assert response.status_code == 302
            assert response.headers["location"].startswith(CLIENT_REDIRECT + "?")
            answer = query_of(response.headers["location"])
            assert answer["error"] == "invalid_request"
            assert words in answer["error_description"]
            assert answer["iss"] == stack.thoughtline.url
            assert answer["state"] == "client-state-123"
        assert not stack.fake.authorize_requests  # nobody was sent to sign in with GitHub
        unknown = await http.get(authorize_url(stack.thoughtline.url, "no-such-client", "abc"))
        assert unknown.status_code == 400  # no registered redirect URI: never redirected
        assert "location" not in unknown.headers


async def test_error_redirects_from_the_sdk_handler_carry_iss(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack, httpx.AsyncClient(base_url=stack.thoughtline.url) as http:
        client_id = (await register(http)).json()["client_id"]
        _, challenge = pkce()
        cases = {
            "invalid_scope": {"scope": "admin"},
            "unsupported_response_type": {"response_type": "token"},
            "invalid_request": {"code_challenge_method": "plain"},
        }
        for error, extra in cases.items():
            response = await http.get(authorize_url(stack.thoughtline.url, client_id, challenge, **extra))
            assert response.status_code == 302, error
            answer = query_of(response.headers["location"])
            assert answer["error"] == error
            assert answer["iss"] == stack.thoughtline.url
        fine = await http.get(authorize_url(stack.thoughtline.url, client_id, challenge))
        assert fine.headers["location"].startswith("/consent?")  # success is untouched


async def test_a_loopback_ip_redirect_uri_matches_on_any_port_and_nothing_else(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack, httpx.AsyncClient(base_url=stack.thoughtline.url) as http:
        registered = ["http://127.0.0.1/oauth/callback", "http://[::1]:9/cb", "http://localhost:9/cb"]
        client_id = (await register(http, registered)).json()["client_id"]
        verifier, challenge = pkce()

        def url(redirect_uri: str) -> str:
            return authorize_url(stack.thoughtline.url, client_id, challenge, redirect_uri=redirect_uri)

        for accepted in ("http://[::1]:51004/cb", "http://[::1]/cb"):
            assert (await http.get(url(accepted))).headers["location"].startswith("/consent?"), accepted
        refused = (
            "http://127.0.0.1:51004/oauth/other",
            "http://127.0.0.1:51004/oauth/callback?x=1",
            "https://127.0.0.1:51004/oauth/callback",
            "http://localhost:51004/cb",  # localhost keeps exact matching (RFC 8252 §8.3)
            "http://127.0.0.2:9/cb",
        )
        for uri in refused:
            response = await http.get(url(uri))
            assert response.status_code == 400, uri
            assert "location" not in response.headers
        # The whole sign-in on an ephemeral port; /token must name the same port.
        ephemeral = "http://127.0.0.1:51004/oauth/callback"
        redirect = await stack.browser().authorize(url(ephemeral))
        assert redirect.startswith(ephemeral + "?")
        form = {
            "grant_type": "authorization_code",
            "code": query_of(redirect)["code"],
            "client_id": client_id,
            "code_verifier": verifier,
        }
        other_port = await http.post("/token", data={**form, "redirect_uri": "http://127.0.0.1:51005/oauth/callback"})
        assert other_port.status_code == 400
        tokens = await http.post("/token", data={**form, "redirect_uri": ephemeral})
        assert tokens.status_code == 200, tokens.text
