"""Who the owner is: pinned at an exact login match and logged, re-pinned when THOUGHTLINE_OWNER
changes, or fixed by THOUGHTLINE_OWNER_ID; logins compare ASCII case-insensitively (issue 11, F7).

The owner's store is the one the static MCP_API_TOKEN opens; every other account gets its own.
"""

from __future__ import annotations

import logging
from pathlib import Path

import apsw
import httpx
import pytest

from tests.oauth_support import TOKEN, Stack, authorize_url, pkce, register, running_stack, sign_in
from tests.support import mcp_client, structured
from thoughtline.config import Settings, SettingsError
from thoughtline.identity import login_key
from thoughtline.oauth.storage import AUTH_DIR, AUTH_FILE

pytestmark = pytest.mark.anyio

THOUGHT = {"thought": "the owner's plan", "thoughtNumber": 1, "totalThoughts": 1, "nextThoughtNeeded": False}


async def owners_sequence(stack: Stack) -> str:
    async with mcp_client(stack.thoughtline.url, TOKEN) as owner:
        return str(structured(await owner.call_tool("sequentialthinking", THOUGHT))["sequenceId"])


async def reads_owners_store(stack: Stack, account_id: int, login: str, sequence_id: str) -> bool:
    stack.fake.sign_in_as(account_id, login)
    async with httpx.AsyncClient(base_url=stack.thoughtline.url) as http:
        signed = await sign_in(stack, http)
    async with mcp_client(stack.thoughtline.url, signed.tokens["access_token"]) as client:
        found = await client.call_tool("get_thought_history", {"sequenceId": sequence_id})
    return not found.is_error


async def test_the_first_exact_sign_in_pins_the_owner_and_says_so_in_the_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="thoughtline")
    async with running_stack(tmp_path, allowed=("owner-login", "owner-renamed")) as stack:
        sequence_id = await owners_sequence(stack)
        assert await reads_owners_store(stack, 1001, "owner-login", sequence_id)
        pins = [r.getMessage() for r in caplog.records if "owner pinned" in r.getMessage()]
        assert pins == ["owner pinned: GitHub account id 1001 is now the owner (THOUGHTLINE_OWNER=Owner-Login)"]
        # A second sign-in does not pin again, and a rename keeps the pin.
        assert await reads_owners_store(stack, 1001, "owner-renamed", sequence_id)
        assert len([r for r in caplog.records if "pinned" in r.getMessage()]) == 1


async def test_a_changed_owner_setting_re_pins_at_the_new_logins_sign_in(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with running_stack(tmp_path) as stack:
        sequence_id = await owners_sequence(stack)
        assert await reads_owners_store(stack, 1001, "owner-login", sequence_id)
    caplog.set_level(logging.INFO, logger="thoughtline")
    async with running_stack(tmp_path, owner_login="friend") as stack:
        assert not await reads_owners_store(stack, 1001, "owner-login", sequence_id)  # old owner: own store
        assert await reads_owners_store(stack, 2002, "friend", sequence_id)
        assert any(
            "owner re-pinned: GitHub account id 2002" in r.getMessage() and "account id 1001" in r.getMessage()
            for r in caplog.records
        )


async def test_an_old_owners_grants_stop_naming_the_owners_store_after_a_re_pin(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack:
        async with httpx.AsyncClient(base_url=stack.thoughtline.url) as http:
            await sign_in(stack, http)  # the fake GitHub signs in 1001 "owner-login" by default
        assert grant_keys(tmp_path, 1001) == {"owner"}
    async with running_stack(tmp_path, owner_login="friend") as stack:
        stack.fake.sign_in_as(2002, "friend")
        async with httpx.AsyncClient(base_url=stack.thoughtline.url) as http:
            await sign_in(stack, http)
    assert grant_keys(tmp_path, 1001) == {"github:1001"}
    assert grant_keys(tmp_path, 2002) == {"owner"}


def grant_keys(tmp_path: Path, account_id: int) -> set[str]:
    conn = apsw.Connection(str(tmp_path / "data" / AUTH_DIR / AUTH_FILE), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        rows = conn.execute("SELECT DISTINCT user_key FROM grants WHERE account_id = ?", (account_id,)).fetchall()
    finally:
        conn.close()
    return {str(row[0]) for row in rows}


async def test_owner_id_names_the_owner_with_no_first_use_window(tmp_path: Path) -> None:
    async with running_stack(tmp_path, owner_login=None, owner_id=2002) as stack:
        sequence_id = await owners_sequence(stack)
        assert not await reads_owners_store(stack, 1001, "owner-login", sequence_id)
        assert await reads_owners_store(stack, 2002, "friend", sequence_id)


async def test_a_unicode_look_alike_login_is_not_the_allowlisted_one(tmp_path: Path) -> None:
    async with running_stack(tmp_path, allowed=("kelvin",), owner_login="kelvin") as stack:
        stack.fake.sign_in_as(4004, "\u212aelvin")  # KELVIN SIGN, which str.lower() folds to "k"
        async with httpx.AsyncClient(base_url=stack.thoughtline.url) as http:
            client_id = (await register(http)).json()["client_id"]
        browser = stack.browser()
        with pytest.raises(AssertionError, match="403"):
            await browser.authorize(authorize_url(stack.thoughtline.url, client_id, pkce()[1]))
        assert browser.pages[-1].status_code == 403
    assert login_key("KeLvIn") == "kelvin"
    assert login_key("\u212aelvin") != "kelvin"


def test_owner_id_must_be_a_numeric_account_id() -> None:
    assert Settings.from_env({"THOUGHTLINE_OWNER_ID": "583231"}).owner_id == 583231
    assert Settings.from_env({}).owner_id is None
    with pytest.raises(SettingsError, match="numeric GitHub account id"):
        Settings.from_env({"THOUGHTLINE_OWNER_ID": "octocat"})
    kelvin = Settings.from_env({"ALLOWED_GITHUB_LOGIN": "\u212aelvin,Alice"})
    assert kelvin.allowed_github_logins == ("\u212aelvin", "alice")
