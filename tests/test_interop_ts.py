"""Cross-implementation interop: the TypeScript MCP SDK (tests/interop/client.mjs) against a real server.

The Node script walks one thinking session over `/mcp-compat` with `StreamableHTTPClientTransport`
and a bearer header, and prints what the SDK saw as JSON; these tests judge that JSON and then read
the same sequence back through the Python `mcp` client to prove both clients share one store.
Because client.mjs lists tools before calling them, the TypeScript SDK also validates every
`structuredContent` against the tool's declared `outputSchema` (a mismatch would make it throw).
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

import pytest

from tests.interop.toolchain import INSTALL_SCRIPT, INTEROP_DIR, Toolchain
from tests.support import TOKEN, ChildServer, mcp_client, structured

pytestmark = pytest.mark.slow

CLIENT_TIMEOUT_SECONDS = 60
APP_URI = "ui://sequential-thinking/process.html"


@pytest.fixture(scope="module")
def interop_server(module_server: ChildServer) -> ChildServer:
    """The module's real `thoughtline serve` process (see conftest)."""
    return module_server


def run_client(tools: Toolchain, mode: str, server: ChildServer, token: str) -> dict[str, Any]:
    """Run client.mjs in `mode` against the server's `/mcp-compat` and parse its JSON summary."""
    env = {**os.environ, "THOUGHTLINE_TOKEN": token}
    done = subprocess.run(
        [str(tools.node), str(tools.client_script), mode, server.base_url + "/mcp-compat"],
        cwd=INTEROP_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=CLIENT_TIMEOUT_SECONDS,
        check=False,
    )
    assert done.returncode == 0, f"client.mjs {mode} exited {done.returncode}:\n{done.stderr}\n{server.log()}"
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert isinstance(summary, dict)
    return summary


@pytest.fixture(scope="module")
def session(node_tools: Toolchain, interop_server: ChildServer) -> dict[str, Any]:
    """What the TypeScript SDK saw while writing and reading one sequence."""
    return run_client(node_tools, "session", interop_server, TOKEN)


def calls_by_label(session: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The `sequentialthinking` results keyed by step name (new, continue, branch, revision, final)."""
    return {call["label"]: call for call in session["calls"]}


def test_ts_client_negotiates_a_2025_protocol_on_the_compat_endpoint(session: dict[str, Any]) -> None:
    assert session["sdkVersion"] == "1.32.2"
    assert session["protocolVersion"] in {"2025-03-26", "2025-06-18", "2025-11-25"}
    assert session["server"]["name"] == "thoughtline"
    assert set(session["capabilities"]) >= {"tools", "resources"}


def test_ts_client_lists_tools_with_output_schemas_annotations_and_app_links(session: dict[str, Any]) -> None:
    tools = {tool["name"]: tool for tool in session["tools"]}
    assert {"sequentialthinking", "get_thought_history", "delete_thought_sequence"} <= set(tools)
    assert all(tool["hasOutputSchema"] for tool in tools.values())
    assert tools["sequentialthinking"]["annotations"]["readOnlyHint"] is False
    assert tools["sequentialthinking"]["annotations"]["idempotentHint"] is False
    assert tools["get_thought_history"]["annotations"]["readOnlyHint"] is True
    assert tools["get_thought_history"]["annotations"]["idempotentHint"] is True
    assert tools["delete_thought_sequence"]["annotations"]["destructiveHint"] is True
    for name in ("sequentialthinking", "get_thought_history"):
        assert tools[name]["meta"]["ui"]["resourceUri"] == APP_URI


def test_ts_client_writes_a_sequence_with_a_branch_a_revision_and_a_final_thought(session: dict[str, Any]) -> None:
    calls = calls_by_label(session)
    assert list(calls) == ["new", "continue", "branch", "revision", "final"]
    assert not any(call["isError"] for call in calls.values()), calls
    sequence_ids = {call["structured"]["sequenceId"] for call in calls.values()}
    assert len(sequence_ids) == 1
    assert next(iter(sequence_ids)).startswith("seq_")
    assert [call["structured"]["thoughtHistoryLength"] for call in calls.values()] == [1, 2, 3, 4, 5]
    assert calls["new"]["structured"]["branches"] == []
    assert calls["branch"]["structured"]["branchId"] == "alt"
    assert calls["final"]["structured"]["branches"] == ["alt"]
    assert calls["final"]["structured"]["nextThoughtNeeded"] is False
    assert calls["new"]["text"].startswith("Thought 1/3\n")
    assert calls["branch"]["text"].startswith("Branch alt from thought 1 · 2/3\n")
    assert calls["revision"]["text"].startswith("Revision of thought 1 · 3/4\n")
    assert "thought" not in calls["new"]["structured"]  # the thought is not echoed (SPEC §2.1)


def test_ts_client_reads_back_the_history_it_wrote(session: dict[str, Any]) -> None:
    history = session["history"]
    assert not history["isError"], history["text"]
    page = history["structured"]
    assert page["nextCursor"] is None
    assert page["sequence"]["status"] == "completed"
    assert page["sequence"]["thoughtHistoryLength"] == 5
    assert [(b["branchId"], b["parentBranchId"], b["branchFromThought"]) for b in page["sequence"]["branches"]] == [
        ("alt", None, 1)
    ]
    thoughts = page["thoughts"]
    assert [(t["thoughtNumber"], t.get("branchId")) for t in thoughts] == [
        (1, None),
        (2, None),
        (2, "alt"),
        (3, None),
        (4, None),
    ]
    assert thoughts[3]["isRevision"] is True
    assert thoughts[3]["revisesThought"] == 1


@pytest.mark.anyio
async def test_python_client_sees_the_same_thoughts_the_ts_client_stored(
    session: dict[str, Any], interop_server: ChildServer
) -> None:
    sequence_id = session["calls"][0]["structured"]["sequenceId"]
    async with mcp_client(interop_server.base_url) as client:
        page = structured(await client.call_tool("get_thought_history", {"sequenceId": sequence_id}))
    seen_by_ts = session["history"]["structured"]["thoughts"]
    assert page["thoughts"] == seen_by_ts
    assert [t["thought"] for t in page["thoughts"]] == [
        "Interop: the TypeScript client opens a sequence.",
        "Second step on the main path.",
        "An alternative forked from thought 1.",
        "Revising thought 1 with what the branch showed.",
        "Conclusion: both paths agree.",
    ]


def test_ts_client_lists_and_reads_the_app_resource(session: dict[str, Any]) -> None:
    assert {"uri": APP_URI, "mimeType": "text/html;profile=mcp-app"} in session["resources"]
    [content] = session["appResource"]
    assert content["uri"] == APP_URI
    assert content["mimeType"] == "text/html;profile=mcp-app"
    assert content["textLength"] > 1000


def test_ts_client_reading_an_unknown_resource_gets_a_resource_not_found_code(session: dict[str, Any]) -> None:
    error = session["unknownResource"]["error"]
    assert error is not None
    assert error["code"] in {-32002, -32602}


def test_ts_client_with_a_bad_token_gets_an_http_401_invalid_token(
    node_tools: Toolchain, interop_server: ChildServer
) -> None:
    outcome = run_client(node_tools, "bad-token", interop_server, "not-the-token-" + "y" * 40)
    assert outcome["connected"] is False
    assert outcome["error"]["name"] == "StreamableHTTPError"
    assert outcome["error"]["code"] == 401
    assert "invalid_token" in outcome["error"]["message"]


def test_interop_install_script_is_a_no_op_when_node_modules_is_current(node_tools: Toolchain) -> None:
    done = subprocess.run(["bash", str(INSTALL_SCRIPT)], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
