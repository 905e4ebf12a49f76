"""The MCP App resource: its URI, MIME type, HTML text and `_meta.ui` (SPEC §6, issue 4).

The App's source is `ui/process.html` in the repository. A wheel carries a copy at
`thoughtline/_ui/process.html` (pyproject force-includes it); an editable install has no such copy,
so the loader falls back to the repository file.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

PROCESS_URI = "ui://sequential-thinking/process.html"
"""The `ui://` resource that `sequentialthinking` and `get_thought_history` point at."""

APP_MIME = "text/html;profile=mcp-app"
"""The only MIME type hosts render as an MCP App (ext-apps spec 2026-01-26)."""

_PACKAGED = ("_ui", "process.html")
# service/thoughtline/mcp/ui_resource.py -> the repository root is three directories above this one.
_REPO_COPY = Path(__file__).resolve().parents[3] / "ui" / "process.html"


def load_process_html() -> str:
    """Return the App's HTML: the wheel's packaged copy, else the repository's `ui/process.html`.

    Raises:
        FileNotFoundError: neither copy exists (a wheel built without the force-include, or a
            checkout missing `ui/`); the message names both places that were looked at.
    """
    packaged = resources.files("thoughtline").joinpath(*_PACKAGED)
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    if _REPO_COPY.is_file():
        return _REPO_COPY.read_text(encoding="utf-8")
    raise FileNotFoundError(
        f"MCP App HTML not found: looked for the packaged thoughtline/{'/'.join(_PACKAGED)} and for "
        f"{_REPO_COPY}; reinstall the wheel (pyproject force-includes ui/process.html) or restore ui/."
    )


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
