"""The MCP App in a real browser: a test host embeds `ui/process.html` and talks to a live server.

`tests/ui_host/host.html` plays the host side of MCP Apps in Chromium (Playwright). The App's
`tools/call` goes from that page to `/rpc/tools/call` on the harness origin, which a Playwright
route answers by calling the live Thoughtline server over MCP. Every other request is aborted and
recorded, and requests made from inside the App's frame are counted separately.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client
from playwright.sync_api import (
    Browser,
    FrameLocator,
    Page,
    Request,
    Route,
    expect,
    sync_playwright,
)

from tests.support import CHROMIUM, ChildServer, mcp_client, start_child, stop_child
from tests.support import CHROMIUM_ARGS as BASE_CHROMIUM_ARGS
from thoughtline.mcp.ui_resource import APP_MIME, PROCESS_URI, load_process_html, resource_meta

pytestmark = pytest.mark.slow

CHROMIUM_ARGS = [
    *BASE_CHROMIUM_ARGS,
    # Without this, requests from a sandboxed srcdoc frame run in a separate process Playwright does
    # not observe, and "zero requests" would be vacuously true (the canary test guards this).
    "--disable-features=IsolateSandboxedIframes",
]
HARNESS_ORIGIN = "http://harness.test"
HOST_PAGE = Path(__file__).parent / "ui_host" / "host.html"
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts" / "ui"
WAIT_MS = 20_000

ToolCall = Callable[[str, dict[str, Any]], dict[str, Any]]


@contextmanager
def mcp_session(base_url: str, token: str) -> Iterator[tuple[BlockingPortal, Client]]:
    """One MCP session to `base_url`, usable from synchronous code through the returned portal.

    Playwright's sync API keeps its own event loop on the main thread, so the async client lives in
    an anyio portal (a loop in a worker thread), which also enters and exits it in one task.
    """
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(mcp_client(base_url, token)) as client:
        yield portal, client


@dataclass
class Harness:
    """One test host page with the App's frame, plus what left (or tried to leave) that frame."""

    page: Page
    call_tool: ToolCall
    app_requests: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)

    @property
    def app(self) -> FrameLocator:
        return self.page.frame_locator("#app")

    def mount(self, scenario: dict[str, Any], html: str | None = None) -> None:
        """Load the App (or `html`) into the sandboxed frame and play `scenario` once it initializes."""
        self.page.evaluate("([html, scenario]) => host.mount(html, scenario)", [html or load_process_html(), scenario])

    def host(self, expression: str) -> Any:
        """Evaluate a JS expression over the host's record (`host.sizes`, `host.toolCalls`, ...)."""
        return self.page.evaluate(f"() => {expression}")

    def wait_for(self, expression: str) -> None:
        self.page.wait_for_function(f"() => {expression}", timeout=WAIT_MS)

    def teardown(self) -> None:
        """Send ui/resource-teardown and wait for the App's answer.

        postMessage keeps order, so once the answer is in, everything the App sent before it
        (a stray tools/call, say) has been recorded too.
        """
        self.page.evaluate("() => host.teardown('test finished')")
        self.wait_for("host.responses.some(r => r.id === 'teardown-1')")

    def screenshot(self, name: str) -> None:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        self.page.locator("#app").screenshot(path=str(ARTIFACTS / f"{name}.png"))


@pytest.fixture(scope="module")
def app_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChildServer]:
    """`python -m thoughtline serve`, as conftest's `live_server` starts it, shared by this module.

    Every test writes its own sequence, so one process serves them all; a process per test would
    spend most of this module's time starting servers.
    """
    child = start_child(tmp_path_factory.mktemp("app-ui") / "data")
    try:
        yield child
    finally:
        stop_child(child)


