"""Registration cannot fill the disk: bounded fields, a per-address rate limit, unused clients expire,
and a bounded metadata-document cache (issue 11, F1). Over real HTTP with the injected clock."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import apsw
import httpx
import pytest

from tests.oauth_support import CLIENT_REDIRECT, authorize_url, pkce, running_stack, sign_in
from thoughtline.oauth.records import (
    AUTH_MIGRATIONS,
    MAX_CACHED_DOCUMENTS,
    UNUSED_CLIENT_SECONDS,
    prepare,
    prune_clients,
)
from thoughtline.oauth.register import MAX_UNUSED_CLIENTS
from thoughtline.oauth.storage import AUTH_DIR, AUTH_FILE, AuthStore
from thoughtline.storage.migrations import migrate

pytestmark = pytest.mark.anyio


def metadata(**fields: Any) -> dict[str, Any]:
    return {"redirect_uris": [CLIENT_REDIRECT], "token_endpoint_auth_method": "none", **fields}


def auth_db_bytes(tmp_path: Path) -> int:
    return sum(p.stat().st_size for p in (tmp_path / "data" / AUTH_DIR).glob(AUTH_FILE + "*"))


async def test_oversized_or_overlong_client_metadata_is_refused_and_stores_nothing(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack, httpx.AsyncClient(base_url=stack.thoughtline.url) as http:
        assert (await http.post("/register", json=metadata())).status_code == 201
        before = auth_db_bytes(tmp_path)
        huge = await http.post("/register", json=metadata(client_name="n" * 900_000))
        assert huge.status_code == 413
        for fields, named in (
            ({"client_name": "n" * 201}, "client_name"),
            ({"redirect_uris": [f"{CLIENT_REDIRECT}{i}" for i in range(11)]}, "redirect_uris"),
            ({"contacts": ["a@example.com"] * 11}, "contacts"),
            ({"contacts": ["a" * 400 + "@example.com"]}, "contacts"),
            ({"scope": "s " * 600}, "scope"),
            ({"client_uri": "https://example.com/" + "p" * 2100}, "client_uri"),
            ({"software_version": "v" * 300}, "software_version"),
            ({"jwks": {"keys": [{"k": "x" * 10_000}]}}, "bytes"),
        ):
            refused = await http.post("/register", json=metadata(**fields))
            assert refused.status_code == 400, (named, refused.text)
            assert refused.json()["error"] in ("invalid_client_metadata", "invalid_redirect_uri")
            assert named in refused.json()["error_description"]
        assert auth_db_bytes(tmp_path) == before


async def test_registration_is_rate_limited_per_source_address(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack, httpx.AsyncClient(base_url=stack.thoughtline.url) as http:
        per_hour = stack.settings.registrations_per_hour
        for _ in range(per_hour):
            assert (await http.post("/register", json=metadata())).status_code == 201
        limited = await http.post("/register", json=metadata())
        assert limited.status_code == 429
        assert "THOUGHTLINE_REGISTRATIONS_PER_HOUR" in limited.json()["error_description"]
        wait = int(limited.headers["retry-after"])
        assert 0 < wait <= 3600 // per_hour + 1
        stack.clock.advance(wait)
        assert (await http.post("/register", json=metadata())).status_code == 201
        assert (await http.post("/register", json=metadata())).status_code == 429


async def test_clients_that_never_authorize_expire_and_used_ones_stay(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack, httpx.AsyncClient(base_url=stack.thoughtline.url) as http:
        unused = (await http.post("/register", json=metadata())).json()["client_id"]
        used = await sign_in(stack, http)
        stack.clock.advance(UNUSED_CLIENT_SECONDS + 60)
        assert (await http.post("/register", json=metadata())).status_code == 201  # prunes on the way
        gone = await http.get(authorize_url(stack.thoughtline.url, unused, pkce()[1]))
        assert gone.status_code == 400
        assert "client" in gone.text.lower()
        refreshed = await http.post(
            "/token",
            data={
                "grant_type": "refresh_token",
                "client_id": used.client_id,
                "refresh_token": used.tokens["refresh_token"],
            },
        )
        assert refreshed.status_code == 200, refreshed.text


async def test_the_metadata_document_cache_keeps_a_bounded_number_of_entries(tmp_path: Path) -> None:
    from thoughtline.config import Settings

    settings = Settings(data_dir=tmp_path / "data")
    store = AuthStore(settings.data_dir, settings.journal)
    try:
        for i in range(MAX_CACHED_DOCUMENTS + 25):
            await store.cache_document(f"https://c{i}.example/client.json", "{}", float(i), 10_000.0 + i)
        assert await store.cached_document("https://c0.example/client.json", 0.0) is None  # oldest dropped
        newest = f"https://c{MAX_CACHED_DOCUMENTS + 24}.example/client.json"
        assert await store.cached_document(newest, 0.0) == "{}"
        assert await store.cached_documents() == MAX_CACHED_DOCUMENTS
    finally:
        store.close()


async def test_registration_pauses_while_too_many_clients_await_their_first_sign_in(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack, httpx.AsyncClient(base_url=stack.thoughtline.url) as http:
        assert (await http.post("/register", json=metadata())).status_code == 201
        conn = apsw.Connection(str(tmp_path / "data" / AUTH_DIR / AUTH_FILE))
        try:
            conn.execute("PRAGMA busy_timeout = 10000")
            with conn:
                now = stack.clock.now()
                conn.executemany(
                    "INSERT INTO clients(client_id, info, created_at) VALUES (?, '{}', ?)",
                    ((f"filler-{i}", now) for i in range(MAX_UNUSED_CLIENTS)),
                )
        finally:
            conn.close()
        paused = await http.post("/register", json=metadata())
        assert paused.status_code == 503
        assert "have not signed in yet" in paused.json()["error_description"]
        stack.clock.advance(UNUSED_CLIENT_SECONDS + 60)
        assert (await http.post("/register", json=metadata())).status_code == 201


def test_an_upgraded_auth_database_keeps_the_clients_that_already_signed_in(tmp_path: Path) -> None:
    conn = apsw.Connection(str(tmp_path / "auth.sqlite3"))
    try:
        migrate(conn, AUTH_MIGRATIONS[:1])
        conn.execute("INSERT INTO clients(client_id, info, created_at) VALUES ('used', '{}', 1), ('idle', '{}', 1)")
        conn.execute(
            "INSERT INTO grants(id, client_id, user_key, account_id, login, resources, scopes, created_at)"
            " VALUES ('g', 'used', 'owner', 1, 'a', '[]', '[]', 1)"
        )
        prepare(conn)
        prune_clients(conn, UNUSED_CLIENT_SECONDS + 2)
        left = [str(row[0]) for row in conn.execute("SELECT client_id FROM clients")]
    finally:
        conn.close()
    assert left == ["used"]
