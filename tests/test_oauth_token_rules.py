"""/token over real HTTP: RFC 8707 resources on exchange and refresh, and refusals a person can act on."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.oauth_support import CLIENT_REDIRECT, INIT, authorize_url, pkce, query_of, register, running_stack, sign_in
from thoughtline.oauth.provider import CODE_TTL_SECONDS, REFRESH_TTL_SECONDS

pytestmark = pytest.mark.anyio


def bearer(token: str) -> dict[str, str]:
    return {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {token}"}


async def test_the_bare_origin_as_resource_signs_in_for_both_endpoints_and_refreshes(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack, httpx.AsyncClient(base_url=stack.thoughtline.url) as http:
        # sign_in sends the same resource to /authorize and /token, as RFC 8707 clients do.
        signed = await sign_in(stack, http, resource=stack.thoughtline.url)
        access = signed.tokens["access_token"]
        assert (await http.post("/mcp-compat", json=INIT, headers=bearer(access))).status_code == 200
        refreshed = await http.post(
            "/token",
            data={
                "grant_type": "refresh_token",
                "refresh_token": signed.tokens["refresh_token"],
                "client_id": signed.client_id,
                "resource": stack.thoughtline.url + "/",
            },
        )
        assert refreshed.status_code == 200, refreshed.text
        assert (await http.post("/mcp-compat", json=INIT, headers=bearer(refreshed.json()["access_token"]))).is_success


async def test_a_refresh_narrowed_to_one_endpoint_can_later_ask_for_the_other(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack, httpx.AsyncClient(base_url=stack.thoughtline.url) as http:
        signed = await sign_in(stack, http)  # no resource: a grant for /mcp and /mcp-compat
        form = {"grant_type": "refresh_token", "client_id": signed.client_id}
        narrow = await http.post(
            "/token",
            data={**form, "refresh_token": signed.tokens["refresh_token"], "resource": stack.thoughtline.url + "/mcp"},
        )
        assert narrow.status_code == 200, narrow.text
        only_mcp = bearer(narrow.json()["access_token"])
        assert (await http.post("/mcp-compat", json=INIT, headers=only_mcp)).status_code == 401
        other = await http.post(
            "/token",
            data={
                **form,
                "refresh_token": narrow.json()["refresh_token"],
                "resource": stack.thoughtline.url + "/mcp-compat",
            },
        )
        assert other.status_code == 200, other.text
        assert (await http.post("/mcp-compat", json=INIT, headers=bearer(other.json()["access_token"]))).is_success
        foreign = await http.post(
            "/token",
            data={**form, "refresh_token": other.json()["refresh_token"], "resource": "https://elsewhere.example/mcp"},
        )
        assert foreign.json()["error"] == "invalid_target"
        assert "not covered by this sign-in" in foreign.json()["error_description"]


def refused_with(response: httpx.Response, *words: str, secret: str) -> None:
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["error"] == "invalid_grant"
    for word in (*words, "Sign in again" if "ALLOWED_GITHUB_LOGIN" not in words else "sign in again"):
        assert word in body["error_description"], body
    assert secret not in response.text


async def test_an_expired_or_foreign_code_is_refused_saying_what_happened(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack, httpx.AsyncClient(base_url=stack.thoughtline.url) as http:
        client_id = (await register(http)).json()["client_id"]
        other_id = (await register(http)).json()["client_id"]
        verifier, challenge = pkce()
        redirect = await stack.browser().authorize(authorize_url(stack.thoughtline.url, client_id, challenge))
        code = query_of(redirect)["code"]
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": CLIENT_REDIRECT,
            "client_id": other_id,
            "code_verifier": verifier,
        }
        refused_with(await http.post("/token", data=form), "issued to another client", secret=code)
        unknown = await http.post("/token", data={**form, "code": "not-a-code", "client_id": client_id})
        refused_with(unknown, "not known here", secret="not-a-code ")
        stack.clock.advance(CODE_TTL_SECONDS + 1)
        expired = await http.post("/token", data={**form, "client_id": client_id})
        refused_with(expired, "expired", "2 minutes", secret=code)


async def test_an_expired_refresh_token_is_refused_saying_it_expired(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack, httpx.AsyncClient(base_url=stack.thoughtline.url) as http:
        signed = await sign_in(stack, http)
        refresh = signed.tokens["refresh_token"]
        stack.clock.advance(REFRESH_TTL_SECONDS + 1)
        form = {"grant_type": "refresh_token", "refresh_token": refresh, "client_id": signed.client_id}
        refused_with(await http.post("/token", data=form), "expired", "30 days", secret=refresh)


async def test_a_refresh_for_a_login_removed_from_the_allowlist_names_the_setting(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack, httpx.AsyncClient(base_url=stack.thoughtline.url) as http:
        stack.fake.sign_in_as(2002, "friend")
        signed = await sign_in(stack, http)
    refresh = signed.tokens["refresh_token"]
    form = {"grant_type": "refresh_token", "refresh_token": refresh, "client_id": signed.client_id}
    # The same data directory, restarted without "friend" on the allowlist.
    async with running_stack(tmp_path, allowed=("owner-login",)) as later, httpx.AsyncClient() as http:
        response = await http.post(later.thoughtline.url + "/token", data=form)
    refused_with(response, "no longer allowed", "ALLOWED_GITHUB_LOGIN", secret=refresh)
    assert "friend" not in response.text


async def test_a_refusal_is_explained_only_to_an_authenticated_client(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack, httpx.AsyncClient(base_url=stack.thoughtline.url) as http:
        signed = await sign_in(stack, http)
        stack.clock.advance(REFRESH_TTL_SECONDS + 1)
        form = {"grant_type": "refresh_token", "refresh_token": signed.tokens["refresh_token"]}
        anonymous = await http.post("/token", data=form)
        assert anonymous.status_code == 401
        assert anonymous.json()["error"] == "invalid_client"


async def test_oauth_tokens_are_for_the_mcp_endpoints_only_never_the_rest_api(tmp_path: Path) -> None:
    # docs/api.md: the REST API takes MCP_API_TOKEN or the library session, not OAuth tokens.
    async with running_stack(tmp_path) as stack, httpx.AsyncClient(base_url=stack.thoughtline.url) as http:
        signed = await sign_in(stack, http)
        refused = await http.get(
            "/api/v1/sequences", headers={"Authorization": f"Bearer {signed.tokens['access_token']}"}
        )
        assert refused.status_code == 401
        assert "MCP_API_TOKEN" in refused.text
        client_id = (await register(http)).json()["client_id"]
        _, challenge = pkce()
        url = authorize_url(stack.thoughtline.url, client_id, challenge, resource=stack.thoughtline.url + "/api/v1")
        assert query_of(await stack.browser().authorize(url))["error"] == "invalid_target"
