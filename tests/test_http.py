"""The HTTP surface: self-description, health, the 401 challenge, Host/Origin, body size, eras."""

from __future__ import annotations

import json
import socket

import httpx
import pytest
from mcp.shared.exceptions import MCPError

from tests import raw_http
from tests.support import TOKEN, ThreadServer, mcp_client, structured

AUTH = {"Authorization": f"Bearer {TOKEN}"}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def test_root_describes_the_service(server: ThreadServer) -> None:
    body = httpx.get(server.base_url + "/").json()
    assert body["name"] == "thoughtline"
    assert "sequentialthinking" in body["tools"]
    assert set(body["endpoints"]) >= {"mcp", "mcp-compat", "health"}


def test_health_is_open_and_deep_health_needs_auth(server: ThreadServer) -> None:
    assert httpx.get(server.base_url + "/healthz").json()["ok"] is True
    denied = httpx.get(server.base_url + "/healthz?deep=1")
    assert denied.status_code == 401
    assert "resource_metadata=" in denied.headers["www-authenticate"]
    deep = httpx.get(server.base_url + "/healthz?deep=1", headers=AUTH).json()
    assert deep["ok"] is True
    assert deep["store"]["current"] is True


@pytest.mark.parametrize("auth", [None, "Bearer wrong-token"])
def test_deep_health_is_refused_by_the_same_bearer_check_as_mcp(server: ThreadServer, auth: str | None) -> None:
    headers = {"Authorization": auth} if auth else {}
    denied = httpx.get(server.base_url + "/healthz?deep=1", headers=headers)
    mcp = httpx.post(server.base_url + "/mcp", json=INIT, headers={**MCP_HEADERS, **headers})
    assert (denied.status_code, denied.headers["www-authenticate"]) == (401, mcp.headers["www-authenticate"])
    assert denied.json() == mcp.json()


@pytest.mark.parametrize("path", ["/mcp", "/mcp-compat"])
@pytest.mark.parametrize("auth", [None, "Bearer wrong-token", "Basic abc", "Bearer", "Bearer " + "x" * 5000])
def test_missing_or_bad_tokens_get_401_pointing_at_the_path_metadata(
    server: ThreadServer, path: str, auth: str | None
) -> None:
    headers = {**MCP_HEADERS, **({"Authorization": auth} if auth else {})}
    response = httpx.post(server.base_url + path, json=INIT, headers=headers)
    assert response.status_code == 401
    challenge = response.headers["www-authenticate"]
    expected = f'resource_metadata="{server.base_url}/.well-known/oauth-protected-resource{path}"'
    assert challenge.startswith(f"Bearer {expected}")
    assert ("invalid_token" in challenge) == (auth is not None and auth.startswith("Bearer ") and len(auth) > 7)
    assert response.json()["error"] in ("invalid_token", "unauthorized")


def test_public_url_fixes_the_origin_in_the_challenge(tmp_path: object) -> None:
    from pathlib import Path

    from tests.support import serve_in_thread
    from thoughtline.config import Settings
    from thoughtline.web.app import create_app

    settings = Settings(data_dir=Path(str(tmp_path)) / "d", api_token=TOKEN, public_url="https://thoughts.example.com")
    with serve_in_thread(create_app(settings)) as running:
        response = httpx.post(running.base_url + "/mcp", json=INIT, headers=MCP_HEADERS)
        assert (
            'resource_metadata="https://thoughts.example.com/.well-known/oauth-protected-resource/mcp"'
            in response.headers["www-authenticate"]
        )


@pytest.mark.parametrize(
    ("headers", "error"),
    [
        ({"Host": "evil.example"}, "forbidden_host"),
        ({"Host": "127.0.0.1:1@evil"}, "forbidden_host"),
        ({"Origin": "http://evil.example"}, "forbidden_origin"),
        ({"Origin": "null"}, "forbidden_origin"),
    ],
)
def test_foreign_host_or_origin_is_refused_with_403(server: ThreadServer, headers: dict[str, str], error: str) -> None:
    for path in ("/mcp-compat", "/healthz"):
        response = httpx.post(server.base_url + path, json=INIT, headers={**MCP_HEADERS, **AUTH, **headers})
        assert response.status_code == 403
        assert response.json()["error"] == error


def test_own_origin_is_allowed(server: ThreadServer) -> None:
    headers = {**MCP_HEADERS, **AUTH, "Origin": f"http://localhost:{server.port}"}
    assert httpx.post(server.base_url + "/mcp-compat", json=INIT, headers=headers).status_code == 200