@pytest.fixture(scope="module")
def call_tool(app_server: ChildServer) -> Iterator[ToolCall]:
    with mcp_session(app_server.base_url, app_server.token) as (portal, client):

        def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
            result = portal.call(client.call_tool, name, arguments)
            dumped: dict[str, Any] = result.model_dump(by_alias=True, exclude_none=True, mode="json")
            return dumped

        yield call


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def harness(browser: Browser, call_tool: ToolCall) -> Iterator[Harness]:
    context = browser.new_context(viewport={"width": 820, "height": 900}, device_scale_factor=1)
    page = context.new_page()
    harness = Harness(page=page, call_tool=call_tool)

    def block(route: Route) -> None:
        harness.blocked.append(route.request.url)
        route.abort()

    def serve(route: Route) -> None:
        path = route.request.url.removeprefix(HARNESS_ORIGIN)
        if path == "/rpc/tools/call" and route.request.method == "POST":
            params = json.loads(route.request.post_data or "{}")
            try:
                result = call_tool(params["name"], params.get("arguments") or {})
            except Exception as error:  # the host turns a failed proxy call into a JSON-RPC error
                body = {"code": -32603, "message": f"proxy failed: {error}"}
                route.fulfill(status=502, content_type="application/json", body=json.dumps(body))
                return
            route.fulfill(status=200, content_type="application/json", body=json.dumps(result))
        elif path in ("/", "/host.html"):
            route.fulfill(status=200, content_type="text/html", body=HOST_PAGE.read_text(encoding="utf-8"))
        else:  # e.g. the browser's own /favicon.ico: the harness origin, so not a leak
            route.fulfill(status=404, body="")

    def seen(request: Request) -> None:
        if request.frame.parent_frame is not None:
            harness.app_requests.append(request.url)

    # Routes registered later win: everything is blocked unless it is the harness origin.
    context.route("**/*", block)
    context.route(f"{HARNESS_ORIGIN}/**", serve)
    page.on("request", seen)
    page.goto(f"{HARNESS_ORIGIN}/host.html")
    yield harness
    context.close()


