"""The files under `ui/`: the App card, the shared theme, process renderer and styles, the pages' assets.

A wheel carries a copy of `ui/` at `thoughtline/_ui/` (pyproject force-includes the folder); an
editable install has no such copy, so the loader falls back to the repository's folder.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

_PACKAGED = "_ui"
# service/thoughtline/ui_assets.py -> the repository root is two directories above this package.
_REPO_DIR = Path(__file__).resolve().parents[2] / "ui"


def ui_file(name: str) -> str:
    """The text of `ui/<name>`: the wheel's packaged copy, else the repository's file.

    Raises:
        FileNotFoundError: neither copy exists; the message names both places looked at.
    """
    packaged = resources.files("thoughtline").joinpath(_PACKAGED, name)
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    repo_copy = _REPO_DIR / name
    if repo_copy.is_file():
        return repo_copy.read_text(encoding="utf-8")
    raise FileNotFoundError(
        f"UI file not found: looked for the packaged thoughtline/{_PACKAGED}/{name} and for {repo_copy}; "
        "reinstall the wheel (pyproject force-includes ui/) or restore ui/."
    )


def inline_parts(html: str) -> str:
    """`html` with each `/*@thoughtline:<file>*/` marker replaced by that ui/ file's text."""
    for name in ("render.js", "theme.css", "process.css"):
        html = html.replace(f"/*@thoughtline:{name}*/", ui_file(name).rstrip("\n"))
    return html
