"""The Lambda handler serves API Gateway HTTP API and Function URL events from one warm container.

Events are the documented payload-2.0 dicts; settings come from environment variables set before
the first invocation (configuration, as on Lambda); stores are real SQLite files in `tmp_path`.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette

from tests.support import TOKEN
from thoughtline.storage.router import StoreRouter, UserStore
from thoughtline.web import lambda_handler
from thoughtline.web.lambda_handler import HeldLifespan, LambdaHandler, LifespanError

URL_HOST = "abcdefghijklmnopqrstuvwxyz012345.lambda-url.eu-west-1.on.aws"
API_HOST = "a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com"
MCP_HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-06-18",
}


@dataclass
class LambdaContext:
    """The few attributes of Lambda's context object that anything might read."""

    function_name: str = "thoughtline"
    aws_request_id: str = "c6af9ac6-7b61-11e6-9a41-93e812345678"
    memory_limit_in_mb: int = 1024

    def get_remaining_time_in_millis(self) -> int:
        return 29_000


def http_event(
    method: str,
    path: str,
    *,
    host: str = URL_HOST,
    domain: str | None = None,
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
    base64_body: bool = False,
    query: str = "",
    function_url: bool = True,
) -> dict[str, Any]:
    """A payload-2.0 event as a Function URL (or, with `function_url=False`, an HTTP API) sends it.

    `host` is the Host header a client sent; `domain` the name Lambda routed by (default: the same).
    """
    domain = domain or host
    api_id = domain.split(".", 1)[0]
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": query,
        "headers": {
            "host": host,
            "user-agent": "lambda-test",
            "x-amzn-trace-id": "Root=1-5f84c7a9-0e5b1e8b6f1f2d3c4b5a6978",
            "x-forwarded-for": "203.0.113.7",
            "x-forwarded-port": "443",
            "x-forwarded-proto": "https",
            **(headers or {}),
        },
        "requestContext": {
            "accountId": "anonymous" if function_url else "123456789012",
            "apiId": api_id,
            "domainName": domain,
            "domainPrefix": api_id,
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "203.0.113.7",
                "userAgent": "lambda-test",
            },
            "requestId": "id-1",
            "routeKey": "$default",
            "stage": "$default",
            "time": "12/Mar/2026:19:03:58 +0000",
            "timeEpoch": 1773342238000,
        },
        "isBase64Encoded": base64_body,
    }
    if query:
        event["queryStringParameters"] = dict(part.split("=", 1) for part in query.split("&"))
    if body is not None:
        event["body"] = base64.b64encode(body).decode() if base64_body else body.decode()
    if function_url:
        event["requestContext"]["authorizer"] = None
    else:
        event["requestContext"]["authorizer"] = {}
    return event


def tools_call(name: str, arguments: dict[str, Any], request_id: int = 1) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    ).encode()


def mcp_post(body: bytes, *, token: str | None = TOKEN, base64_body: bool = False, **kw: Any) -> dict[str, Any]:
    headers = dict(MCP_HEADERS)
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    return http_event("POST", "/mcp-compat", headers=headers, body=body, base64_body=base64_body, **kw)


def json_body(response: dict[str, Any]) -> Any:
    assert response["isBase64Encoded"] is False
    return json.loads(response["body"])


FIRST_THOUGHT = {
    "thought": "Check the EFS mount first",
    "nextThoughtNeeded": True,
    "thoughtNumber": 1,
    "totalThoughts": 2,
}


