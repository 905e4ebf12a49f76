"""Which redirect URIs a client may register, and how a client record is described to people.

OAuth 2.1 §2.3.1 and RFC 8252: web clients use https; native apps use loopback http (any port is
their own) or a private-use scheme in reverse-domain form. Everything else — `javascript:`, `data:`,
plain words, fragments — is refused at registration, so /authorize never redirects there.
"""

from __future__ import annotations

from urllib.parse import urlsplit

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
FORBIDDEN_SCHEMES = ("javascript", "data", "file", "vbscript", "about", "blob", "filesystem", "ws", "wss")


def redirect_uri_problem(uri: str) -> str | None:
    """Why `uri` cannot be a redirect URI, or None when it can."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        return f"redirect URI {uri!r} is not a URL"
    scheme = parts.scheme.lower()
    if parts.fragment or uri.endswith("#"):
        return f"redirect URI {uri!r} has a fragment; remove everything from '#'"
    if scheme == "https":
        return None if parts.hostname else f"redirect URI {uri!r} has no host"
    if scheme == "http":
        if parts.hostname in LOOPBACK_HOSTS:
            return None
        return f"redirect URI {uri!r} uses http on a non-loopback host; use https"
    if not scheme or scheme in FORBIDDEN_SCHEMES or "." not in scheme:
        return (
            f"redirect URI scheme {scheme or '(none)'!r} is not allowed; use https, http on a loopback "
            "address, or a private-use scheme in reverse-domain form such as com.example.app:/callback"
        )
    return None


def redirect_uris_problem(uris: list[str]) -> str | None:
    """The first problem among a client's redirect URIs, or None when all are acceptable."""
    if not uris:
        return "redirect_uris is required and must list at least one URI"
    for uri in uris:
        problem = redirect_uri_problem(uri)
        if problem:
            return problem
    return None