def write_thoughts(call_tool: ToolCall, steps: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """Write `steps` as one sequence; return its id and each call's (arguments, result) pairs."""
    sequence_id: str | None = None
    calls: list[dict[str, Any]] = []
    for step in steps:
        arguments = dict(step) if sequence_id is None else {**step, "sequenceId": sequence_id}
        result = call_tool("sequentialthinking", arguments)
        assert not result.get("isError"), result
        sequence_id = result["structuredContent"]["sequenceId"]
        calls.append({"arguments": arguments, "result": result})
    assert sequence_id is not None
    return sequence_id, calls


def card_scenario(call: dict[str, Any], **host_context: Any) -> dict[str, Any]:
    return {
        "toolInput": call["arguments"],
        "toolResult": call["result"],
        "hostContext": {"theme": "light", **host_context},
        "appTools": ["get_thought_history"],
    }


def step(number: int, total: int, text: str, **extra: Any) -> dict[str, Any]:
    return {
        "thought": text,
        "thoughtNumber": number,
        "totalThoughts": total,
        "nextThoughtNeeded": True,
        **extra,
    }


def long_process() -> list[dict[str, Any]]:
    """120 thoughts: a main path, branch `alt` from main, branch `deep` from inside `alt`
    (interleaved with its parent), and one revision of an early main thought."""
    steps: list[dict[str, Any]] = []

    def add(branch: str, numbers: range, **first: Any) -> None:
        for n in numbers:
            text = f"[{branch} {n}] weigh `option_{branch}_{n}` against the previous step and note what changed."
            extra = first if n == numbers.start else {}
            steps.append(step(n, 70, text, **({"branchId": branch} if branch != "main" else {}), **extra))

    add("main", range(1, 31))
    add("alt", range(13, 33), branchFromThought=12)
    add("deep", range(21, 31), branchFromThought=20, branchFromBranchId="alt")
    add("alt", range(33, 43))
    steps.append(
        step(
            31,
            70,
            "[main 31] Revisit step 5: `option_main_5` undercounted the cost.",
            isRevision=True,
            revisesThought=5,
        )
    )
    add("deep", range(31, 41))
    add("main", range(32, 71))
    steps[-1]["nextThoughtNeeded"] = False
    steps[-1]["thought"] = (
        "[main 70] Conclusion: keep `option_main_5` as revised, adopt the `deep` lane's batching, and "
        "write it up. " + "This final thought is long on purpose so that wrapping is visible. " * 6
    )
    assert len(steps) == 120
    return steps


def test_a_mid_sequence_card_shows_only_its_own_thought(harness: Harness) -> None:
    steps = [
        step(1, 4, "First, list the constraints."),
        step(2, 4, "Second: the cache key must include `tenant_id`, or users collide."),
        step(3, 4, "Third, check the eviction policy."),
    ]
    sequence_id, calls = write_thoughts(harness.call_tool, steps)

    harness.mount(card_scenario(calls[1]))
    app = harness.app
    expect(app.locator("#card-foot")).to_have_text(f"stored in {sequence_id} · 2 thoughts so far", timeout=WAIT_MS)
    expect(app.locator("#card-title")).to_have_text("Thought 2 / 4")
    expect(app.locator("#card-text code")).to_have_text("tenant_id")
    body = app.locator("body").inner_text()
    assert "the cache key must include" in body
    assert "constraints" not in body
    assert "eviction" not in body
    expect(app.locator("#process")).to_be_hidden()
    harness.screenshot("mid-sequence-card")

    harness.teardown()
    assert harness.host("host.toolCalls") == []


def test_branch_and_revision_cards_carry_their_badges(harness: Harness) -> None:
    steps = [
        step(1, 3, "Pick a storage engine."),
        step(2, 3, "Try the `lsm` route.", branchId="lsm", branchFromThought=1),
        step(2, 3, "Rethink step 1: reads dominate.", isRevision=True, revisesThought=1),
    ]
    _, calls = write_thoughts(harness.call_tool, steps)
    app = harness.app

    harness.mount(card_scenario(calls[1]))
    expect(app.locator("#card-head .chip.branch")).to_have_text("lsm · from thought 1", timeout=WAIT_MS)
    expect(app.locator("#card-head .chip.revision")).to_have_count(0)
    harness.screenshot("branch-card")

    harness.mount(card_scenario(calls[2]))
    expect(app.locator("#card-head .chip.revision")).to_have_text("revises thought 1", timeout=WAIT_MS)
    expect(app.locator("#card-head .chip.branch")).to_have_count(0)
    expect(app.locator("#card-title")).to_have_text("Thought 2 / 3")
    harness.screenshot("revision-card")


def test_a_thought_with_a_thread_event_carries_its_badge_on_the_card_and_in_the_process(harness: Harness) -> None:
    steps = [
        step(1, 2, "Quota raised; the copy runs again.", event="blocker_cleared"),
        step(2, 2, "Plain step."),
    ]
    steps[-1]["nextThoughtNeeded"] = False
    _, calls = write_thoughts(harness.call_tool, steps)
    app = harness.app

    harness.mount(card_scenario(calls[0]))
    expect(app.locator("#card-head .chip.event")).to_have_text("blocker cleared", timeout=WAIT_MS)

    harness.mount(card_scenario(calls[1]))
    expect(app.locator("#card-head .chip.event")).to_have_count(0, timeout=WAIT_MS)
    expect(app.locator("#process summary .chip.event")).to_have_text(["blocker cleared"], timeout=WAIT_MS)


def test_long_text_and_long_names_wrap_in_a_narrow_host(harness: Harness) -> None:
    unbroken = "x" * 400
    branch = "b" * 128
    steps = [
        step(1, 2, f"A long token: {unbroken} and a long span `{unbroken}`."),
        step(2, 2, f"Fenced:\n```\n{unbroken}\n```", branchId=branch, branchFromThought=1, nextThoughtNeeded=False),
    ]
    _, calls = write_thoughts(harness.call_tool, steps)
    harness.page.evaluate("() => { document.getElementById('app').style.width = '360px'; }")
    harness.mount(card_scenario(calls[-1]))
    app = harness.app
    expect(app.locator("li.step")).to_have_count(2, timeout=WAIT_MS)
    app.locator("button", has_text="Expand all").click()
    overflow = app.locator("html").evaluate("h => h.scrollWidth - h.clientWidth")
    assert overflow == 0
    harness.screenshot("narrow-host")


def test_a_card_for_a_history_call_draws_the_page_it_was_given(harness: Harness) -> None:
    steps = [step(1, 2, "One."), step(2, 2, "Two.", nextThoughtNeeded=False)]
    sequence_id, _ = write_thoughts(harness.call_tool, steps)
    arguments = {"sequenceId": sequence_id}
    harness.mount(
        {
            "toolInput": arguments,
            "toolResult": harness.call_tool("get_thought_history", arguments),
            "hostContext": {},
            "appTools": ["get_thought_history"],
        }
    )
    expect(harness.app.locator("li.step")).to_have_count(2, timeout=WAIT_MS)
    expect(harness.app.locator("#card-title")).to_have_text("Thought history")
    harness.teardown()
    assert harness.host("host.toolCalls") == []


def test_the_final_card_renders_every_thought_in_order_with_lanes_and_links(harness: Harness) -> None:
    sequence_id, calls = write_thoughts(harness.call_tool, long_process())
    stored = harness.call_tool("get_thought_history", {"sequenceId": sequence_id, "limit": 100})
    branches = {b["branchId"]: b for b in stored["structuredContent"]["sequence"]["branches"]}

    harness.mount(card_scenario(calls[-1]))
    app = harness.app
    expect(app.locator("li.step")).to_have_count(120, timeout=WAIT_MS)

    # Paged through the host with limit 100 until nextCursor was null.
    tool_calls = harness.host("host.toolCalls")
    assert [c["name"] for c in tool_calls] == ["get_thought_history", "get_thought_history"]
    assert "cursor" not in tool_calls[0]["arguments"]
    assert tool_calls[1]["arguments"]["cursor"]
    assert all(c["arguments"]["limit"] == 100 for c in tool_calls)

    rows = app.locator("ol.steps > li").evaluate_all(
        """items => items.map(li => ({kind: li.className.split(' ')[0], index: li.dataset.index,
            branch: li.dataset.branch, depth: li.dataset.depth, forkIndex: li.dataset.forkIndex,
            text: li.querySelector('.text') ? li.querySelector('.text').textContent : null}))"""
    )
    thoughts = [r for r in rows if r["kind"] == "step"]
    assert [int(r["index"]) for r in thoughts] == list(range(1, 121))
    for row, written in zip(thoughts, long_process(), strict=True):
        assert row["text"] == written["thought"].replace("`", "")  # code spans render as <code>
        assert row["branch"] == written.get("branchId", "main")
        assert row["depth"] == {"main": "0", "alt": "1", "deep": "2"}[row["branch"]]

    # Each branch gets one fork row, just before its first thought, pointing at the fork thought.
    forks = [(i, r) for i, r in enumerate(rows) if r["kind"] == "fork"]
    assert [r["branch"] for _, r in forks] == ["alt", "deep"]
    for position, fork in forks:
        assert rows[position + 1]["branch"] == fork["branch"]
        assert int(fork["forkIndex"]) == branches[fork["branch"]]["forkIndex"]
    assert branches["alt"]["forkIndex"] == 12  # main thought 12
    assert branches["deep"]["forkIndex"] == 38  # alt thought 20: alt starts at #31 with thought 13
    assert branches["deep"]["parentBranchId"] == "alt"

    # The revision (#71) links to what it revises (main thought 5, #5), and back.
    revision = app.locator('li.step[data-index="71"]')
    expect(revision.locator("button.link")).to_have_attribute("data-target", "5")
    expect(app.locator('li.step[data-index="5"] button.link')).to_have_attribute("data-target", "71")

    # Earlier steps are collapsed; the last one is open.
    assert app.locator("li.step details[open]").count() == 1
    expect(app.locator('li.step[data-index="120"] details')).to_have_attribute("open", "")
    harness.screenshot("final-card-process")

    # Keyboard: open the revision, follow its link, land on the revised thought.
    revision.locator("summary").focus()
    harness.page.keyboard.press("Enter")
    expect(revision.locator("details")).to_have_attribute("open", "")
    revision.locator("button.link").focus()
    harness.page.keyboard.press("Enter")
    expect(app.locator('li.step[data-index="5"] details')).to_have_attribute("open", "")
    expect(app.locator('li.step[data-index="5"] summary')).to_be_focused()
    harness.screenshot("final-card-revision-link")

    # The same process in the host's dark theme, switched live.
    harness.page.evaluate("() => host.changeContext({theme: 'dark'})")
    expect(app.locator("html")).to_have_css("color-scheme", "dark")
    harness.screenshot("final-card-process-dark")


def test_the_app_sends_no_network_requests_and_the_counter_would_see_one(harness: Harness) -> None:
    # Canary: the same frame setup, plus one deliberate request, must be counted.
    # The canary reports back once its request has failed, i.e. after the browser issued it.
    canary_script = (
        "<script>fetch('http://canary.test/ping')"
        ".catch(() => parent.postMessage({canary: 'settled'}, '*'));</script></body>"
    )
    harness.mount({"hostContext": {}}, html=load_process_html().replace("</body>", canary_script))
    harness.wait_for("host.fromView.some(m => m && m.canary === 'settled')")
    assert harness.app_requests == ["http://canary.test/ping"]
    assert harness.blocked == ["http://canary.test/ping"]
    harness.app_requests.clear()
    harness.blocked.clear()

    steps = [step(1, 2, "Open a sequence."), step(2, 2, "Close it.", nextThoughtNeeded=False)]
    _, calls = write_thoughts(harness.call_tool, steps)
    harness.mount(card_scenario(calls[-1]))
    expect(harness.app.locator("li.step")).to_have_count(2, timeout=WAIT_MS)
    harness.teardown()
    assert harness.app_requests == []
    assert harness.blocked == []


def test_the_dark_theme_comes_from_host_context_and_follows_changes(harness: Harness) -> None:
    steps = [
        step(1, 3, "Sketch."),
        step(2, 3, "Refine `plan()`."),
        step(3, 3, "Ship.", nextThoughtNeeded=False),
    ]
    _, calls = write_thoughts(harness.call_tool, steps)
    dark_host = {"--color-background-primary": "#0f1419", "--color-text-primary": "#e6e1cf"}
    harness.mount(card_scenario(calls[-1], theme="dark", styles={"variables": dark_host}))
    app = harness.app
    expect(app.locator("li.step")).to_have_count(3, timeout=WAIT_MS)
    body = app.locator("body")
    expect(body).to_have_css("background-color", "rgb(15, 20, 25)")
    expect(body).to_have_css("color", "rgb(230, 225, 207)")
    expect(app.locator("html")).to_have_css("color-scheme", "dark")
    app.locator("button", has_text="Expand all").click()
    harness.screenshot("final-card-dark")

    light_host = {"--color-background-primary": "#fbfaf7", "--color-text-primary": "#1b1b18"}
    harness.page.evaluate("(variables) => host.changeContext({theme: 'light', styles: {variables}})", light_host)
    expect(body).to_have_css("background-color", "rgb(251, 250, 247)")
    expect(app.locator("html")).to_have_css("color-scheme", "light")
    harness.screenshot("final-card-light")


def test_without_host_variables_the_app_uses_its_own_dark_palette(harness: Harness) -> None:
    _, calls = write_thoughts(harness.call_tool, [step(1, 2, "Only the theme is given.")])
    harness.mount(card_scenario(calls[0], theme="dark"))
    expect(harness.app.locator("#card-title")).to_have_text("Thought 1 / 2", timeout=WAIT_MS)
    expect(harness.app.locator("body")).to_have_css("background-color", "rgb(28, 28, 27)")


def test_size_changed_follows_the_content_height(harness: Harness) -> None:
    steps = [step(n, 12, f"Step {n} of a dozen.") for n in range(1, 12)]
    steps.append(step(12, 12, "Done.", nextThoughtNeeded=False))
    _, calls = write_thoughts(harness.call_tool, steps)
    harness.mount(card_scenario(calls[-1]))
    app = harness.app
    expect(app.locator("li.step")).to_have_count(12, timeout=WAIT_MS)
    harness.wait_for("host.sizes.length > 0")

    def reported_matches_content() -> float:
        content: float = app.locator("body").evaluate("b => Math.ceil(b.getBoundingClientRect().height)")
        harness.wait_for(f"host.sizes.at(-1).height === {content}")
        return content

    collapsed = reported_matches_content()
    app.locator("button", has_text="Expand all").click()
    expanded = reported_matches_content()
    assert expanded > collapsed
    sizes = harness.host("host.sizes")
    assert all(isinstance(s["width"], int) and isinstance(s["height"], int) for s in sizes)


def test_history_that_cannot_load_shows_a_message_and_keeps_the_cards_own_thought(harness: Harness) -> None:
    _, calls = write_thoughts(harness.call_tool, [step(1, 1, "Final words on `retry()`.", nextThoughtNeeded=False)])
    card = calls[0]
    # The card claims a sequence the server does not have: the real server answers sequence_not_found.
    unknown = "seq_" + "0" * 32
    card["result"]["structuredContent"]["sequenceId"] = unknown
    harness.mount(card_scenario(card))
    app = harness.app
    alert = app.locator("#process [role=alert]")
    expect(alert).to_contain_text("Couldn't load the whole process", timeout=WAIT_MS)
    expect(alert).to_contain_text("sequence_not_found")
    expect(app.locator("#card-text")).to_have_text("Final words on retry().")
    expect(app.locator("#card-foot")).to_contain_text(f"stored in {unknown}")
    harness.screenshot("final-card-history-failed")


def test_a_host_that_refuses_tools_call_gets_the_same_message(harness: Harness) -> None:
    _, calls = write_thoughts(harness.call_tool, [step(1, 1, "Done.", nextThoughtNeeded=False)])
    harness.mount({**card_scenario(calls[0]), "appTools": []})
    alert = harness.app.locator("#process [role=alert]")
    expect(alert).to_contain_text("not callable by this app", timeout=WAIT_MS)
    expect(harness.app.locator("#card-text")).to_have_text("Done.")


def test_a_cancelled_call_says_so(harness: Harness) -> None:
    harness.mount(
        {
            "toolInput": step(4, 5, "Half-written thought."),
            "cancelledReason": "user stopped the turn",
            "hostContext": {},
        }
    )
    foot = harness.app.locator("#card-foot")
    expect(foot).to_contain_text("cancelled (user stopped the turn)", timeout=WAIT_MS)
    expect(harness.app.locator("#card-text")).to_have_text("Half-written thought.")
    harness.teardown()
    assert harness.host("host.responses") == [{"jsonrpc": "2.0", "id": "teardown-1", "result": {}}]


def test_the_live_server_serves_the_app_and_links_both_tools_to_it(app_server: ChildServer) -> None:
    with mcp_session(app_server.base_url, app_server.token) as (portal, client):
        read = portal.call(client.read_resource, PROCESS_URI)
        tools = {tool.name: tool for tool in portal.call(client.list_tools).tools}
    (content,) = read.model_dump(by_alias=True, exclude_none=True)["contents"]
    assert content["mimeType"] == APP_MIME
    assert content["text"] == load_process_html()
    assert content["_meta"] == resource_meta()
    for name in ("sequentialthinking", "get_thought_history"):
        meta = tools[name].model_dump(by_alias=True)["_meta"]
        assert meta["ui"]["resourceUri"] == PROCESS_URI