def test_oversized_body_is_refused_before_parsing(server: ThreadServer) -> None:
    body = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"x":"' + b"a" * 2_000_000 + b'"}}'
    response = httpx.post(server.base_url + "/mcp-compat", content=body, headers={**MCP_HEADERS, **AUTH})
    assert response.status_code == 413
    assert "THOUGHTLINE_MAX_BODY_BYTES" in response.json()["message"]


def test_modern_endpoint_refuses_a_2025_handshake_with_32022(server: ThreadServer) -> None:
    response = httpx.post(server.base_url + "/mcp", json=INIT, headers={**MCP_HEADERS, **AUTH})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == -32022
    assert error["data"]["supported"] == ["2026-07-28"]
    assert "/mcp-compat" in error["message"]
    assert response.json()["id"] == 1
    # The 2025 handshake names its version in params, before any header: that is what it asked for.
    assert error["data"]["requested"] == "2025-06-18"
    assert "'2025-06-18' (initialize's protocolVersion)" in error["message"]


def test_modern_endpoint_says_a_request_without_any_version_sent_no_header(server: ThreadServer) -> None:
    body = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    response = httpx.post(server.base_url + "/mcp", json=body, headers={**MCP_HEADERS, **AUTH})
    error = response.json()["error"]
    assert (response.status_code, error["code"], error["data"]["requested"]) == (400, -32022, None)
    assert "(no MCP-Protocol-Version header)" in error["message"]


def test_compat_endpoint_serves_the_2025_handshake(server: ThreadServer) -> None:
    response = httpx.post(server.base_url + "/mcp-compat", json=INIT, headers={**MCP_HEADERS, **AUTH})
    assert response.status_code == 200
    assert response.json()["result"]["protocolVersion"] == "2025-06-18"
    assert "mcp-session-id" not in response.headers


@pytest.mark.anyio
async def test_modern_discovery_advertises_the_apps_extension(server: ThreadServer) -> None:
    # Capability extensions (SEP-2133) exist on the 2026-07-28 wire; the SDK sieves them from 2025 replies.
    async with mcp_client(server.base_url, path="/mcp", mode="auto") as client:
        assert client.protocol_version == "2026-07-28"
        extensions = client.server_capabilities.extensions or {}
    assert extensions["io.modelcontextprotocol/ui"]["mimeTypes"] == ["text/html;profile=mcp-app"]


@pytest.mark.anyio
async def test_sdk_client_in_legacy_mode_cannot_use_the_modern_endpoint(server: ThreadServer) -> None:
    refusal = pytest.RaisesExc(MCPError, check=lambda e: e.code == -32022)
    with pytest.RaisesGroup(refusal, flatten_subgroups=True):
        async with mcp_client(server.base_url, path="/mcp", mode="legacy"):
            pass


@pytest.mark.anyio
async def test_malformed_json_rpc_never_yields_a_500(server: ThreadServer) -> None:
    async with httpx.AsyncClient(base_url=server.base_url, headers={**MCP_HEADERS, **AUTH}) as http:
        for body in (b"", b"{", b"[]", b"null", b'{"jsonrpc":"2.0"}', json.dumps({"method": 5}).encode()):
            for path in ("/mcp-compat", "/mcp"):
                extra = {"MCP-Protocol-Version": "2026-07-28"} if path == "/mcp" else {}
                response = await http.post(path, content=body, headers=extra)
                assert response.status_code < 500, (path, body, response.text)


@pytest.mark.anyio
async def test_both_eras_reach_the_same_store(server: ThreadServer) -> None:
    async with mcp_client(server.base_url) as old:
        args = {"thought": "shared", "nextThoughtNeeded": True, "thoughtNumber": 1, "totalThoughts": 1}
        seq = structured(await old.call_tool("sequentialthinking", args))["sequenceId"]
    async with mcp_client(server.base_url, path="/mcp", mode="2026-07-28") as new:
        page = structured(await new.call_tool("get_thought_history", {"sequenceId": seq}))
    assert page["thoughts"][0]["thought"] == "shared"


@pytest.mark.parametrize("path", ["/mcp", "/mcp-compat"])
def test_a_listening_get_stream_is_refused_because_the_server_is_stateless(server: ThreadServer, path: str) -> None:
    response = httpx.get(server.base_url + path, headers={**AUTH, "Accept": "text/event-stream"})
    assert response.status_code == 405
    assert "POST" in response.headers["allow"]


