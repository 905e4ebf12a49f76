"""Short-lived signed blobs (itsdangerous): pending authorization requests, CSRF and GitHub state.

Each purpose has its own salt so a blob minted for one step is never accepted by another. Expiry is
an explicit `exp` field checked against the injected clock (itsdangerous's own timestamps read the
wall clock, which tests could not move).
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any, cast

from itsdangerous import BadSignature, URLSafeSerializer

from thoughtline.clock import Clock

PENDING = "thoughtline.oauth.pending"
CSRF = "thoughtline.oauth.csrf"
GITHUB_STATE = "thoughtline.oauth.github-state"


class InvalidSignedValue(Exception):
    """A signed value was tampered with, minted for another purpose, or has expired."""


class Signer:
    """Signs JSON payloads with one key and a purpose salt; checks them with an expiry."""

    def __init__(self, key: bytes, clock: Clock) -> None:
        self._key = key
        self._clock = clock

    def dumps(self, purpose: str, payload: dict[str, Any], ttl: float) -> str:
        """A URL-safe, signed, compressed token carrying `payload` for `ttl` seconds."""
        body = dict(payload, exp=self._clock.now() + ttl)
        return URLSafeSerializer(self._key, salt=purpose).dumps(body)

    def loads(self, purpose: str, token: str) -> dict[str, Any]:
        """The payload of a valid, unexpired token for `purpose`; raises InvalidSignedValue."""
        try:
            body = URLSafeSerializer(self._key, salt=purpose).loads(token)
        except BadSignature:
            raise InvalidSignedValue("the signed value was altered or belongs to another step") from None
        if not isinstance(body, dict) or not isinstance(body.get("exp"), int | float):
            raise InvalidSignedValue("the signed value has no expiry")
        if body["exp"] < self._clock.now():
            raise InvalidSignedValue("the signed value has expired")
        return cast(dict[str, Any], body)


def digest(value: str) -> str:
    """SHA-256 hex of a secret value: what we store or embed instead of the value itself."""
    return hashlib.sha256(value.encode()).hexdigest()


def same(a: str, b: str) -> bool:
    """Constant-time string comparison."""
    return hmac.compare_digest(a.encode(), b.encode())
