"""On Lambda, a request means what it means under `thoughtline serve`: the same thread, limits and refusals.

mangum's reading of a payload-2.0 event decodes the path, crashes on a Host port it cannot parse
and gives no body length; `web/lambda_events.py` corrects that, and these tests drive the real
handler in-process with the events `tests/test_lambda.py` builds.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import TOKEN
from tests.test_lambda import FIRST_THOUGHT, URL_HOST, LambdaContext, http_event, json_body, mcp_post, tools_call
from thoughtline.web.lambda_handler import LambdaHandler

AUTH = {"authorization": f"Bearer {TOKEN}"}
JSON = {**AUTH, "content-type": "application/json", "origin": f"https://{URL_HOST}"}
LIMIT = 64 * 1024


@pytest.fixture
def handler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LambdaHandler]:
    """A warm handler with the template's environment and a 64 KiB body limit."""
    monkeypatch.setenv("MCP_API_TOKEN", TOKEN)
    monkeypatch.setenv("THOUGHTLINE_DATA_DIR", str(tmp_path / "mnt-thoughtline"))
    monkeypatch.setenv("THOUGHTLINE_JOURNAL", "truncate")
    monkeypatch.setenv("THOUGHTLINE_PUBLIC_URL", f"https://{URL_HOST}")
    monkeypatch.setenv("THOUGHTLINE_MAX_BODY_BYTES", str(LIMIT))
    fresh = LambdaHandler()
    try:
        yield fresh
    finally:
        fresh.close()


def call(handler: LambdaHandler, event: dict[str, Any]) -> dict[str, Any]:
    return handler(event, LambdaContext())


def create_thread(handler: LambdaHandler, name: str) -> None:
    body = json.dumps({"name": name}).encode()
    assert call(handler, http_event("POST", "/api/v1/threads", headers=JSON, body=body))["statusCode"] == 201


def thread_names(handler: LambdaHandler) -> list[str]:
    listing = json_body(call(handler, http_event("GET", "/api/v1/threads", headers=AUTH)))
    return sorted(thread["name"] for thread in listing["threads"])


def test_a_percent_encoded_slash_addresses_the_thread_of_that_name(handler: LambdaHandler) -> None:
    create_thread(handler, "a")
    create_thread(handler, "a/briefing")
    encoded = json_body(call(handler, http_event("GET", "/api/v1/threads/a%2Fbriefing", headers=AUTH)))
    assert encoded["name"] == "a/briefing"
    plain = json_body(call(handler, http_event("GET", "/api/v1/threads/a/briefing", headers=AUTH)))
    assert plain["thread"]["name"] == "a"  # unencoded, it is the briefing of `a`, as docs/api.md says


def test_deleting_an_encoded_name_deletes_that_thread_and_no_membership(handler: LambdaHandler) -> None:
    written = json_body(call(handler, mcp_post(tools_call("sequentialthinking", FIRST_THOUGHT))))
    sequence = written["result"]["structuredContent"]["sequenceId"]
    create_thread(handler, "x")
    create_thread(handler, f"x/members/{sequence}")
    pinned = call(handler, http_event("PUT", f"/api/v1/threads/x/members/{sequence}", headers=JSON))
    assert pinned["statusCode"] == 200

    deleted = call(
        handler,
        http_event("DELETE", f"/api/v1/threads/x%2Fmembers%2F{sequence}", headers=JSON, query="confirm=true"),
    )

    assert deleted["statusCode"] == 200, deleted["body"]
    assert thread_names(handler) == ["x"]
    kept = json_body(call(handler, http_event("GET", "/api/v1/threads/x", headers=AUTH)))
    assert kept["memberCount"] == 1


@pytest.mark.parametrize("host", ["a:b:c", f"{URL_HOST}:abc", f"[::1]:{URL_HOST}"])
def test_a_host_with_an_unreadable_port_gets_the_servers_403(handler: LambdaHandler, host: str) -> None:
    response = call(handler, http_event("GET", "/healthz", headers={"host": host}, domain=URL_HOST))
    assert response["statusCode"] == 403
    assert json_body(response)["error"] == "forbidden_host"


def test_the_body_limit_holds_for_rest_and_page_forms_and_nothing_is_written(handler: LambdaHandler) -> None:
    big = json.dumps({"name": "big", "description": "d" * LIMIT}).encode()
    form = b"csrf=" + b"a" * LIMIT
    for event in (
        http_event("POST", "/api/v1/threads", headers=JSON, body=big),
        http_event("POST", "/api/v1/threads", headers=JSON, body=big, base64_body=True),
        http_event(
            "POST",
            "/library/signout",
            headers={"content-type": "application/x-www-form-urlencoded", "origin": f"https://{URL_HOST}"},
            body=form,
        ),
        mcp_post(big),
    ):
        response = call(handler, event)
        assert response["statusCode"] == 413, response["body"][:200]
        assert "THOUGHTLINE_MAX_BODY_BYTES" in json_body(response)["message"]
    assert thread_names(handler) == []


def test_a_body_under_the_limit_is_served_whatever_content_length_the_event_claims(handler: LambdaHandler) -> None:
    body = json.dumps({"name": "small"}).encode()
    event = http_event("POST", "/api/v1/threads", headers={**JSON, "content-length": str(10 * LIMIT)}, body=body)
    assert call(handler, event)["statusCode"] == 201
    assert thread_names(handler) == ["small"]


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/mcp-compat", tools_call("sequentialthinking", FIRST_THOUGHT)),
        ("GET", "/api/v1/threads", None),
        ("POST", "/library/signout", b"csrf=x"),
    ],
)
def test_two_authorization_headers_joined_by_lambda_are_refused_with_400(
    handler: LambdaHandler, method: str, path: str, body: bytes | None
) -> None:
    # A Function URL joins repeated headers with a comma: that is how two Authorization headers arrive.
    for joined in (f"Bearer {TOKEN},Bearer not-the-token", f"Bearer not-the-token, Bearer {TOKEN}"):
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        event = http_event(method, path, headers={**headers, "authorization": joined}, body=body)
        response = call(handler, event)
        assert response["statusCode"] == 400
        assert "two Authorization headers" in json_body(response)["message"]