@pytest.fixture
def lambda_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The environment the SAM template gives the function, pointed at a temp data dir."""
    data = tmp_path / "mnt-thoughtline"
    monkeypatch.setenv("MCP_API_TOKEN", TOKEN)
    monkeypatch.setenv("THOUGHTLINE_DATA_DIR", str(data))
    monkeypatch.setenv("THOUGHTLINE_JOURNAL", "truncate")
    monkeypatch.setenv("THOUGHTLINE_PUBLIC_URL", f"https://{URL_HOST}")
    monkeypatch.setenv("ALLOWED_HOSTNAMES", API_HOST)
    return data


@pytest.fixture
def handler(lambda_env: Path) -> Iterator[LambdaHandler]:
    """A fresh handler (what the module-level one is), shut down after the test."""
    fresh = LambdaHandler()
    try:
        yield fresh
    finally:
        fresh.close()


def router_of(handler: LambdaHandler) -> StoreRouter:
    assert handler.container is not None
    router = handler.container.app.state.router
    assert isinstance(router, StoreRouter)
    return router


def test_importing_the_module_builds_nothing_until_the_first_invocation() -> None:
    assert isinstance(lambda_handler.handler, LambdaHandler)
    assert lambda_handler.handler.container is None


def test_health_answers_a_function_url_event(handler: LambdaHandler) -> None:
    response = handler(http_event("GET", "/healthz"), LambdaContext())
    assert response["statusCode"] == 200
    assert response["headers"]["content-type"] == "application/json"
    assert json_body(response)["ok"] is True


def test_health_answers_an_http_api_event(handler: LambdaHandler) -> None:
    response = handler(http_event("GET", "/healthz", host=API_HOST, function_url=False), LambdaContext())
    assert response["statusCode"] == 200
    assert json_body(response)["ok"] is True


def test_query_strings_reach_the_app(handler: LambdaHandler) -> None:
    response = handler(http_event("GET", "/healthz", query="deep=1"), LambdaContext())
    assert response["statusCode"] == 401  # deep health needs a token: the query string arrived


def test_mcp_without_a_token_gets_401_with_the_public_metadata_url(handler: LambdaHandler) -> None:
    response = handler(mcp_post(tools_call("sequentialthinking", FIRST_THOUGHT), token=None), LambdaContext())
    assert response["statusCode"] == 401
    challenge = response["headers"]["www-authenticate"]
    assert f'resource_metadata="https://{URL_HOST}/.well-known/oauth-protected-resource/mcp-compat"' in challenge


def test_a_write_and_a_later_read_share_one_store_opened_once(handler: LambdaHandler, lambda_env: Path) -> None:
    written = handler(mcp_post(tools_call("sequentialthinking", FIRST_THOUGHT)), LambdaContext())
    assert written["statusCode"] == 200
    result = json_body(written)["result"]
    assert result.get("isError") is not True
    sequence_id = result["structuredContent"]["sequenceId"]

    router = router_of(handler)
    opened: list[UserStore] = []
    router.on_open.append(opened.append)
    read = handler(
        mcp_post(tools_call("get_thought_history", {"sequenceId": sequence_id}, request_id=2), function_url=False),
        LambdaContext(),
    )

    assert read["statusCode"] == 200
    history = json_body(read)["result"]["structuredContent"]
    assert [t["thought"] for t in history["thoughts"]] == [FIRST_THOUGHT["thought"]]
    assert opened == []  # the warm invocation reused the open store and its writer thread
    assert router.open_count == 1
    assert list((lambda_env / "stores").glob("*.sqlite3"))  # on the configured data dir


def test_a_base64_encoded_body_is_decoded(handler: LambdaHandler) -> None:
    response = handler(mcp_post(tools_call("sequentialthinking", FIRST_THOUGHT), base64_body=True), LambdaContext())
    assert response["statusCode"] == 200
    assert json_body(response)["result"]["structuredContent"]["thoughtNumber"] == 1


def test_sdk_session_path_serves_every_warm_invocation(handler: LambdaHandler) -> None:
    # initialize and tools/list go through the SDK's session manager, whose run() is entered once
    # per container; a second request would fail if the lifespan were re-entered per invocation.
    initialize = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "lambda-test", "version": "1"},
            },
        }
    ).encode()
    listing = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).encode()
    container_before = None
    for body in (initialize, listing, listing):
        response = handler(mcp_post(body), LambdaContext())
        assert response["statusCode"] == 200, response
        container_before = container_before or handler.container
        assert handler.container is container_before
    tools = {tool["name"] for tool in json_body(response)["result"]["tools"]}
    assert {"sequentialthinking", "get_thought_history"} <= tools


def test_a_foreign_host_is_refused(handler: LambdaHandler) -> None:
    response = handler(http_event("GET", "/healthz", host="evil.example", domain=URL_HOST), LambdaContext())
    assert response["statusCode"] == 403


@pytest.fixture
def first_deploy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LambdaHandler]:
    """The template's environment on its first deploy: no public URL, no extra host names."""
    monkeypatch.setenv("MCP_API_TOKEN", TOKEN)
    monkeypatch.setenv("THOUGHTLINE_DATA_DIR", str(tmp_path / "mnt-thoughtline"))
    monkeypatch.setenv("THOUGHTLINE_JOURNAL", "truncate")
    monkeypatch.setenv("THOUGHTLINE_PUBLIC_URL", "")
    monkeypatch.delenv("ALLOWED_HOSTNAMES", raising=False)
    fresh = LambdaHandler()
    try:
        yield fresh
    finally:
        fresh.close()


