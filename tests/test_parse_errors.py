"""Bodies the JSON parser chokes on are 400s with no traceback, and never a 5xx after a commit (issue 11, F5)."""

from __future__ import annotations

import logging
from pathlib import Path

import apsw
import httpx
import pytest

from tests.support import TOKEN, ThreadServer

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
