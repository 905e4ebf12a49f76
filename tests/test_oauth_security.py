"""The OAuth door's security checklist (issue 3), one behaviour per test, over real HTTP."""

from __future__ import annotations

import hashlib
import inspect
import logging
import threading
from pathlib import Path

import httpx
import pytest

from tests.oauth_support import (
    CLIENT_REDIRECT,
    INIT,
    TOKEN,
    authorize_url,
    pkce,
    query_of,
    register,
    running_stack,
    sign_in,
)
from tests.support import mcp_client, structured
from thoughtline.oauth import signing
from thoughtline.oauth.addresses import address_allowed
from thoughtline.oauth.cimd import CimdPolicy, fetch_client
from thoughtline.oauth.provider import ACCESS_TTL_SECONDS, REFRESH_GRACE_SECONDS
from thoughtline.oauth.storage import AUTH_DIR, AUTH_FILE
from thoughtline.web import auth

pytestmark = pytest.mark.anyio

MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def bearer(token: str) -> dict[str, str]:
    return {**MCP_HEADERS, "Authorization": f"Bearer {token}"}


async def test_missing_garbage_and_expired_tokens_get_401_never_500(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack, httpx.AsyncClient(base_url=stack.thoughtline.url) as http:
        missing = await http.post("/mcp-compat", json=INIT, headers=MCP_HEADERS)
        assert missing.status_code == 401
        expected = f'resource_metadata="{stack.thoughtline.url}/.well-known/oauth-protected-resource/mcp-compat"'
        assert expected in missing.headers["www-authenticate"]
        garbage = await http.post("/mcp-compat", json=INIT, headers=bearer("tla_not-a-real-token"))
        assert garbage.status_code == 401
        assert 'error="invalid_token"' in garbage.headers["www-authenticate"]
        signed = await sign_in(stack, http)
        live = await http.post("/mcp-compat", json=INIT, headers=bearer(signed.tokens["access_token"]))
        assert live.status_code == 200
        stack.clock.advance(ACCESS_TTL_SECONDS + 1)
        expired = await http.post("/mcp-compat", json=INIT, headers=bearer(signed.tokens["access_token"]))
        assert expired.status_code == 401


async def test_a_token_for_mcp_is_refused_on_mcp_compat_unless_issued_for_both(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack, httpx.AsyncClient(base_url=stack.thoughtline.url) as http:
        narrow = await sign_in(stack, http, resource=stack.thoughtline.url + "/mcp")
        token = narrow.tokens["access_token"]
        assert (await http.post("/mcp-compat", json=INIT, headers=bearer(token))).status_code == 401
        both = await sign_in(stack, http)  # no resource: this server's endpoints, both
        token = both.tokens["access_token"]
        assert (await http.post("/mcp-compat", json=INIT, headers=bearer(token))).status_code == 200
        foreign = await sign_in_refused_resource(stack, http)
        assert foreign["error"] == "invalid_target"


async def sign_in_refused_resource(stack: object, http: httpx.AsyncClient) -> dict[str, str]:
    from tests.oauth_support import Stack

    assert isinstance(stack, Stack)
    client_id = (await register(http)).json()["client_id"]
    _, challenge = pkce()
    url = authorize_url(stack.thoughtline.url, client_id, challenge, resource="https://elsewhere.example/mcp")
    return query_of(await stack.browser().authorize(url))


async def test_pkce_plain_and_a_missing_or_wrong_verifier_are_refused(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack, httpx.AsyncClient(base_url=stack.thoughtline.url) as http:
        client_id = (await register(http)).json()["client_id"]
        verifier, challenge = pkce()
        plain = await http.get(authorize_url(stack.thoughtline.url, client_id, verifier, code_challenge_method="plain"))
        assert plain.status_code in (302, 400)
        assert "invalid_request" in (plain.headers.get("location", "") + plain.text)
        redirect = await stack.browser().authorize(authorize_url(stack.thoughtline.url, client_id, challenge))
        form = {
            "grant_type": "authorization_code",
            "code": query_of(redirect)["code"],
            "redirect_uri": CLIENT_REDIRECT,
            "client_id": client_id,
        }
        missing = await http.post("/token", data=form)
        assert missing.status_code == 400
        assert missing.json()["error"] == "invalid_request"
        wrong = await http.post("/token", data={**form, "code_verifier": "x" * 50})
        assert wrong.status_code == 400
        assert wrong.json()["error"] == "invalid_grant"


async def test_a_reused_code_is_refused_and_the_tokens_it_issued_are_revoked(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack, httpx.AsyncClient(base_url=stack.thoughtline.url) as http:
        client_id = (await register(http)).json()["client_id"]
        verifier, challenge = pkce()
        redirect = await stack.browser().authorize(authorize_url(stack.thoughtline.url, client_id, challenge))
        form = {
            "grant_type": "authorization_code",
            "code": query_of(redirect)["code"],
            "redirect_uri": CLIENT_REDIRECT,
            "client_id": client_id,
            "code_verifier": verifier,
        }
        first = await http.post("/token", data=form)
        assert first.status_code == 200
        token = first.json()["access_token"]
        assert (await http.post("/mcp-compat", json=INIT, headers=bearer(token))).status_code == 200
        again = await http.post("/token", data=form)
        assert again.status_code == 400
        assert again.json()["error"] == "invalid_grant"
        assert "already used" in again.json()["error_description"]
        assert (await http.post("/mcp-compat", json=INIT, headers=bearer(token))).status_code == 401
        refresh = {
            "grant_type": "refresh_token",
            "refresh_token": first.json()["refresh_token"],
            "client_id": client_id,
        }
        assert (await http.post("/token", data=refresh)).status_code == 400


async def test_refresh_tokens_rotate_and_reuse_revokes_the_grant(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack, httpx.AsyncClient(base_url=stack.thoughtline.url) as http:
        signed = await sign_in(stack, http)
        form = {"grant_type": "refresh_token", "client_id": signed.client_id}
        rotated = await http.post("/token", data={**form, "refresh_token": signed.tokens["refresh_token"]})
        assert rotated.status_code == 200
        assert rotated.json()["refresh_token"] != signed.tokens["refresh_token"]
        stack.clock.advance(REFRESH_GRACE_SECONDS + 1)  # past a client's own concurrent refresh
        reused = await http.post("/token", data={**form, "refresh_token": signed.tokens["refresh_token"]})
        assert reused.status_code == 400
        assert "already used" in reused.json()["error_description"]
        # The thief's replay also cut off the legitimate holder of the newest pair.
        newest = await http.post("/token", data={**form, "refresh_token": rotated.json()["refresh_token"]})
        assert newest.status_code == 400
        headers = bearer(rotated.json()["access_token"])
        assert (await http.post("/mcp-compat", json=INIT, headers=headers)).status_code == 401


async def test_redirect_uri_mismatch_and_unregistered_schemes_are_refused(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack, httpx.AsyncClient(base_url=stack.thoughtline.url) as http:
        for uri in ("javascript:alert(1)", "http://evil.example/cb", "myapp:/cb", "https://ok.example/cb#frag"):
            refused = await register(http, [uri])
            assert refused.status_code == 400, uri
            assert refused.json()["error"] == "invalid_redirect_uri"
        client_id = (await register(http)).json()["client_id"]
        _, challenge = pkce()
        url = authorize_url(stack.thoughtline.url, client_id, challenge, redirect_uri="https://evil.example/cb")
        mismatch = await http.get(url)
        assert mismatch.status_code == 400  # shown to the user, never redirected to the unknown URI
        assert "location" not in mismatch.headers


async def test_tampered_state_and_request_blobs_are_refused(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack, httpx.AsyncClient(base_url=stack.thoughtline.url) as http:
        client_id = (await register(http)).json()["client_id"]
        _, challenge = pkce()
        to_consent = await http.get(authorize_url(stack.thoughtline.url, client_id, challenge))
        blob = query_of(to_consent.headers["location"])["request"]
        forged = await http.get("/consent", params={"request": blob[:-2] + ("AA" if blob[-2:] != "AA" else "BB")})
        assert forged.status_code == 400
        callback = await http.get("/callback", params={"code": "x", "state": "forged.state.value"})
        assert callback.status_code == 400
        assert "invalid or expired" in callback.text


async def test_an_account_off_the_allowlist_gets_a_clear_refusal_page(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack, httpx.AsyncClient(base_url=stack.thoughtline.url) as http:
        stack.fake.sign_in_as(3003, "Stranger")
        client_id = (await register(http)).json()["client_id"]
        _, challenge = pkce()
        browser = stack.browser()
        with pytest.raises(AssertionError, match="403"):
            await browser.authorize(authorize_url(stack.thoughtline.url, client_id, challenge))
        page = browser.pages[-1]
        assert page.status_code == 403
        assert "Stranger" in page.text
        assert "ALLOWED_GITHUB_LOGIN" in page.text
    async with (
        running_stack(tmp_path / "empty", allowed=()) as stack,
        httpx.AsyncClient(base_url=stack.thoughtline.url) as http,
    ):
        client_id = (await register(http)).json()["client_id"]
        browser = stack.browser()
        with pytest.raises(AssertionError, match="403"):
            await browser.authorize(authorize_url(stack.thoughtline.url, client_id, pkce()[1]))
        assert "ALLOWED_GITHUB_LOGIN setting is empty" in browser.pages[-1].text


async def test_a_login_renamed_on_github_keeps_its_store_by_account_id(tmp_path: Path) -> None:
    async with running_stack(tmp_path, allowed=("friend", "friend-renamed")) as stack:
        async with httpx.AsyncClient(base_url=stack.thoughtline.url) as http:
            stack.fake.sign_in_as(2002, "friend")
            before = await sign_in(stack, http)
            stack.fake.sign_in_as(2002, "friend-renamed")
            after = await sign_in(stack, http)
        write = {"thought": "mine", "thoughtNumber": 1, "totalThoughts": 1, "nextThoughtNeeded": False}
        async with mcp_client(stack.thoughtline.url, before.tokens["access_token"]) as old_name:
            sequence_id = structured(await old_name.call_tool("sequentialthinking", write))["sequenceId"]
        async with mcp_client(stack.thoughtline.url, after.tokens["access_token"]) as new_name:
            found = await new_name.call_tool("get_thought_history", {"sequenceId": sequence_id})
        assert not found.is_error


async def test_another_allowlisted_user_cannot_read_the_owners_sequence_by_id(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack:
        write = {"thought": "owner secret", "thoughtNumber": 1, "totalThoughts": 1, "nextThoughtNeeded": False}
        async with mcp_client(stack.thoughtline.url, TOKEN) as owner:
            sequence_id = structured(await owner.call_tool("sequentialthinking", write))["sequenceId"]
        stack.fake.sign_in_as(2002, "friend")
        async with httpx.AsyncClient(base_url=stack.thoughtline.url) as http:
            friend = await sign_in(stack, http)
        async with mcp_client(stack.thoughtline.url, friend.tokens["access_token"]) as other:
            result = await other.call_tool("get_thought_history", {"sequenceId": sequence_id})
        assert result.is_error
        assert "owner secret" not in str(result.content)


async def test_cimd_client_ids_on_private_or_loopback_addresses_are_refused(tmp_path: Path) -> None:
    policy = CimdPolicy()
    for url in ("https://10.1.2.3/client.json", "https://127.0.0.1/client.json", "https://[::ffff:192.168.0.1]/c"):
        with pytest.raises(Exception, match="private, loopback or reserved"):
            await fetch_client(url, policy)
    with pytest.raises(Exception, match="https URL"):
        await fetch_client("http://example.com/client.json", policy)
    assert not address_allowed("169.254.169.254", allow_loopback=True)  # cloud metadata stays out
    async with running_stack(tmp_path) as stack, httpx.AsyncClient(base_url=stack.thoughtline.url) as http:
        _, challenge = pkce()
        refused = await http.get(authorize_url(stack.thoughtline.url, "https://192.168.1.5/c.json", challenge))
        assert refused.status_code == 400
        assert refused.json()["error"] == "invalid_client"


async def test_bad_origin_or_host_get_403_never_500(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack, httpx.AsyncClient(base_url=stack.thoughtline.url) as http:
        evil_origin = await http.post("/consent", data={"request": "x"}, headers={"Origin": "https://evil.example"})
        assert evil_origin.status_code == 403
        evil_host = await http.get("/.well-known/oauth-authorization-server", headers={"Host": "evil.example"})
        assert evil_host.status_code == 403
        evil_mcp = await http.post("/mcp-compat", json=INIT, headers={**MCP_HEADERS, "Origin": "https://evil.example"})
        assert evil_mcp.status_code == 403


async def test_the_consent_page_cannot_be_framed_and_allows_only_the_sign_in_chain(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack, httpx.AsyncClient(base_url=stack.thoughtline.url) as http:
        client_id = (await register(http)).json()["client_id"]
        consent = await http.get(
            (await http.get(authorize_url(stack.thoughtline.url, client_id, pkce()[1]))).headers["location"]
        )
        assert consent.status_code == 200
        policy = consent.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in policy
        assert consent.headers["x-frame-options"] == "DENY"
        assert "script-src" not in policy
        assert "default-src 'none'" in policy
        form_action = policy.split("form-action ")[1].split(";")[0].split()
        assert form_action == ["'self'", stack.github.url, "http://127.0.0.1:9"]


def test_bearer_and_signed_value_comparisons_are_constant_time() -> None:
    # Timing cannot be asserted reliably in a test; what can be checked is that every secret
    # comparison goes through hmac.compare_digest on digests, never `==` on the secret.
    assert "compare_digest" in inspect.getsource(auth.Authenticator.principal)
    assert "compare_digest" in inspect.getsource(signing.same)
    assert signing.same("a" * 10, "a" * 10)
    assert not signing.same("a" * 10, "b" * 10)


async def test_no_token_code_or_secret_reaches_the_logs_or_the_auth_database(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with running_stack(tmp_path) as stack, httpx.AsyncClient(base_url=stack.thoughtline.url) as http:
        signed = await sign_in(stack, http)
        refreshed = await http.post(
            "/token",
            data={
                "grant_type": "refresh_token",
                "client_id": signed.client_id,
                "refresh_token": signed.tokens["refresh_token"],
            },
        )
        await http.post("/mcp-compat", json=INIT, headers=bearer(signed.tokens["access_token"]))
        secrets_seen = [
            signed.tokens["access_token"],
            signed.tokens["refresh_token"],
            refreshed.json()["access_token"],
            refreshed.json()["refresh_token"],
            query_of(signed.redirect)["code"],
            stack.settings.github_client_secret or "",
            *stack.fake.tokens,
        ]
        # The main file and its WAL: recent writes may live only in the latter.
        database = b"".join(path.read_bytes() for path in (tmp_path / "data" / AUTH_DIR).glob(AUTH_FILE + "*"))
    me = threading.current_thread().name
    server_lines = "\n".join(r.getMessage() for r in caplog.records if r.threadName != me)
    assert "sign-in" in server_lines, "the server's log records were not captured"
    for value in secrets_seen:
        assert value not in server_lines
        assert value.encode() not in database
    assert hashlib.sha256(signed.tokens["access_token"].encode()).hexdigest().encode() in database


async def test_the_static_token_door_opens_for_the_exact_token_only() -> None:
    secret = "s" * 40
    door = auth.Authenticator(secret, None, None)

    def scope(token: str) -> dict[str, object]:
        return {"type": "http", "headers": [(b"authorization", f"Bearer {token}".encode())]}

    owner, _ = await door.principal(scope(secret), "/mcp")
    assert owner is not None
    assert owner.user_key == "owner"
    for near_miss in (secret[:-1], secret + "s", secret[:-1] + "t", secret.upper(), " " + secret + "x"):
        principal, sent = await door.principal(scope(near_miss), "/mcp")
        assert principal is None
        assert sent