def test_the_first_deploy_answers_on_its_function_url_and_names_itself_by_it(first_deploy: LambdaHandler) -> None:
    health = first_deploy(http_event("GET", "/healthz"), LambdaContext())
    assert health["statusCode"] == 200
    written = first_deploy(mcp_post(tools_call("sequentialthinking", FIRST_THOUGHT)), LambdaContext())
    assert json_body(written)["result"]["structuredContent"]["thoughtNumber"] == 1
    challenge = first_deploy(mcp_post(tools_call("sequentialthinking", FIRST_THOUGHT), token=None), LambdaContext())
    assert challenge["statusCode"] == 401
    assert f'resource_metadata="https://{URL_HOST}/' in challenge["headers"]["www-authenticate"]


def test_the_first_deploy_still_refuses_a_foreign_host(first_deploy: LambdaHandler) -> None:
    assert first_deploy(http_event("GET", "/healthz"), LambdaContext())["statusCode"] == 200
    foreign = first_deploy(http_event("GET", "/healthz", host="evil.example", domain=URL_HOST), LambdaContext())
    assert foreign["statusCode"] == 403
    assert (
        first_deploy(http_event("GET", "/healthz", host=API_HOST, domain=URL_HOST), LambdaContext())["statusCode"]
        == 403
    )  # only the routed name, not any AWS host


def test_a_cold_start_on_a_foreign_host_does_not_open_the_door_to_it(first_deploy: LambdaHandler) -> None:
    first = first_deploy(http_event("GET", "/healthz", host="evil.example", domain=URL_HOST), LambdaContext())
    assert first["statusCode"] == 403
    assert first_deploy(http_event("GET", "/healthz"), LambdaContext())["statusCode"] == 200


def test_a_container_never_schedules_work_after_a_response(first_deploy: LambdaHandler) -> None:
    first_deploy(http_event("GET", "/healthz"), LambdaContext())
    assert first_deploy.container is not None
    assert first_deploy.container.app.state.library.background is False


def test_after_close_the_next_invocation_builds_a_fresh_container_on_the_same_data(handler: LambdaHandler) -> None:
    written = handler(mcp_post(tools_call("sequentialthinking", FIRST_THOUGHT)), LambdaContext())
    sequence_id = json_body(written)["result"]["structuredContent"]["sequenceId"]
    first = handler.container
    handler.close()  # a new container: cold start against the same EFS directory

    read = handler(mcp_post(tools_call("get_thought_history", {"sequenceId": sequence_id})), LambdaContext())
    assert handler.container is not first
    assert json_body(read)["result"]["structuredContent"]["sequence"]["thoughtHistoryLength"] == 1


def test_a_bad_setting_fails_the_invocation_and_the_next_one_retries(
    handler: LambdaHandler, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("THOUGHTLINE_JOURNAL", "memory")
    with pytest.raises(ValueError, match="THOUGHTLINE_JOURNAL"):
        handler(http_event("GET", "/healthz"), LambdaContext())
    assert handler.container is None
    monkeypatch.setenv("THOUGHTLINE_JOURNAL", "truncate")
    assert handler(http_event("GET", "/healthz"), LambdaContext())["statusCode"] == 200


def test_a_lifespan_that_fails_to_start_says_why() -> None:
    @asynccontextmanager
    async def broken(app: Starlette) -> AsyncIterator[None]:
        raise RuntimeError("no file system mounted at /mnt/thoughtline")
        yield  # unreachable; makes this a generator

    async def start() -> None:
        held = HeldLifespan(Starlette(lifespan=broken), asyncio.get_running_loop())
        with pytest.raises(LifespanError, match="no file system mounted"):
            await held.startup()

    asyncio.run(start())
