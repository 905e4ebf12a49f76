"""The MCP App resource: its URI, MIME type, HTML text and `_meta.ui` (SPEC §6, issue 4).

The App's source is `ui/process.html` in the repository, with what it shares with the library pages
(the theme `ui/theme.css`, the process renderer `ui/render.js` and its styles `ui/process.css`)
inlined when it is served, so hosts still get one self-contained document. `thoughtline.ui_assets`
finds the files (wheel copy or checkout).
"""

from __future__ import annotations

from typing import Any

from thoughtline.ui_assets import inline_parts, ui_file

PROCESS_URI = "ui://sequential-thinking/process.html"
"""The `ui://` resource that `sequentialthinking` and `get_thought_history` point at."""

APP_MIME = "text/html;profile=mcp-app"
"""The only MIME type hosts render as an MCP App (ext-apps spec 2026-01-26)."""


def load_process_html() -> str:
    """Return the App's HTML, one self-contained document: `ui/process.html` with the shared theme
    (`ui/theme.css`), renderer (`ui/render.js`) and its styles (`ui/process.css`) inlined where it
    marks them.

    Raises:
        FileNotFoundError: a ui/ file is missing from both the wheel and the checkout.
    """
    return inline_parts(ui_file("process.html"))


def resource_meta() -> dict[str, Any]:
    """Return the resource's `_meta` mapping, `{"ui": {...}}`, as served with `resources/read`.

    Every CSP domain list is empty: the App makes no network requests, loads nothing from
    elsewhere and embeds no frames, so the host may apply its most restrictive policy. The App draws
    no outer frame of its own, hence `prefersBorder: true` (the spec recommends stating it, since
    hosts' defaults differ).
    """
    return {
        "ui": {
            "csp": {
                "connectDomains": [],
                "resourceDomains": [],
                "frameDomains": [],
                "baseUriDomains": [],
            },
            "prefersBorder": True,
        }
    }
