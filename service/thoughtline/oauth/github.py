"""The GitHub leg: send the browser to GitHub, then learn who signed in and forget their token.

authlib's Starlette OAuth client does the protocol work. We drive its lower-level calls
(`create_authorization_url`, `fetch_access_token`) instead of `authorize_redirect`, because the
latter keeps state in a server-side session; our state is a signed, expiring value bound to a cookie
(see callback.py), which any instance can check. Only `read:user` is requested: we need the
immutable account id and the login, nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from authlib.integrations.starlette_client import OAuth, OAuthError

from thoughtline.config import Settings

SCOPE = "read:user"
TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True)
class GitHubAccount:
    """Who signed in: GitHub's immutable numeric id and the current (renameable) login."""

    id: int
    login: str


class GitHubError(Exception):
    """GitHub refused or answered something we cannot use; the message is safe to show."""


class GitHubIdentity(Protocol):
    """The upstream identity provider, as the authorization server needs it."""

    @property
    def origin(self) -> str:
        """The origin the browser is sent to (for the consent page's CSP `form-action`)."""
        ...

    async def authorize_url(self, redirect_uri: str, state: str) -> str:
        """Where to send the browser to sign in."""
        ...

    async def identify(self, code: str, redirect_uri: str) -> GitHubAccount:
        """Redeem GitHub's code, read the account, and discard GitHub's token."""
        ...


class AuthlibGitHub:
    """GitHub (or GitHub Enterprise Server) through authlib's Starlette client."""

    def __init__(self, settings: Settings) -> None:
        self._base = settings.github_base_url.rstrip("/")
        registry = OAuth()
        self._client: Any = registry.register(
            name="github",
            client_id=settings.github_client_id,
            client_secret=settings.github_client_secret,
            authorize_url=f"{self._base}/login/oauth/authorize",
            access_token_url=f"{self._base}/login/oauth/access_token",
            api_base_url=settings.github_api_url.rstrip("/") + "/",
            # GitHub documents client_id and client_secret as form fields of the token request.
            client_kwargs={
                "scope": SCOPE,
                "timeout": TIMEOUT_SECONDS,
                "trust_env": False,
                "token_endpoint_auth_method": "client_secret_post",
            },
        )

    @property
    def origin(self) -> str:
        """GitHub's web origin, e.g. https://github.com."""
        return self._base

    async def authorize_url(self, redirect_uri: str, state: str) -> str:
        """GitHub's authorize URL for our OAuth app with `read:user` and our signed state."""
        created = await self._client.create_authorization_url(redirect_uri, state=state, allow_signup="false")
        return str(created["url"])

    async def identify(self, code: str, redirect_uri: str) -> GitHubAccount:
        """Exchange the code, fetch /user, and let the GitHub token go out of scope unused again."""
        try:
            token = await self._client.fetch_access_token(redirect_uri=redirect_uri, code=code)
        except OAuthError as exc:
            raise GitHubError(f"GitHub refused the sign-in code ({exc.error})") from None
        if not isinstance(token, dict) or "access_token" not in token:
            raise GitHubError("GitHub's token response had no access_token")
        try:
            response = await self._client.get("user", token=token)
        finally:
            # The GitHub token is used for this one /user call and never stored or logged.
            token.clear()
        if response.status_code != 200:
            raise GitHubError(f"GitHub's /user answered HTTP {response.status_code}")
        body = response.json()
        account_id, login = body.get("id"), body.get("login")
        if not isinstance(account_id, int) or not isinstance(login, str) or not login:
            raise GitHubError("GitHub's /user response had no numeric id and login")
        return GitHubAccount(id=account_id, login=login)
