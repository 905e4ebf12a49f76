"""The pages' HTML frame and the headers that keep it safe.

Every page is one document that loads one stylesheet and one script, both ours and served from
`/library/assets/`, under a Content-Security-Policy that allows nothing else: no inline script or
style, no other origin, no framing. Every value that came from a store goes through `escape`
before it is placed in markup; `data_block` embeds JSON where no script can start.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from html import escape
from typing import Any
from urllib.parse import quote, urlencode

from starlette.responses import HTMLResponse

from thoughtline.pages.session import Session

ASSETS = "/library/assets"


def csp(form_action: tuple[str, ...] = ()) -> str:
    """The pages' policy: our own script, stylesheet and forms only; never framed."""
    targets = " ".join(("'self'", *form_action))
    return (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
        f"base-uri 'none'; form-action {targets}; frame-ancestors 'none'"
    )


SECURITY_HEADERS = {
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    # Our own form posts must carry a real Origin (the CSRF check reads it); 'no-referrer' would
    # make them send `Origin: null`.
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def e(value: object) -> str:
    """Escape any value for HTML text or a quoted attribute."""
    return escape("" if value is None else str(value), quote=True)


def href(path: str, **query: object) -> str:
    """A same-site link with a query string (empty values left out), escaped for an attribute."""
    params = {k: str(v) for k, v in query.items() if v not in (None, "", False)}
    return e(path + ("?" + urlencode(params) if params else ""))


def sequence_href(sequence_id: str) -> str:
    """The sequence page's link."""
    return e("/library/sequences/" + quote(sequence_id, safe=""))


def thread_href(name: str) -> str:
    """A thread page's link (names may hold any character but '/' is quoted too)."""
    return e("/library/threads/" + quote(name, safe=""))


def data_block(element_id: str, value: Any) -> str:
    """JSON in a non-executed `<script type=application/json>`; `<` is escaped so text cannot close it."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return f'<script type="application/json" id="{e(element_id)}">{text}</script>'


def csrf_field(session: Session) -> str:
    """The hidden form field every state-changing form carries."""
    return f'<input type="hidden" name="csrf" value="{e(session.csrf)}">'


def post_button(
    session: Session,
    action: str,
    label: str,
    *,
    fields: dict[str, str] | None = None,
    kind: str = "",
    name: str = "",
) -> str:
    """A one-button form that POSTs to `action` (keyboard-reachable like any button).

    `name`: the accessible name when `label` repeats on the page (one Accept per proposal), so a
    screen reader says which row the button acts on; it starts with `label`, as WCAG 2.5.3 asks.
    """
    hidden = "".join(f'<input type="hidden" name="{e(k)}" value="{e(v)}">' for k, v in (fields or {}).items())
    cls = f' class="btn {e(kind)}"' if kind else ' class="btn"'
    aria = f' aria-label="{e(name)}"' if name else ""
    return (
        f'<form method="post" action="{e(action)}" class="inline">{csrf_field(session)}{hidden}'
        f'<button type="submit"{cls}{aria}>{e(label)}</button></form>'
    )


def chip(text: str, kind: str = "") -> str:
    """A small label (status, lifecycle, event kind)."""
    return f'<span class="chip {e(kind)}">{e(text)}</span>'


def thread_badges(names: Iterable[str]) -> str:
    """Links to each thread a sequence belongs to."""
    return "".join(f'<a class="badge" href="{thread_href(n)}">{e(n)}</a>' for n in names)


def when(iso: object) -> str:
    """An ISO timestamp as a `<time>` showing minutes, UTC."""
    text = str(iso or "")
    return f'<time datetime="{e(text)}">{e(text[:16].replace("T", " "))}</time>' if text else ""


def _nav(session: Session | None, current: str, library: bool) -> str:
    if session is None:
        return ""
    links = [("/library", "Sequences"), ("/library/threads", "Threads"), ("/library/proposals", "Proposals")]
    links = links if library else links[:1]  # with the library off there are no thread or proposal pages
    items = "".join(
        f'<a href="{e(path)}"{" aria-current=page" if path == current else ""}>{e(label)}</a>' for path, label in links
    )
    who = e(session.login) if session.login else "owner"
    signout = post_button(session, "/library/signout", "Sign out", kind="quiet")
    return (
        f'<header class="top"><a class="brand" href="/library">Thoughtline</a><nav aria-label="Library">{items}</nav>'
        f'<span class="who">signed in as {who}</span>{signout}</header>'
    )


def document(
    title: str,
    main: str,
    *,
    session: Session | None,
    current: str = "",
    status: int = 200,
    form_action: tuple[str, ...] = (),
    page: str = "",
    head: str = "",
    library: bool = True,
) -> HTMLResponse:
    """A whole page: `main` (and any extra `head` markup) must already be escaped.

    `library`: whether THOUGHTLINE_LIBRARY is on (the header links only to pages that exist).
    """
    html = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="color-scheme" content="light dark">'
        f"<title>{e(title)} · Thoughtline</title>"
        f'<link rel="stylesheet" href="{ASSETS}/library.css"><link rel="icon" href="{ASSETS}/icon.svg">'
        f'<script src="{ASSETS}/library.js" defer></script>{head}</head>'
        f'<body data-page="{e(page)}"><a class="skip" href="#main">Skip to content</a>'
        f'{_nav(session, current, library)}<main id="main" tabindex="-1">{main}</main></body></html>'
    )
    headers = {"Content-Security-Policy": csp(form_action), **SECURITY_HEADERS}
    return HTMLResponse(html, status_code=status, headers=headers)


def message_page(
    title: str,
    message: str,
    *,
    status: int,
    session: Session | None = None,
    extra: str = "",
    back: tuple[str, str] | None = None,
    library: bool = True,
) -> HTMLResponse:
    """A page that says what happened and what to do next; `back` is (a path of ours, its link text)."""
    link = f'<p><a class="back" href="{e(back[0])}">{e(back[1])}</a></p>' if back else ""
    body = f'<h1>{e(title)}</h1><p class="notice">{e(message)}</p>{link}{extra}'
    return document(title, body, session=session, status=status, library=library)
