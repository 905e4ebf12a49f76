"""Who may call `/api/v1`, what a second user sees, malformed requests, and the library switched off."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.api_support import API, api_client, body, refusal
from tests.support import mcp_client
from tests.thread_support import Served, call, connected, create, served, think
from thoughtline.config import Settings
from thoughtline.identity import OWNER_KEY, Principal
from thoughtline.library.embed import MiniLMEmbedder
from thoughtline.storage.router import store_path
from thoughtline.web.app import Extras

pytestmark = pytest.mark.anyio

# The identity provider is the only fake: token -> (store key, the one resource path it was issued for).
TOKENS = {
    "alice-api": ("github:1", "/api/v1"),
    "alice-mcp": ("github:1", "/mcp-compat"),
    "bob-api": ("github:2", "/api/v1"),
}


async def verify(token: str, resource: str) -> Principal | None:
    """An access-token check bound to its audience (RFC 8707), like the OAuth door's."""
    found = TOKENS.get(token)
    if found is None or not resource.endswith(found[1]):
        return None
    return Principal(user_key=found[0], via="oauth", resource=resource, client_id="test-client")


@pytest.fixture
def app(settings: Settings, embedder: MiniLMEmbedder) -> Iterator[Served]:
    with served(settings, extras=Extras(verifier=verify), embedder_factory=lambda: embedder) as running:
        yield running


async def test_without_a_token_the_api_answers_401_in_its_error_shape(app: Served) -> None:
    async with api_client(app, token=None) as api:
        code, message = refusal(await api.get("/threads"), 401)
        wrong = refusal(await api.get("/threads", headers={"Authorization": "Bearer not-a-token"}), 401)
    assert code == "unauthorized"
    assert "Bearer" in message
    assert wrong[0] == "invalid_token"


async def test_a_token_issued_for_an_mcp_endpoint_is_refused_by_the_api(app: Served) -> None:
    async with mcp_client(app.server.base_url, "alice-mcp") as client:
        seq = await think(client, "alice's own thought")
    async with api_client(app, "alice-mcp") as mcp_token, api_client(app, "alice-api") as api_token:
        refused_code, message = refusal(await mcp_token.get(f"/sequences/{seq}"), 401)
        read = body(await api_token.get(f"/sequences/{seq}"))
    assert refused_code == "invalid_token"
    assert "/mcp" in message
    assert read["thoughts"][0]["thought"] == "alice's own thought"


async def test_a_second_user_sees_none_of_the_first_users_data(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "pg", "Move billing to Postgres.")
        seq = await think(client, "Postgres replication lag on the billing cluster", threads=["pg"], done=True)
    app.execute(
        "INSERT INTO thread_proposals(thread, sequence_id, similarity, proposed_at) "
        "SELECT t.id, s.id, 0.9, 1 FROM threads t, sequences s"
    )
    rowid = app.query("SELECT id FROM thread_proposals")[0][0]
    pid = f"prp_{rowid}"
    before = app.counts()
    async with api_client(app, "bob-api") as bob:
        listed = body(await bob.get("/sequences"))
        history = refusal(await bob.get(f"/sequences/{seq}"), 404)
        deleted = refusal(await bob.delete(f"/sequences/{seq}", params={"confirm": "true"}), 404)
        paused = refusal(await bob.post(f"/sequences/{seq}/pause"), 404)
        threads = body(await bob.get("/threads", params={"includeArchived": "true"}))
        thread = refusal(await bob.get("/threads/pg"), 404)
        briefing = refusal(await bob.get("/threads/pg/briefing"), 404)
        pinned = refusal(await bob.put(f"/threads/pg/members/{seq}"), 404)
        proposals = body(await bob.get("/proposals"))
        accepted = refusal(await bob.post(f"/proposals/{pid}/accept"), 404)
        found = body(await bob.get("/search", params={"q": "Postgres replication lag"}))
        by_thread = refusal(await bob.get("/search", params={"q": "Postgres", "thread": "pg"}), 404)
    assert listed == {"sequences": [], "nextCursor": None}
    assert [history[0], deleted[0], paused[0]] == ["sequence_not_found"] * 3
    assert threads["threads"] == []
    assert [thread[0], briefing[0], pinned[0], by_thread[0]] == ["thread_not_found"] * 4
    assert proposals == {"proposals": [], "nextCursor": None, "pendingCount": 0}
    assert accepted[0] == "proposal_not_found"
    assert found["results"] == []
    assert app.counts() == before


