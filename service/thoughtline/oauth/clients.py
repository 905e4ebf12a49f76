"""Which client records we accept: redirect URIs, and a size bound on every metadata field.

OAuth 2.1 §2.3.1 and RFC 8252: web clients use https; native apps use loopback http (any port is
their own) or a private-use scheme in reverse-domain form. Everything else — `javascript:`, `data:`,
plain words, fragments, credentials, backslashes — is refused at registration, so /authorize never
redirects there. `client_problem` is the one check for both doors, /register and Client ID Metadata
Documents, and it checks the URIs *as stored* (pydantic's normalised form): a raw
`http://evil.example\\@127.0.0.1/cb` looks like loopback but is stored as
`http://evil.example/@127.0.0.1/cb` (issue 11, F4).

RFC 7591 sets no sizes; ours (issue 11, F1) are generous for real clients and keep one record
under `MAX_RECORD_BYTES`, so registrations cannot fill the disk the stores live on.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadataBase
from pydantic import AnyUrl

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
# RFC 8252 §7.3 and OAuth 2.1 §2.3.1: for these loopback IP literals any port matches. Not
# `localhost` (RFC 8252 §8.3 advises against it): its redirect URIs keep matching exactly.
ANY_PORT_HOSTS = ("127.0.0.1", "::1")
MAX_URL_CHARS = 2000
MAX_REDIRECT_URIS = 10
MAX_LIST_ITEMS = 10
MAX_TEXT_CHARS = 200  # client_name, software_id, software_version, each contact
MAX_SCOPE_CHARS = 1000
MAX_RECORD_BYTES = 8 * 1024
MAX_BODY_BYTES = 16 * 1024  # a /register request; the stored record must fit MAX_RECORD_BYTES
FORBIDDEN_SCHEMES = ("javascript", "data", "file", "vbscript", "about", "blob", "filesystem", "ws", "wss")


def redirect_uri_problem(uri: str) -> str | None:
    """Why `uri` cannot be a redirect URI, or None when it can."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        return f"redirect URI {uri!r} is not a URL"
    scheme = parts.scheme.lower()
    if len(uri) > MAX_URL_CHARS:
        return f"redirect URI {uri[:60]!r}… is longer than {MAX_URL_CHARS} characters"
    if "\\" in uri or parts.username is not None or parts.password is not None:
        return f"redirect URI {uri!r} must not contain a backslash or user credentials"
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
    if len(uris) > MAX_REDIRECT_URIS:
        return f"redirect_uris lists {len(uris)} URIs; at most {MAX_REDIRECT_URIS} are accepted"
    for uri in uris:
        problem = redirect_uri_problem(uri)
        if problem:
            return problem
    return None


def _field_problem(name: str, value: object) -> str | None:
    if isinstance(value, list):
        if len(value) > MAX_LIST_ITEMS:
            return f"{name} lists {len(value)} values; at most {MAX_LIST_ITEMS} are accepted"
        return next((p for p in (_field_problem(name, item) for item in value) if p), None)
    if value is None or isinstance(value, bool | int | float | dict):
        return None  # dicts (jwks) are bounded by the record size below
    limit = MAX_SCOPE_CHARS if name == "scope" else MAX_URL_CHARS if name.endswith("uri") else MAX_TEXT_CHARS
    text = str(value)
    return f"{name} is {len(text)} characters; at most {limit} are accepted" if len(text) > limit else None


def client_problem(client: OAuthClientMetadataBase, redirect_uris: list[str]) -> str | None:
    """Why a client record cannot be stored, or None: its redirect URIs (pass them as the record
    stores them) and the size of every field, for /register and CIMD alike."""
    problem = redirect_uris_problem(redirect_uris)
    if problem:
        return problem
    for name in type(client).model_fields:
        if name != "redirect_uris":
            problem = _field_problem(name, getattr(client, name))
            if problem:
                return problem
    size = len(client.model_dump_json(exclude_none=True).encode())
    if size > MAX_RECORD_BYTES:
        return f"the client metadata is {size} bytes; at most {MAX_RECORD_BYTES} are accepted"
    return None


def same_except_loopback_port(asked: str, registered: str) -> bool:
    """Whether `asked` is `registered` with another port, both `http` on 127.0.0.1 or [::1].

    Scheme, host, path and query must match exactly; only the port may differ, because a native app
    learns its ephemeral port only when it starts listening (RFC 8252 §7.3).
    """
    a, r = urlsplit(asked), urlsplit(registered)
    return (
        a.scheme == r.scheme == "http"
        and a.hostname == r.hostname
        and a.hostname in ANY_PORT_HOSTS
        and a.username is None
        and r.username is None
        and a.password is None
        and r.password is None
        and (a.path or "/") == (r.path or "/")
        and a.query == r.query
        and not a.fragment
        and not r.fragment
    )


class Client(OAuthClientInformationFull):
    """A client record whose loopback redirect URIs accept any port (the SDK compares exactly)."""

    def validate_redirect_uri(self, redirect_uri: AnyUrl | None) -> AnyUrl:
        """The SDK's exact match, or a registered loopback IP URI with another port."""
        registered = [str(uri) for uri in self.redirect_uris or []]
        if redirect_uri is not None and any(same_except_loopback_port(str(redirect_uri), uri) for uri in registered):
            return redirect_uri
        return super().validate_redirect_uri(redirect_uri)
