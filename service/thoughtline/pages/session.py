"""Library sessions: one-time sign-in links, the signed session cookie, and who a cookie names.

Both are itsdangerous-signed JSON with a purpose salt and an explicit `exp` checked against the
injected clock (itsdangerous's own timestamps read the wall clock, which tests could not move).
A link carries a random id that is claimed in the sign-in database when followed, so it works
once, in whichever process follows it. A session carries the store key, the GitHub login (if
any), its own CSRF token and a random id that sign-out records as ended.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass
from typing import Any

from itsdangerous import BadSignature, URLSafeSerializer

from thoughtline.clock import Clock
from thoughtline.config import Settings
from thoughtline.identity import OWNER_KEY, Principal, is_user_key
from thoughtline.storage.signin import SigninStore

LINK_PURPOSE = "thoughtline.library.link"
SESSION_PURPOSE = "thoughtline.library.session"
LINK_TTL_SECONDS = 60.0
SESSION_TTL_SECONDS = 12 * 3600.0
COOKIE = "thoughtline_session"
SIGNIN_PATH = "/library/signin"


class LinkRefused(Exception):
    """A sign-in link that cannot be used; `reason` is `invalid`, `expired` or `used`."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Session:
    """A signed-in person: whose store, as whom, the form token, and when it ends."""

    id: str
    user_key: str
    login: str | None
    csrf: str
    expires_at: float

    def principal(self) -> Principal:
        """The caller this session speaks for (the same identity the bearer door binds)."""
        return Principal(user_key=self.user_key, via="session", login=self.login)

    def csrf_matches(self, sent: str | None) -> bool:
        """Constant-time check of a submitted CSRF token against this session's."""
        return bool(sent) and hmac.compare_digest(str(sent).encode(), self.csrf.encode())


class Sessions:
    """Mints and checks links and session cookies with the sign-in database's key."""

    def __init__(self, store: SigninStore, clock: Clock) -> None:
        self._store = store
        self._clock = clock

    def _serializer(self, purpose: str) -> URLSafeSerializer:
        return URLSafeSerializer(self._store.session_key(), salt=purpose)

    def _load(self, purpose: str, token: str) -> dict[str, Any] | None:
        try:
            body = self._serializer(purpose).loads(token)
        except BadSignature:
            return None
        return body if isinstance(body, dict) and isinstance(body.get("exp"), int | float) else None

    def mint_link(self, base_url: str) -> str:
        """A one-time URL on `base_url` that signs the owner in if followed within a minute."""
        token = self._serializer(LINK_PURPOSE).dumps(
            {"i": secrets.token_urlsafe(16), "exp": self._clock.now() + LINK_TTL_SECONDS}
        )
        return f"{base_url.rstrip('/')}{SIGNIN_PATH}?link={token}"

    def _live_link(self, token: str) -> dict[str, Any]:
        body = self._load(LINK_PURPOSE, token)
        if body is None or not isinstance(body.get("i"), str):
            raise LinkRefused("invalid")
        if body["exp"] < self._clock.now():
            raise LinkRefused("expired")
        return body

    def check_link(self, token: str) -> None:
        """Raise LinkRefused as `redeem_link` would, without claiming the link (for HEAD)."""
        if self._store.link_used(self._live_link(token)["i"]):
            raise LinkRefused("used")

    def redeem_link(self, token: str) -> Session:
        """Claim a link once and start the owner's session; raises LinkRefused with the reason."""
        body = self._live_link(token)
        if not self._store.claim_link(body["i"], float(body["exp"]), self._clock.now()):
            raise LinkRefused("used")
        return self.start(OWNER_KEY, None)

    def start(self, user_key: str, login: str | None) -> Session:
        """A new session for `user_key` (the owner, or a GitHub account's store)."""
        return Session(
            id=secrets.token_urlsafe(16),
            user_key=user_key,
            login=login,
            csrf=secrets.token_urlsafe(24),
            expires_at=self._clock.now() + SESSION_TTL_SECONDS,
        )

    def cookie_value(self, session: Session) -> str:
        """The signed cookie that carries `session`."""
        payload = {"s": session.id, "u": session.user_key, "l": session.login, "c": session.csrf}
        return self._serializer(SESSION_PURPOSE).dumps({**payload, "exp": session.expires_at})

    def from_cookie(self, value: str | None) -> Session | None:
        """The live session a cookie carries, or None (absent, altered, expired or signed out)."""
        if not value or len(value) > 4096:
            return None
        body = self._load(SESSION_PURPOSE, value)
        if body is None or body["exp"] < self._clock.now():
            return None
        sid, key, login, csrf = body.get("s"), body.get("u"), body.get("l"), body.get("c")
        if not (isinstance(sid, str) and isinstance(key, str) and isinstance(csrf, str) and is_user_key(key)):
            return None
        if login is not None and not isinstance(login, str):
            return None
        if self._store.session_ended(sid):
            return None
        return Session(id=sid, user_key=key, login=login, csrf=csrf, expires_at=float(body["exp"]))

    def end(self, session: Session) -> None:
        """Sign out: this session's cookie is refused from now on, by every process."""
        self._store.end_session(session.id, session.expires_at, self._clock.now())


def server_url(settings: Settings) -> str:
    """Where the server is reached: THOUGHTLINE_PUBLIC_URL, else http://HOST:PORT (a wildcard host as loopback)."""
    if settings.public_url:
        return settings.public_url
    host = "127.0.0.1" if settings.host in ("0.0.0.0", "", "::") else settings.host  # noqa: S104 - not binding
    host = f"[{host}]" if ":" in host else host
    return f"http://{host}:{settings.port}"


def one_time_link(settings: Settings, clock: Clock, base_url: str | None = None) -> str:
    """Mint a sign-in link for the owner with the data directory's key (any process may follow it)."""
    store = SigninStore(settings.data_dir, settings.journal)
    try:
        return Sessions(store, clock).mint_link(base_url or server_url(settings))
    finally:
        store.close()