@pytest.mark.parametrize("name", ["Host", "Origin"])
def test_two_host_or_two_origin_headers_are_refused_with_400(server: ThreadServer, name: str) -> None:
    own = f"127.0.0.1:{server.port}" if name == "Host" else f"http://127.0.0.1:{server.port}"
    evil = "evil.example" if name == "Host" else "http://evil.example"
    host = "" if name == "Host" else f"Host: 127.0.0.1:{server.port}\r\n"
    for first, second in ((evil, own), (own, evil), (own, own)):
        request = (
            f"GET /.well-known/oauth-authorization-server HTTP/1.1\r\n{host}"
            f"{name}: {first}\r\n{name}: {second}\r\nConnection: close\r\n\r\n"
        )
        answer = raw_http.exchange(server.port, request.encode())
        assert raw_http.status_of(answer) == 400, answer[:200]
        assert f"two {name} headers".encode() in answer
        assert b"evil.example" not in answer


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/mcp-compat", json.dumps(INIT)),
        ("POST", "/mcp", json.dumps(INIT)),
        ("GET", "/api/v1/threads", ""),
        ("POST", "/library/signout", "csrf=x"),
    ],
)
def test_two_authorization_headers_are_refused_with_400_on_every_route(
    server: ThreadServer, method: str, path: str, body: str
) -> None:
    good, bad = f"Bearer {TOKEN}", "Bearer not-the-token"
    for lines in ((good, bad), (bad, good), (f"{good},{bad}",), (f"{bad}, {good}",)):
        fields = "".join(f"Authorization: {line}\r\n" for line in lines)
        request = (
            f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n{fields}"
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n{body}"
        )
        answer = raw_http.exchange(server.port, request.encode())
        assert raw_http.status_of(answer) == 400, (lines, answer[:300])
        assert b"two Authorization headers" in answer
        assert TOKEN.encode() not in answer


def test_a_bearer_token_with_a_comma_is_still_just_refused_with_401(server: ThreadServer) -> None:
    response = httpx.get(server.base_url + "/api/v1/threads", headers={"Authorization": f"Bearer {TOKEN},x"})
    assert response.status_code == 401


def test_the_issuer_is_built_from_the_one_host_the_guard_checked(server: ThreadServer) -> None:
    request = f"GET /.well-known/oauth-authorization-server HTTP/1.1\r\nHost: localhost:{server.port}\r\n"
    answer = raw_http.exchange(server.port, (request + "Connection: close\r\n\r\n").encode())
    body = json.loads(answer.split(b"\r\n\r\n", 1)[1])
    assert body["issuer"] == f"http://localhost:{server.port}"


@pytest.mark.parametrize(
    ("path", "content_type", "auth"),
    [
        ("/api/v1/threads", "application/json", True),
        ("/token", "application/x-www-form-urlencoded", False),
        ("/library/signout", "application/x-www-form-urlencoded", False),
    ],
)
def test_a_chunked_body_over_the_limit_is_refused_on_every_route_that_reads_one(
    server: ThreadServer, path: str, content_type: str, auth: bool
) -> None:
    headers = {"Content-Type": content_type, **(AUTH if auth else {})}
    status, answer = raw_http.post(server.port, path, b" " * 1_100_000, headers, chunked=True)
    assert status == 413, answer[:200]
    assert "THOUGHTLINE_MAX_BODY_BYTES" in json.loads(answer)["message"]


def test_a_chunked_body_within_the_limit_reaches_the_route(server: ThreadServer) -> None:
    headers = {"Content-Type": "application/json", **AUTH}
    status, answer = raw_http.post(server.port, "/api/v1/threads", b'{"name": "chunked"}', headers, chunked=True)
    assert status == 201, answer[:200]
    assert json.loads(answer)["name"] == "chunked"


def test_a_chunked_body_cut_off_by_the_client_reaches_no_route(server: ThreadServer) -> None:
    head = (
        f"POST /api/v1/threads HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nAuthorization: Bearer {TOKEN}\r\n"
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    part = b'{"name": "cut"}'
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(head.encode() + f"{len(part):x}\r\n".encode() + part + b"\r\n")
    listed = httpx.get(server.base_url + "/api/v1/threads", headers=AUTH).json()
    assert [t["name"] for t in listed["threads"]] == []
