"""Bodies the JSON parser refuses are 400s with -32700 and no traceback, on every route and era (issues 11, 19).

One parser with one set of limits reads every MCP POST body (web/jsonbody.py): the requests here
go over raw HTTP so each body reaches the server byte for byte as written.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import apsw
import httpx
import pytest

from tests import raw_http
from tests.support import TOKEN, ThreadServer
from thoughtline.web.jsonbody import MAX_DEPTH, BodyError, parse_message

HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "Authorization": f"Bearer {TOKEN}",
}
MODERN = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "sequentialthinking"}
ARGS = '{"thought":"x","thoughtNumber":1,"totalThoughts":1,"nextThoughtNeeded":false}'
MODERN_META = (
    ',"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'
)


def stored_thoughts(data_dir: Path) -> int:
    total = 0
    for path in (data_dir / "stores").glob("*.sqlite3"):
        conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            total += int(conn.execute("SELECT count(*) FROM thoughts").fetchone()[0])  # type: ignore[index]
        finally:
            conn.close()
    return total


@pytest.mark.parametrize("path", ["/mcp-compat", "/mcp"])
def test_deeply_nested_json_is_a_400_parse_error_without_a_traceback(
    server: ThreadServer, path: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR)
    extra = MODERN if path == "/mcp" else {}
    response = httpx.post(server.base_url + path, content=b"[" * 100_000, headers={**HEADERS, **extra})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32700
    assert not [r for r in caplog.records if r.exc_info], "a traceback reached the log"


@pytest.mark.parametrize("path", ["/mcp-compat", "/mcp"])
def test_a_tools_call_with_a_lone_surrogate_id_never_answers_5xx_after_writing(
    server: ThreadServer, settings_data_dir: Path, path: str
) -> None:
    meta = MODERN_META if path == "/mcp" else ""
    body = (
        '{"jsonrpc":"2.0","id":"\\ud800","method":"tools/call",'
        f'"params":{{"name":"sequentialthinking","arguments":{ARGS}{meta}}}}}'
    )
    extra = MODERN if path == "/mcp" else {}
    response = httpx.post(server.base_url + path, content=body.encode(), headers={**HEADERS, **extra})
    assert response.status_code < 500, response.text
    written = stored_thoughts(settings_data_dir)
    if response.status_code == 200:
        assert response.json()["result"]["isError"] is False  # answered cleanly: the write is acknowledged
        assert written == 1
    else:
        assert response.json()["error"]["code"] == -32700
        assert written == 0


@pytest.fixture
def settings_data_dir(settings: object) -> Path:
    from thoughtline.config import Settings

    assert isinstance(settings, Settings)
    return settings.data_dir


def test_an_escaped_surrogate_pair_is_valid_text_and_still_takes_the_direct_path(server: ThreadServer) -> None:
    direct = server.app.state.direct_tool_calls
    before = direct.answered
    args = ARGS.replace('"x"', '"\\ud83d\\ude00 ok"')
    body = (
        f'{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"sequentialthinking","arguments":{args}}}}}'
    )
    response = httpx.post(server.base_url + "/mcp-compat", content=body.encode(), headers=HEADERS)
    assert response.status_code == 200
    assert "\U0001f600 ok" in response.json()["result"]["content"][0]["text"]
    assert direct.answered == before + 1


ROUTES_AND_ERAS = [
    ("/mcp", None),
    ("/mcp", "2025-06-18"),
    ("/mcp", "2026-07-28"),
    ("/mcp-compat", None),
    ("/mcp-compat", "2025-06-18"),
    ("/mcp-compat", "2026-07-28"),
]


def tools_call_text(modern: bool) -> str:
    """A valid tools/call that would write one thought if the body were accepted."""
    meta = MODERN_META if modern else ""
    return (
        '{"jsonrpc":"2.0","id":7,"method":"tools/call",'
        f'"params":{{"name":"sequentialthinking","arguments":{ARGS}{meta}}}}}'
    )


def refused_bodies(text: str) -> dict[str, bytes]:
    """Bodies no route may accept, keyed by what is wrong with them."""
    return {
        "UTF-16 LE": text.encode("utf-16-le"),
        "UTF-16 BE": text.encode("utf-16-be"),
        "UTF-16 with BOM": text.encode("utf-16"),
        "UTF-16 BE with BOM": b"\xfe\xff" + text.encode("utf-16-be"),
        "UTF-32 LE": text.encode("utf-32-le"),
        "UTF-32 BE": text.encode("utf-32-be"),
        "UTF-32 with BOM": text.encode("utf-32"),
        "UTF-8 with BOM": b"\xef\xbb\xbf" + text.encode(),
        "200 KB of nesting": b"[" * 200_000,
        "nesting one level too deep": ('{"a":' * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1)).encode(),
        "NaN": text.replace('"thoughtNumber":1', '"thoughtNumber":NaN').encode(),
        "an infinite number": text.replace('"thoughtNumber":1', '"thoughtNumber":1e999').encode(),
        "a 5000-digit integer": text.replace('"thoughtNumber":1', '"thoughtNumber":' + "1" * 5000).encode(),
        "invalid UTF-8": text.replace('"x"', '"\xff"').encode("latin-1"),
        "a lone surrogate": text.replace('"x"', '"\\udc00"').encode(),
        "an empty body": b"",
        "trailing garbage": text.encode() + b" }",
    }


@pytest.mark.parametrize(("path", "era"), ROUTES_AND_ERAS)
def test_every_route_and_era_refuses_bodies_that_are_not_utf8_json_within_limits_with_a_400(
    server: ThreadServer, settings_data_dir: Path, path: str, era: str | None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    headers = dict(HEADERS)
    if era is not None:
        headers["MCP-Protocol-Version"] = era
    if era == "2026-07-28":
        headers |= {"Mcp-Method": "tools/call", "Mcp-Name": "sequentialthinking"}
    for problem, body in refused_bodies(tools_call_text(era == "2026-07-28")).items():
        status, answer = raw_http.post(server.port, path, body, headers)
        assert status == 400, (problem, status, answer[:300])
        error = json.loads(answer)["error"]
        assert error["code"] == -32700, (problem, error)
        assert "UTF-8 JSON" in error["message"], (problem, error)
    assert stored_thoughts(settings_data_dir) == 0
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR], "a traceback reached the log"


@pytest.mark.parametrize(("path", "era"), [("/mcp", None), ("/mcp-compat", None), ("/mcp", "2026-07-28")])
def test_a_chunked_body_is_held_to_the_same_parser_and_size_limit(
    server: ThreadServer, settings_data_dir: Path, path: str, era: str | None
) -> None:
    headers = {**HEADERS, **({"MCP-Protocol-Version": era} if era else {})}
    status, answer = raw_http.post(server.port, path, tools_call_text(False).encode("utf-16"), headers, chunked=True)
    assert (status, json.loads(answer)["error"]["code"]) == (400, -32700)
    status, answer = raw_http.post(server.port, path, b" " * 1_100_000, headers, chunked=True)
    assert status == 413
    assert "THOUGHTLINE_MAX_BODY_BYTES" in json.loads(answer)["message"]
    assert stored_thoughts(settings_data_dir) == 0


@pytest.mark.parametrize("era", [None, "2025-06-18"])
def test_a_valid_utf8_body_still_writes_on_compat_and_gets_the_era_error_on_mcp(
    server: ThreadServer, settings_data_dir: Path, era: str | None
) -> None:
    headers = {**HEADERS, **({"MCP-Protocol-Version": era} if era else {})}
    status, answer = raw_http.post(server.port, "/mcp-compat", tools_call_text(False).encode(), headers)
    assert status == 200
    assert json.loads(answer)["result"]["isError"] is False
    status, answer = raw_http.post(server.port, "/mcp", tools_call_text(False).encode(), headers)
    reply = json.loads(answer)
    assert (status, reply["id"], reply["error"]["code"]) == (400, 7, -32022)  # the era error echoes the id
    assert stored_thoughts(settings_data_dir) == 1


def test_the_parser_keeps_nesting_up_to_the_limit_and_names_what_it_refuses() -> None:
    deep = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert parse_message(deep.encode()) is not None
    with pytest.raises(BodyError, match=f"deeper than {MAX_DEPTH} levels"):
        parse_message(("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)).encode())
    with pytest.raises(BodyError, match="is UTF-16"):
        parse_message('{"a":1}'.encode("utf-16-le"))
    with pytest.raises(BodyError, match="is UTF-32"):
        parse_message('{"a":1}'.encode("utf-32-be"))
    with pytest.raises(BodyError, match="byte order mark"):
        parse_message(b'\xef\xbb\xbf{"a":1}')
    assert parse_message('{"a":"\\ud83d\\ude00 ü"}'.encode()) == {"a": "\U0001f600 ü"}


@pytest.mark.parametrize(
    ("body", "kind", "escape"),
    [
        (b'{"a":"\\ud800"}', "leading (high)", "\\ud800"),
        (b'{"a":"\\udc00"}', "trailing (low)", "\\udc00"),
        (b'{"a":"\\ud83d\\ude00 then \\uDBFF"}', "leading (high)", "\\udbff"),
    ],
)
def test_a_lone_surrogate_escape_is_named_as_such_with_its_kind(body: bytes, kind: str, escape: str) -> None:
    with pytest.raises(BodyError) as refused:
        parse_message(body)
    assert f"lone {kind} UTF-16 surrogate escape {escape}" in str(refused.value)
