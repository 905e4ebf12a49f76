"""The few HTML pages a person sees during sign-in, and the headers that keep them safe.

Every page is self-contained (one inline style allowed by its hash, no scripts, no third-party
assets) and refuses to be framed. The consent page's `form-action` is the known trap: browsers apply
it to every hop of the redirect chain that follows a form submission, so it must list GitHub's
origin and the client's redirect origin, not only 'self' — otherwise the sign-in silently stalls.
"""

from __future__ import annotations

import base64
import hashlib
from html import escape

from starlette.responses import HTMLResponse

STYLE = (
    "body{font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#1b1b1b}"
    "@media(prefers-color-scheme:dark){body{background:#161616;color:#eee}}"
    "code{word-break:break-all;font-size:.9em}dl{display:grid;grid-template-columns:auto 1fr;gap:.25rem 1rem}"
    "dt{font-weight:600}button{font:inherit;padding:.5rem 1.2rem;margin-right:.5rem;cursor:pointer}"
    ".warn{border-left:4px solid #c60;padding-left:.75rem}"
)
_STYLE_HASH = base64.b64encode(hashlib.sha256(STYLE.encode()).digest()).decode()


def csp(form_action: tuple[str, ...] = ()) -> str:
    """A Content-Security-Policy that allows nothing but our inline style and the given form targets."""
    targets = " ".join(("'self'", *form_action)) if form_action else "'none'"
    return (
        f"default-src 'none'; style-src 'sha256-{_STYLE_HASH}'; img-src 'none'; base-uri 'none'; "
        f"form-action {targets}; frame-ancestors 'none'"
    )


def page(title: str, body: str, *, status: int = 200, form_action: tuple[str, ...] = ()) -> HTMLResponse:
    """An HTML response with the strict headers; `body` must already be escaped."""
    html = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>{body}</body></html>"
    )
    return HTMLResponse(
        html,
        status_code=status,
        headers={
            "Content-Security-Policy": csp(form_action),
            "X-Frame-Options": "DENY",
            "X-Content-Type-Options": "nosniff",
            # 'same-origin' rather than 'no-referrer': the latter would make our own form POST carry
            # `Origin: null`, defeating the Origin check on /consent.
            "Referrer-Policy": "same-origin",
            "Cache-Control": "no-store",
        },
    )


def consent_page(
    *,
    client_name: str,
    client_id: str,
    redirect_uri: str,
    resources: tuple[str, ...],
    request_blob: str,
    csrf: str,
    form_action: tuple[str, ...],
) -> HTMLResponse:
    """Ask the person whether this client may use their Thoughtline store."""
    resource_list = "".join(f"<li><code>{escape(r)}</code></li>" for r in resources)
    body = (
        "<h1>Allow access to Thoughtline?</h1>"
        f"<p><strong>{escape(client_name)}</strong> asks to read and write your stored thoughts.</p>"
        f"<dl><dt>Client</dt><dd><code>{escape(client_id)}</code></dd>"
        f"<dt>Returns to</dt><dd><code>{escape(redirect_uri)}</code></dd>"
        f"<dt>Access to</dt><dd><ul>{resource_list}</ul></dd></dl>"
        '<p class="warn">Only continue if you started this connection yourself and recognise the '
        "address it returns to. You will sign in with GitHub next.</p>"
        '<form method="post" action="/consent">'
        f'<input type="hidden" name="request" value="{escape(request_blob)}">'
        f'<input type="hidden" name="csrf" value="{escape(csrf)}">'
        '<button type="submit" name="decision" value="allow">Continue with GitHub</button>'
        '<button type="submit" name="decision" value="deny">Cancel</button></form>'
    )
    return page("Allow access to Thoughtline?", body, form_action=form_action)


def error_page(title: str, message: str, status: int) -> HTMLResponse:
    """A plain page that says what went wrong and what to do about it."""
    return page(title, f"<h1>{escape(title)}</h1><p>{escape(message)}</p>", status=status)
