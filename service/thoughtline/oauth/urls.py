"""Public URLs of the service: its origin, the issuer, and the protected resources.

Behind a proxy the request's own Host and scheme describe the proxy hop, not what clients see, so
`THOUGHTLINE_PUBLIC_URL` (when set) fixes the origin everywhere: metadata, the issuer, the `resource`
values tokens are bound to, and the GitHub callback URL.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from starlette.requests import Request

# The MCP endpoints this server protects; each is its own RFC 8707 resource.
MCP_PATHS = ("/mcp", "/mcp-compat")
PROTECTED_RESOURCE_PREFIX = "/.well-known/oauth-protected-resource"
CALLBACK_PATH = "/callback"
CONSENT_PATH = "/consent"


def public_origin(request: Request, public_url: str | None) -> str:
    """`scheme://host[:port]` as clients see it, without a trailing slash."""
    if public_url:
        parts = urlsplit(public_url)
        return f"{parts.scheme.lower()}://{parts.netloc.lower()}"
    return f"{request.url.scheme}://{request.url.netloc.lower()}"


def resource_urls(origin: str) -> tuple[str, ...]:
    """The full URL of every protected MCP endpoint: the `resource` values we accept."""
    return tuple(origin + path for path in MCP_PATHS)


def canonical_resource(url: str) -> str:
    """RFC 8707 comparison form: lower-case scheme and host, no fragment, no trailing slash."""
    parts = urlsplit(url.strip())
    path = parts.path.rstrip("/") if parts.path not in ("", "/") else ""
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, parts.query, ""))


def origin_of(url: str) -> str:
    """The CSP source expression that lets a page navigate (or submit) to `url`.

    http(s) URLs give their origin; a private-use scheme (native apps, RFC 8252 §7.1) gives
    `scheme:`, the only CSP form that names such a target.
    """
    parts = urlsplit(url)
    if parts.scheme in ("http", "https"):
        return f"{parts.scheme}://{parts.netloc}"
    return f"{parts.scheme}:"


def granted_resources(resource: str | None, origin: str) -> tuple[str, ...] | None:
    """Which endpoints a grant covers, from the RFC 8707 `resource` of the authorization request.

    One endpoint URL gives that endpoint only. No `resource`, or the bare origin, gives every MCP
    endpoint of this server (still only this server). Anything else is not ours: None.
    """
    ours = resource_urls(origin)
    if resource is None:
        return ours
    wanted = canonical_resource(resource)
    if wanted == origin:
        return ours
    return (wanted,) if wanted in ours else None