async def test_malformed_requests_are_400_in_the_error_shape_never_a_500(app: Served) -> None:
    url = app.server.base_url + API + "/threads"
    headers = {"Authorization": "Bearer " + "test-token-" + "x" * 40}
    json_type = {**headers, "Content-Type": "application/json"}
    async with httpx.AsyncClient(timeout=30) as http:
        answers = [
            await http.post(url, headers=json_type, content=b"{not json"),
            await http.post(url, headers=json_type, content=b"[1, 2]"),
            await http.post(url, headers=json_type, content='{"name": "a"}'.encode("utf-16")),
            await http.post(url, headers=json_type, content=b'{"name": "\\ud800"}'),
            await http.post(url, headers=json_type, content=b"[" * 100_000 + b"]" * 100_000),
            await http.post(url, headers={**headers, "Content-Type": "text/plain"}, content=b'{"name": "a"}'),
            await http.get(url, headers=headers, params={"sort": "name"}),
        ]
    refusals = [refusal(a, 400) for a in answers]
    assert {code for code, _ in refusals} == {"invalid_input"}
    assert "Content-Type: application/json" in refusals[5][1]
    assert "'sort'" in refusals[6][1]
    assert app.counts()["threads"] == 0


async def test_unknown_routes_and_methods_answer_in_the_error_shape(app: Served) -> None:
    async with api_client(app) as api:
        missing = refusal(await api.get("/nothing/here"), 404)
        method = await api.put("/sequences")
    assert missing[0] == "not_found"
    assert refusal(method, 405)[0] == "method_not_allowed"
    assert method.headers["allow"] == "GET, HEAD"


async def test_with_the_library_off_only_reading_a_sequence_by_its_id_is_served(settings: Settings) -> None:
    with served(settings.with_overrides(library=False)) as app:
        async with connected(app) as client:
            seq = await think(client, "held by id")
            tool = await call(client, "get_thought_history", sequenceId=seq)
        async with api_client(app) as api:
            read = body(await api.get(f"/sequences/{seq}"))
            others = [
                await api.get("/sequences"),
                await api.delete(f"/sequences/{seq}", params={"confirm": "true"}),
                await api.post(f"/sequences/{seq}/pause"),
                await api.get("/search", params={"q": "held"}),
                await api.get("/threads"),
                await api.post("/threads", json={"name": "pg"}),
                await api.get("/threads/pg/briefing"),
                await api.get("/proposals"),
            ]
    assert read == tool
    for answer in others:
        code, message = refusal(answer, 404)
        assert code == "not_found"
        assert "THOUGHTLINE_LIBRARY=off" in message
    assert app.counts()["sequences"] == 1


async def test_a_store_that_cannot_be_opened_answers_503_storage_error_not_a_500(settings: Settings) -> None:
    path = store_path(settings.data_dir, OWNER_KEY)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"this is not a SQLite database, " * 200)
    with served(settings) as app:
        async with api_client(app) as api:
            code, message = refusal(await api.get("/threads"), 503)
    assert code == "storage_error"
    assert "Traceback" not in message


async def test_the_index_names_the_api_and_the_library_and_only_the_read_by_id_when_off(settings: Settings) -> None:
    with served(settings) as on, served(settings.with_overrides(library=False)) as off:
        async with httpx.AsyncClient() as http:
            described = (await http.get(on.server.base_url + "/")).json()["endpoints"]
            described_off = (await http.get(off.server.base_url + "/")).json()["endpoints"]
    assert described["api"].startswith("/api/v1 ")
    assert described["library"].startswith("/library ")
    assert described_off["api"].startswith("/api/v1/sequences/{sequenceId} ")
    assert "library" not in described_off
