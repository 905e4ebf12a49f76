"""OAuth error responses in the shapes RFC 6749 §5.2 and RFC 7009 expect: JSON, never cached."""

from __future__ import annotations

from starlette.responses import JSONResponse

NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


def oauth_error(error: str, description: str, status: int = 400) -> JSONResponse:
    """`{"error": …, "error_description": …}` with the given status."""
    return JSONResponse({"error": error, "error_description": description}, status_code=status, headers=NO_STORE)


def not_configured() -> JSONResponse:
    """What every authorization endpoint answers while GitHub sign-in is not set up."""
    return oauth_error(
        "temporarily_unavailable",
        "GitHub sign-in is not configured on this server: the operator must set GITHUB_CLIENT_ID and "
        "GITHUB_CLIENT_SECRET (see docs/oauth.md). Header-capable clients can use the static bearer token.",
        503,
    )
