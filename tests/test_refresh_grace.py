"""Two refreshes of the token just rotated, a moment apart, are a client's race, not theft (issue 11).

Reuse still revokes the grant after the grace window, and at once for any token older than the
one spent last.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from tests.oauth_support import INIT, Stack, running_stack, sign_in
from thoughtline.oauth.provider import REFRESH_GRACE_SECONDS

pytestmark = pytest.mark.anyio


async def refresh(http: httpx.AsyncClient, client_id: str, token: str) -> httpx.Response:
    form = {"grant_type": "refresh_token", "client_id": client_id, "refresh_token": token}
    return await http.post("/token", data=form)


async def works(stack: Stack, http: httpx.AsyncClient, access_token: str) -> bool:
    headers = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {access_token}"}
    return (await http.post("/mcp-compat", json=INIT, headers=headers)).status_code == 200


async def test_two_concurrent_refreshes_of_one_token_both_succeed_and_keep_the_grant(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack, httpx.AsyncClient(base_url=stack.thoughtline.url) as http:
        signed = await sign_in(stack, http)
        token = signed.tokens["refresh_token"]
        first, second = await asyncio.gather(
            refresh(http, signed.client_id, token), refresh(http, signed.client_id, token)
        )
        assert first.status_code == 200, first.text
        assert second.status_code == 200, second.text
        assert first.json()["refresh_token"] != second.json()["refresh_token"]
        for answer in (first, second):
            assert await works(stack, http, answer.json()["access_token"])
        again = await refresh(http, signed.client_id, first.json()["refresh_token"])
        assert again.status_code == 200


async def test_reuse_after_the_grace_window_still_revokes_the_grant(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack, httpx.AsyncClient(base_url=stack.thoughtline.url) as http:
        signed = await sign_in(stack, http)
        rotated = await refresh(http, signed.client_id, signed.tokens["refresh_token"])
        assert rotated.status_code == 200
        stack.clock.advance(REFRESH_GRACE_SECONDS + 1)
        reused = await refresh(http, signed.client_id, signed.tokens["refresh_token"])
        assert reused.status_code == 400
        assert "already used" in reused.json()["error_description"]
        assert not await works(stack, http, rotated.json()["access_token"])


async def test_an_older_token_than_the_one_spent_last_revokes_even_inside_the_window(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack, httpx.AsyncClient(base_url=stack.thoughtline.url) as http:
        signed = await sign_in(stack, http)
        middle = await refresh(http, signed.client_id, signed.tokens["refresh_token"])
        newest = await refresh(http, signed.client_id, middle.json()["refresh_token"])
        assert newest.status_code == 200
        replayed = await refresh(http, signed.client_id, signed.tokens["refresh_token"])
        assert replayed.status_code == 400
        assert not await works(stack, http, newest.json()["access_token"])
