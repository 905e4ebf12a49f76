"""The MCP App's HTML, read as text: self-contained, no network use, within its size budget.

Budget: 48 KiB of unminified source. Measured when the budget was set: the whole App is ~32 KB
(~10 KB gzipped), of which the hand-written bridge for the messages it uses is ~4.5 KB. The
official client, `@modelcontextprotocol/ext-apps` 2.0.4's `app-with-deps.js` (what a single-file
App must inline), is 541,828 bytes (~129 KB gzipped), and every card in a chat loads its own copy.
48 KiB leaves room to grow by half while staying an order of magnitude under that.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from thoughtline.mcp.ui_resource import APP_MIME, PROCESS_URI, load_process_html, resource_meta

SIZE_BUDGET_BYTES = 48 * 1024

# Attributes through which a document can pull something in or send the user away.
URL_ATTRIBUTES = {"src", "href", "srcset", "action", "formaction", "poster", "data", "background", "ping", "manifest"}
# Tags that exist to load or embed something from elsewhere.
LOADING_TAGS = {"link", "iframe", "frame", "object", "embed", "img", "audio", "video", "source", "track", "base"}

FORBIDDEN_CODE = {
    "fetch call": r"\bfetch\s*\(",
    "XMLHttpRequest": r"\bXMLHttpRequest\b",
    "WebSocket": r"\bWebSocket\b",
    "EventSource": r"\bEventSource\b",
    "sendBeacon": r"\bsendBeacon\b",
    "dynamic import()": r"\bimport\s*\(",
    "importScripts": r"\bimportScripts\b",
    "Worker": r"\b(?:Shared)?Worker\s*\(",
    "CSS @import": r"@import\b",
    "CSS url()": r"\burl\s*\(",
    "absolute URL": r"\b(?:https?|wss?|ftp):",
    "protocol-relative URL": r"""["'(=]\s*//[\w.-]""",
    "localStorage": r"\blocalStorage\b",
    "sessionStorage": r"\bsessionStorage\b",
    "indexedDB": r"\bindexedDB\b",
    "cookies": r"\bdocument\.cookie\b",
    "polling timer": r"\bsetInterval\b",
    "BroadcastChannel": r"\bBroadcastChannel\b",
}


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, attrs))


def tags() -> list[tuple[str, list[tuple[str, str | None]]]]:
    parser = _Tags()
    parser.feed(load_process_html())
    parser.close()
    return parser.found


def test_the_app_stays_within_its_size_budget() -> None:
    size = len(load_process_html().encode("utf-8"))
    assert size <= SIZE_BUDGET_BYTES, f"ui/process.html is {size} bytes; the budget is {SIZE_BUDGET_BYTES}"


def test_no_tag_loads_or_links_anything() -> None:
    for tag, attrs in tags():
        assert tag not in LOADING_TAGS, f"<{tag}> loads or embeds another resource"
        named = {name for name, _ in attrs}
        assert not named & URL_ATTRIBUTES, f"<{tag}> has {sorted(named & URL_ATTRIBUTES)}"


def test_styles_and_scripts_are_inline() -> None:
    found = tags()
    assert [t for t, _ in found].count("script") == 1
    assert [t for t, _ in found].count("style") == 1


@pytest.mark.parametrize("what", sorted(FORBIDDEN_CODE))
def test_the_source_uses_no_network_storage_or_polling_api(what: str) -> None:
    match = re.search(FORBIDDEN_CODE[what], load_process_html())
    assert match is None, f"{what} found: {match.group(0)!r}" if match else ""


def test_the_resource_declares_no_outside_domains() -> None:
    assert PROCESS_URI == "ui://sequential-thinking/process.html"
    assert APP_MIME == "text/html;profile=mcp-app"
    ui = resource_meta()["ui"]
    assert ui["csp"] == {"connectDomains": [], "resourceDomains": [], "frameDomains": [], "baseUriDomains": []}
    assert ui["prefersBorder"] is True


def test_the_loader_serves_the_repository_copy_with_the_shared_theme_and_renderer_inlined() -> None:
    ui = Path(__file__).resolve().parents[1] / "ui"
    served = load_process_html()
    assert "/*@thoughtline:" not in served
    for shared in ("theme.css", "render.js", "process.css"):
        assert ui.joinpath(shared).read_text(encoding="utf-8").strip() in served, shared
    before, _, after = ui.joinpath("process.html").read_text(encoding="utf-8").partition("/*@thoughtline:render.js*/")
    assert served.startswith(before.split("/*@thoughtline:")[0])
    assert served.endswith(after)
