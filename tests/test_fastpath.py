"""The direct tools/call paths of both endpoints answer exactly as the SDK's own paths do."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support import TOKEN, ThreadServer, mcp_client, serve_in_thread, structured
from thoughtline.config import Settings
from thoughtline.web.app import create_app

HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "Authorization": f"Bearer {TOKEN}",
}


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[ThreadServer, ThreadServer]]:
    """Two servers on separate data dirs: direct path on, and off."""
    with (
        serve_in_thread(create_app(Settings(data_dir=tmp_path / "a", api_token=TOKEN))) as direct,
        serve_in_thread(create_app(Settings(data_dir=tmp_path / "b", api_token=TOKEN), direct_tool_calls=False)) as sdk,
    ):
        yield direct, sdk


def normalise(text: str) -> str:
    text = re.sub(r"seq_[0-9a-f]{32}", "seq_X", text)
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", "TIME", text)
    text = re.sub(r'"nextCursor": "[^"]+"', '"nextCursor": "CURSOR"', text)
    return re.sub(r"cursor[= ]\S+ ", "cursor CURSOR ", text)  # hints name the cursor: each store signs its own


def exchange(server: ThreadServer, body: bytes, headers: dict[str, str], path: str = "/mcp-compat") -> tuple[int, Any]:
    response = httpx.post(server.base_url + path, content=body, headers=headers)
    try:
        parsed: Any = response.json()
    except ValueError:
        parsed = response.text
    return response.status_code, parsed


def call(name: str, arguments: Any, request_id: Any = 1, **params: Any) -> bytes:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments, **params},
        }
    ).encode()


CONVERSATION: list[tuple[str, dict[str, Any]]] = [
    ("sequentialthinking", {"thought": "a", "nextThoughtNeeded": True, "thoughtNumber": 1, "totalThoughts": 2}),
    (
        "sequentialthinking",
        {
            "thought": "b",
            "nextThoughtNeeded": "true",
            "thoughtNumber": "2",
            "totalThoughts": 2,
            "sequenceId": "SEQ",
        },
    ),
    (
        "sequentialthinking",
        {
            "thought": "c",
            "nextThoughtNeeded": False,
            "thoughtNumber": 3,
            "totalThoughts": 2,
            "sequenceId": "SEQ",
            "branchId": "x",
            "branchFromThought": 1,
        },
    ),
    (
        "sequentialthinking",
        {"thought": "d", "nextThoughtNeeded": True, "thoughtNumber": 1, "totalThoughts": 1, "sequenceId": "SEQ"},
    ),
    (
        "sequentialthinking",
        {
            "thought": "e",
            "nextThoughtNeeded": True,
            "thoughtNumber": 9,
            "totalThoughts": 1,
            "sequenceId": "SEQ",
            "isRevision": True,
        },
    ),
    (
        "sequentialthinking",
        {"thought": "ü → 中", "nextThoughtNeeded": True, "thoughtNumber": 0, "totalThoughts": 1},
    ),
    ("sequentialthinking", {"thought": "f", "bogus": 1}),
    # Canonical-style calls: no sequenceId; 4 continues SEQ (open, highest number 3), 7 starts anew.
    ("sequentialthinking", {"thought": "g", "nextThoughtNeeded": True, "thoughtNumber": 4, "totalThoughts": 5}),
    ("sequentialthinking", {"thought": "h", "nextThoughtNeeded": True, "thoughtNumber": 7, "totalThoughts": 9}),
    ("get_thought_history", {"sequenceId": "SEQ", "limit": 2}),
    ("get_thought_history", {"sequenceId": "SEQ", "limit": 500}),
    ("delete_thought_sequence", {"sequenceId": "SEQ", "confirm": True}),
    ("delete_thought_sequence", {"sequenceId": "SEQ", "confirm": True}),
]


def test_both_paths_give_the_same_answers_for_a_whole_conversation(pair: tuple[ThreadServer, ThreadServer]) -> None:
    direct, sdk = pair
    seqs: dict[str, str] = {}
    steps = CONVERSATION
    for number, (name, arguments) in enumerate(steps):
        answers = []
        for server, label in ((direct, "direct"), (sdk, "sdk")):
            args = {k: (seqs.get(label, v) if v == "SEQ" else v) for k, v in arguments.items()}
            status, body = exchange(server, call(name, args, request_id=f"r{number}"), HEADERS)
            if "result" in body and "structuredContent" in body["result"] and label not in seqs:
                seqs[label] = body["result"]["structuredContent"]["sequenceId"]
            answers.append((status, normalise(json.dumps(body, sort_keys=True, ensure_ascii=False))))
        assert answers[0] == answers[1], (name, arguments)
    state = direct.app.state.direct_tool_calls
    assert state is not None
    assert state.answered == len(steps)


@pytest.mark.parametrize(
    ("body", "headers"),
    [
        (call("no_such_tool", {}), HEADERS),
        (call("sequentialthinking", "not an object"), HEADERS),
        (call("sequentialthinking", {}, request_id=True), HEADERS),
        (b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}', HEADERS),
        (b"{not json", HEADERS),
        (b"[]", HEADERS),
        (call("sequentialthinking", {}), {**HEADERS, "Accept": "text/event-stream"}),
        (call("sequentialthinking", {}), {**HEADERS, "Content-Type": "text/plain"}),
        (call("sequentialthinking", {}), {**HEADERS, "MCP-Protocol-Version": "1999-01-01"}),
    ],
)
def test_anything_unusual_is_left_to_the_sdk_and_answered_alike(
    pair: tuple[ThreadServer, ThreadServer], body: bytes, headers: dict[str, str]
) -> None:
    direct, sdk = pair
    assert normalise(json.dumps(exchange(direct, body, headers), sort_keys=True)) == normalise(
        json.dumps(exchange(sdk, body, headers), sort_keys=True)
    )
    state = direct.app.state.direct_tool_calls
    assert state is not None
    assert state.answered == 0


MODERN = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call"}
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def modern_call(name: str, arguments: Any, request_id: Any = 1, meta: Any = None) -> tuple[bytes, dict[str, str]]:
    """A 2026-07-28 tools/call body and its routing headers."""
    body = call(name, arguments, request_id, _meta=MODERN_META if meta is None else meta)
    return body, {**HEADERS, **MODERN, "Mcp-Name": name}


def test_both_paths_of_mcp_give_the_same_answers_for_a_whole_conversation(
    pair: tuple[ThreadServer, ThreadServer],
) -> None:
    direct, sdk = pair
    seqs: dict[str, str] = {}
    for number, (name, arguments) in enumerate(CONVERSATION):
        answers = []
        for server, label in ((direct, "direct"), (sdk, "sdk")):
            args = {k: (seqs.get(label, v) if v == "SEQ" else v) for k, v in arguments.items()}
            body, headers = modern_call(name, args, request_id=f"r{number}")
            status, reply = exchange(server, body, headers, "/mcp")
            if "result" in reply and "structuredContent" in reply["result"] and label not in seqs:
                seqs[label] = reply["result"]["structuredContent"]["sequenceId"]
            answers.append((status, normalise(json.dumps(reply, sort_keys=True, ensure_ascii=False))))
        assert answers[0] == answers[1], (name, arguments)
        assert '"resultType": "complete"' in answers[0][1]
    state = direct.app.state.modern_tool_calls
    assert state is not None
    assert state.answered == len(CONVERSATION)


def _modern_oddities() -> list[tuple[bytes, dict[str, str]]]:
    body, headers = modern_call("sequentialthinking", {"thought": "x"})
    return [
        modern_call("no_such_tool", {}),
        modern_call("sequentialthinking", "not an object"),
        modern_call("sequentialthinking", {}, meta={"io.modelcontextprotocol/protocolVersion": "2026-07-28"}),
        modern_call("sequentialthinking", {}, meta={**MODERN_META, "io.modelcontextprotocol/clientInfo": "bad"}),
        modern_call("sequentialthinking", {}, meta={**MODERN_META, "io.modelcontextprotocol/protocolVersion": "x"}),
        (body, {**headers, "Mcp-Name": "get_thought_history"}),
        (body, {**headers, "Mcp-Method": "tools/list"}),
        (body, {**headers, "Accept": "text/event-stream"}),
        (body, {**headers, "Content-Type": "text/plain"}),
        (b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{}}}', headers),
        (b"[]", headers),
    ]


@pytest.mark.parametrize("case", range(len(_modern_oddities())))
def test_anything_unusual_on_mcp_is_left_to_the_sdk_and_answered_alike(
    pair: tuple[ThreadServer, ThreadServer], case: int
) -> None:
    direct, sdk = pair
    body, headers = _modern_oddities()[case]
    answers = [normalise(json.dumps(exchange(s, body, headers, "/mcp"), sort_keys=True)) for s in (direct, sdk)]
    assert answers[0] == answers[1]
    state = direct.app.state.modern_tool_calls
    assert state is not None
    assert state.answered == 0


@pytest.mark.anyio
async def test_the_sdk_client_in_2026_mode_is_answered_by_the_direct_path(server: ThreadServer) -> None:
    state = server.app.state.modern_tool_calls
    args = {"thought": "direct", "nextThoughtNeeded": False, "thoughtNumber": 1, "totalThoughts": 1}
    async with mcp_client(server.base_url, path="/mcp", mode="2026-07-28") as client:
        written = structured(await client.call_tool("sequentialthinking", args))
        page = structured(await client.call_tool("get_thought_history", {"sequenceId": written["sequenceId"]}))
    assert page["thoughts"][0]["thought"] == "direct"
    assert state.answered == 2
