"""Why a presented authorization code or refresh token cannot be redeemed, in words a person can act on.

The SDK's token handler answers every such case with "… does not exist", which reads like a typo
when the code merely expired or the account was removed from the allowlist. Each sentence here says
what happened and that signing in again is the way out; none repeats the secret, and a code or
token held by another client is not described further than that.
"""

from __future__ import annotations

from collections.abc import Callable

from thoughtline.oauth.records import CodeRecord, Grant, TokenRecord

SIGN_IN_AGAIN = "Sign in again."


def _grant_refusal(grant: Grant, client_id: str, what: str, login_allowed: Callable[[str], bool]) -> str | None:
    if grant.client_id != client_id:
        return f"this {what} was issued to another client; only the client that signed in can use it. {SIGN_IN_AGAIN}"
    if grant.revoked:
        return f"this {what} belongs to a sign-in that was revoked (signed out, or a token was reused). {SIGN_IN_AGAIN}"
    if not login_allowed(grant.login):
        return (
            f"the GitHub account of this {what} is no longer allowed on this server (ALLOWED_GITHUB_LOGIN); "
            f"ask the operator to add it back, then sign in again."
        )
    return None


def code_refusal(
    record: CodeRecord | None, client_id: str, now: float, ttl: float, login_allowed: Callable[[str], bool]
) -> str | None:
    """Why this authorization code cannot be redeemed by `client_id` (None: the SDK may go on)."""
    if record is None:
        return f"this authorization code is not known here (mistyped, or from another server). {SIGN_IN_AGAIN}"
    refusal = _grant_refusal(record.grant, client_id, "authorization code", login_allowed)
    if refusal:
        return refusal
    if record.expires_at < now:
        return (
            f"this authorization code expired: codes are valid for {ttl / 60:g} minutes after sign-in and must be "
            f"redeemed at once. {SIGN_IN_AGAIN}"
        )
    return None


def refresh_refusal(
    record: TokenRecord | None, client_id: str, now: float, ttl: float, login_allowed: Callable[[str], bool]
) -> str | None:
    """Why this refresh token cannot be used by `client_id` (None: the SDK may go on).

    A spent refresh token is not judged here: token.py tells reuse from a client's own race.
    """
    if record is None:
        return f"this refresh token is not known here (mistyped, or from another server). {SIGN_IN_AGAIN}"
    if record.kind != "refresh":
        return "this is an access token, not a refresh token: send the refresh_token of the token response."
    refusal = _grant_refusal(record.grant, client_id, "refresh token", login_allowed)
    if refusal:
        return refusal
    if record.expires_at < now:
        return (
            f"this refresh token expired: refresh tokens are valid for {ttl / 86400:g} days from the last "
            f"refresh. {SIGN_IN_AGAIN}"
        )
    return None
