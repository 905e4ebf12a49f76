"""Property tests: arbitrary tool arguments and headers never produce a 500 or a partial write."""

from __future__ import annotations

import json
import string
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import apsw
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import TOKEN, ThreadServer, serve_in_thread
from thoughtline.config import Settings
from thoughtline.domain.arguments import THOUGHT_FIELDS
from thoughtline.errors import ErrorCode
from thoughtline.identity import OWNER_KEY
from thoughtline.storage.router import store_path
from thoughtline.web.app import create_app

CODES = set(get_args(ErrorCode))
HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "Authorization": f"Bearer {TOKEN}",
    "MCP-Protocol-Version": "2025-06-18",
}


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ThreadServer, Path, str]]:
    """One server for the whole module, with one sequence (and a branch) to aim at."""
    data_dir = tmp_path_factory.mktemp("fuzz") / "data"
    with serve_in_thread(create_app(Settings(data_dir=data_dir, api_token=TOKEN))) as running:
        first = tool(
            running,
            "sequentialthinking",
            {"thought": "a", "nextThoughtNeeded": True, "thoughtNumber": 1, "totalThoughts": 2},
        )
        seq = first["structuredContent"]["sequenceId"]
        tool(
            running,
            "sequentialthinking",
            {
                "thought": "b",
                "nextThoughtNeeded": True,
                "thoughtNumber": 2,
                "totalThoughts": 2,
                "sequenceId": seq,
                "branchId": "alt",
                "branchFromThought": 1,
            },
        )
        yield running, store_path(data_dir, OWNER_KEY), seq


def tool(server: ThreadServer, name: str, args: Any) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": args}}
    response = httpx.post(server.base_url + "/mcp-compat", json=body, headers=HEADERS, timeout=30)
    assert response.status_code < 500, response.text
    payload: dict[str, Any] = response.json()
    result: dict[str, Any] = payload.get("result") or {"isError": True, "jsonrpcError": payload.get("error")}
    return result


def counts(path: Path) -> tuple[int, int, int]:
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        row = conn.execute(
            "SELECT (SELECT count(*) FROM sequences), (SELECT count(*) FROM thoughts), (SELECT count(*) FROM branches)"
        ).fetchall()[0]
        return int(row[0]), int(row[1]), int(row[2])  # type: ignore[arg-type]
    finally:
        conn.close()


json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
    st.sampled_from(["true", "false", "3", "main", "alt", "seq_" + "0" * 32, "", " "]),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
field_names = st.sampled_from(sorted(THOUGHT_FIELDS)) | st.text(string.ascii_letters, min_size=1, max_size=12)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(args=st.dictionaries(field_names, json_values, max_size=8), aim=st.booleans())
def test_any_arguments_give_a_result_or_a_coded_error_and_errors_write_nothing(
    shared: tuple[ThreadServer, Path, str], args: dict[str, Any], aim: bool
) -> None:
    server, path, seq = shared
    if aim:
        args = {
            "thought": "t",
            "nextThoughtNeeded": True,
            "thoughtNumber": 3,
            "totalThoughts": 3,
            "sequenceId": seq,
            **args,
        }
    before = counts(path)
    result = tool(server, "sequentialthinking", args)
    if result.get("isError"):
        message = result["content"][0]["text"] if "content" in result else ""
        assert message.split(":", 1)[0] in CODES, message
        assert counts(path) == before
    else:
        after = counts(path)
        assert after[1] == before[1] + 1


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    args=st.dictionaries(
        st.sampled_from(["sequenceId", "cursor", "limit", "order", "branchId", "maxCharacters"]),
        json_values,
        max_size=6,
    )
)
def test_any_history_arguments_never_fail_the_server(
    shared: tuple[ThreadServer, Path, str], args: dict[str, Any]
) -> None:
    server, _, seq = shared
    result = tool(server, "get_thought_history", {"sequenceId": seq, **args})
    if result.get("isError") and "content" in result:
        assert result["content"][0]["text"].split(":", 1)[0] in CODES


header_values = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=60)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    name=st.sampled_from(
        [
            "Authorization",
            "Host",
            "Origin",
            "MCP-Protocol-Version",
            "Content-Type",
            "Accept",
            "Mcp-Method",
            "Mcp-Session-Id",
        ]
    ),
    value=header_values,
    path=st.sampled_from(["/mcp", "/mcp-compat", "/healthz", "/"]),
)
def test_any_header_value_gets_a_clear_answer_never_a_500(
    shared: tuple[ThreadServer, Path, str], name: str, value: str, path: str
) -> None:
    server, db, _ = shared
    before = counts(db)
    call = {
        "name": "sequentialthinking",
        "arguments": {"thought": "h", "nextThoughtNeeded": True, "thoughtNumber": 1, "totalThoughts": 1},
    }
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}).encode()
    headers = {**HEADERS, name: value}
    try:
        response = httpx.post(server.base_url + path, content=body, headers=headers, timeout=30)
    except httpx.LocalProtocolError:
        return  # the client itself refuses to send this header value
    assert response.status_code < 500, (name, value, response.status_code, response.text)
    if response.status_code != 200 or path not in ("/mcp", "/mcp-compat"):
        assert counts(db)[1] == before[1]
