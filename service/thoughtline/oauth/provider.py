"""Thoughtline's implementation of the `mcp` SDK's authorization-server provider Protocol.

The SDK's handlers parse and validate requests (PKCE S256, redirect URI match, client auth); this
class answers their questions from the auth database. It never sees a browser: /authorize hands the
request to the consent page as a signed blob, and the GitHub callback creates the grant.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass, field

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    RegistrationError,
    TokenError,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from thoughtline.clock import Clock
from thoughtline.config import Settings
from thoughtline.identity import login_key
from thoughtline.oauth.cimd import CimdError, CimdPolicy, RecentFailures, fetch_client, is_metadata_url
from thoughtline.oauth.clients import Client, client_problem, redirect_uris_problem
from thoughtline.oauth.records import Grant, Issued
from thoughtline.oauth.signing import PENDING, Signer, digest
from thoughtline.oauth.storage import AuthStore
from thoughtline.oauth.urls import CONSENT_PATH

ACCESS_TTL_SECONDS = 900.0
REFRESH_TTL_SECONDS = 30 * 24 * 3600.0
CODE_TTL_SECONDS = 120.0
PENDING_TTL_SECONDS = 600.0
# Two refreshes of one token a moment apart are a client's own race (two tabs, a retried request),
# not theft: the token spent last may be presented again this long (issue 11).
REFRESH_GRACE_SECONDS = 10.0

# The resources named in the current /token request (RFC 8707 §2.2), set by token.py before the
# SDK handler runs: the SDK does not pass them to the provider, and a token is narrowed to them.
requested_resources: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar(
    "thoughtline_requested_resources", default=()
)


class Code(AuthorizationCode):
    """An authorization code with the grant it redeems."""

    code_hash: str
    grant_resources: list[str]


class Refresh(RefreshToken):
    """A refresh token with its digest (the plaintext is never kept)."""

    token_hash: str
    grant_id: str


class Access(AccessToken):
    """A verified access token and who it speaks for."""

    grant_id: str
    user_key: str
    login: str
    resources: list[str]


@dataclass
class Provider(OAuthAuthorizationServerProvider[Code, Refresh, Access]):
    """Answers the SDK's handlers from the auth database."""

    settings: Settings
    store: AuthStore
    clock: Clock
    cimd: CimdPolicy
    _signer: Signer | None = None
    _failed_documents: RecentFailures = field(default_factory=RecentFailures)

    async def signer(self) -> Signer:
        """The signer for short-lived state, keyed from the auth database (shared by instances)."""
        if self._signer is None:
            self._signer = Signer(await self.store.signing_key(), self.clock)
        return self._signer

    def login_allowed(self, login: str) -> bool:
        """ALLOWED_GITHUB_LOGIN, ASCII case-insensitive; an empty list allows nobody."""
        return login_key(login) in {login_key(allowed) for allowed in self.settings.allowed_github_logins}

    def _usable(self, grant: Grant, client_id: str) -> bool:
        # Removing a login from the allowlist cuts off its existing grants at the next check.
        return not grant.revoked and grant.client_id == client_id and self.login_allowed(grant.login)

    # --- clients -------------------------------------------------------------------------------

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        """A registered client, or the client described by a URL client_id's metadata document.

        Always a `Client`, whose loopback redirect URIs match on any port (RFC 8252 §7.3).
        """
        if is_metadata_url(client_id):
            now = self.clock.now()
            cached = await self.store.cached_document(client_id, now)
            if cached is not None:
                return Client.model_validate_json(cached)
            failed = self._failed_documents.get(client_id, now)
            if failed is not None:
                raise CimdError(failed)
            try:
                client = await fetch_client(client_id, self.cimd)
            except CimdError as exc:
                self._failed_documents.remember(client_id, str(exc), now + self.cimd.failure_seconds)
                raise
            document = client.model_dump_json()
            await self.store.cache_document(client_id, document, now, now + self.cimd.cache_seconds)
            return Client.model_validate_json(document)
        stored = await self.store.load_client(client_id)
        return Client.model_validate_json(stored) if stored else None

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        """Store a dynamically registered client after checking its redirect URIs and field sizes."""
        uris = [str(uri) for uri in client_info.redirect_uris or []]
        problem = redirect_uris_problem(uris)
        if problem:
            raise RegistrationError("invalid_redirect_uri", problem)
        problem = client_problem(client_info, uris)
        if problem:
            raise RegistrationError("invalid_client_metadata", problem)
        await self.store.save_client(client_info.client_id, client_info.model_dump_json(), self.clock.now())

    # --- authorization -------------------------------------------------------------------------

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        """Send the browser to our consent page, carrying the validated request as a signed blob."""
        if not self.settings.github_enabled:
            raise AuthorizeError(
                "temporarily_unavailable",
                "GitHub sign-in is not configured on this server: set GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET",
            )
        pending = {
            "client_id": client.client_id,
            "redirect_uri": str(params.redirect_uri),
            "redirect_explicit": params.redirect_uri_provided_explicitly,
            "code_challenge": params.code_challenge,
            "state": params.state,
            "scopes": params.scopes or [],
            "resource": params.resource,
        }
        blob = (await self.signer()).dumps(PENDING, pending, PENDING_TTL_SECONDS)
        return f"{CONSENT_PATH}?request={blob}"

    async def load_authorization_code(self, client: OAuthClientInformationFull, authorization_code: str) -> Code | None:
        """An unused, unexpired code issued to this client (reuse is handled before we get here)."""
        record = await self.store.find_code(digest(authorization_code))
        if record is None or record.used or record.expires_at < self.clock.now():
            return None
        if not self._usable(record.grant, client.client_id):
            return None
        return Code(
            code="",  # never echo the code back through the SDK's objects
            code_hash=digest(authorization_code),
            scopes=list(record.grant.scopes),
            expires_at=record.expires_at,
            client_id=record.grant.client_id,
            code_challenge=record.code_challenge,
            redirect_uri=record.redirect_uri,  # type: ignore[arg-type]  # pydantic coerces str to AnyUrl
            redirect_uri_provided_explicitly=record.redirect_explicit,
            resource=" ".join(record.grant.resources),
            subject=record.grant.user_key,
            grant_resources=list(record.grant.resources),
        )

    def _narrow(self, allowed: list[str]) -> tuple[str, ...]:
        asked = requested_resources.get()
        return asked or tuple(allowed)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: Code
    ) -> OAuthToken:
        """Redeem the code exactly once; a lost race counts as reuse and revokes the grant."""
        now = self.clock.now()
        resources = self._narrow(authorization_code.grant_resources)
        issued = await self.store.redeem_code(
            authorization_code.code_hash, resources, now, ACCESS_TTL_SECONDS, REFRESH_TTL_SECONDS
        )
        return self._token_response(issued, authorization_code.scopes)

    # --- refresh -------------------------------------------------------------------------------

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> Refresh | None:
        """An unspent, unexpired refresh token of this client whose user is still allowlisted."""
        record = await self.store.find_token(digest(refresh_token))
        now = self.clock.now()
        if record is None or record.kind != "refresh" or record.expires_at < now:
            return None
        if record.used and not await self.store.refresh_just_rotated(digest(refresh_token), now, REFRESH_GRACE_SECONDS):
            return None
        if not self._usable(record.grant, client.client_id):
            return None
        return Refresh(
            token="",
            token_hash=digest(refresh_token),
            grant_id=record.grant.id,
            client_id=record.grant.client_id,
            scopes=list(record.grant.scopes),
            expires_at=int(record.expires_at),
            # The grant's, not the token's: refresh tokens stored narrowed before `mint` kept the
            # grant's resources on them must not stay narrowed forever.
            resource=" ".join(record.grant.resources),
            subject=record.grant.user_key,
        )

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: Refresh, scopes: list[str]
    ) -> OAuthToken:
        """Rotate: the presented refresh token is spent and a new pair is issued."""
        allowed = (refresh_token.resource or "").split()
        issued = await self.store.rotate_refresh(
            refresh_token.token_hash,
            self._narrow(allowed),
            self.clock.now(),
            ACCESS_TTL_SECONDS,
            REFRESH_TTL_SECONDS,
            REFRESH_GRACE_SECONDS,
        )
        return self._token_response(issued, scopes)

    def _token_response(self, issued: Issued | str, scopes: list[str]) -> OAuthToken:
        if not isinstance(issued, Issued):
            raise TokenError(
                "invalid_grant",
                "this grant was already used; every token it issued is now revoked. Sign in again.",
            )
        return OAuthToken(
            access_token=issued.access_token,
            expires_in=int(ACCESS_TTL_SECONDS),
            refresh_token=issued.refresh_token,
            scope=" ".join(scopes) or None,
        )

    # --- access tokens and revocation ----------------------------------------------------------

    async def load_access_token(self, token: str) -> Access | None:
        """The live access token with this value, or None (unknown, expired, revoked, disallowed)."""
        if not token.startswith("tla_"):
            return None
        record = await self.store.find_token(digest(token))
        if record is None or record.kind != "access" or record.expires_at < self.clock.now():
            return None
        if not self._usable(record.grant, record.grant.client_id):
            return None
        return Access(
            token="",
            client_id=record.grant.client_id,
            scopes=list(record.grant.scopes),
            expires_at=int(record.expires_at),
            resource=" ".join(record.resources),
            subject=record.grant.user_key,
            grant_id=record.grant.id,
            user_key=record.grant.user_key,
            login=record.grant.login,
            resources=list(record.resources),
        )

    async def revoke_token(self, token: Access | Refresh) -> None:
        """Revoking either token of a grant revokes the grant (RFC 7009 §2.1 allows both)."""
        await self.store.revoke_grant(token.grant_id, "revoked by the client", self.clock.now())
