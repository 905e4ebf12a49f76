"""Who is calling: the principal type, its store key, and the one contextvar that carries it.

The auth middleware sets the principal for the duration of a request; tools read it through
`current_principal()` and never look at headers themselves.
"""

from __future__ import annotations

import contextvars
import string
from dataclasses import dataclass
from typing import Literal

OWNER_KEY = "owner"
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


@dataclass(frozen=True)
class Principal:
    """An authenticated caller.

    `user_key` names the caller's store: `"owner"` for the owner (static bearer token, or the
    owner's GitHub account) and `"github:<account id>"` for any other allowlisted account. Keys use
    GitHub's immutable numeric id, never the login, so a renamed account keeps its store.
    `client_id` is the OAuth client the token was issued to (None for the static token).
    """

    user_key: str
    via: Literal["token", "oauth", "session"]
    login: str | None = None
    resource: str | None = None
    client_id: str | None = None


def login_key(login: str) -> str:
    """A GitHub login in comparison form: ASCII letters lower-cased, nothing else touched.

    GitHub logins are ASCII and compared case-insensitively. `str.lower()` would also fold
    non-ASCII look-alikes (the Kelvin sign U+212A becomes "k"), letting a name that is not the
    allowlisted one match it (issue 11).
    """
    return login.translate(_ASCII_LOWER)


def github_user_key(account_id: int) -> str:
    """The store key of a non-owner GitHub account."""
    return f"github:{account_id}"


# Digits of the largest GitHub account id there can be (2**63 - 1).
MAX_ACCOUNT_DIGITS = 19


def is_user_key(key: str) -> bool:
    """Whether some principal can map to `key`: `owner`, or `github:` + a numeric account id.

    The id is ASCII digits only: `str.isdigit` also accepts other scripts' digits (`١٢٣`) and
    superscripts, which no GitHub id is written with, so such a store could never be reached.
    GitHub's ids are 64-bit integers: longer than 19 digits, no account has it (and a 300-digit
    key would make a file name past the file system's limit).
    """
    prefix, _, account = key.partition(":")
    numeric = account.isascii() and account.isdigit() and len(account) <= MAX_ACCOUNT_DIGITS
    return key == OWNER_KEY or (prefix == "github" and numeric and account[0] != "0")


_principal: contextvars.ContextVar[Principal | None] = contextvars.ContextVar("thoughtline_principal", default=None)


def set_principal(principal: Principal | None) -> contextvars.Token[Principal | None]:
    """Bind the caller for the current request; returns a token for `reset_principal`."""
    return _principal.set(principal)


def reset_principal(token: contextvars.Token[Principal | None]) -> None:
    """Undo `set_principal` at the end of a request."""
    _principal.reset(token)


def current_principal() -> Principal:
    """The caller of the current request; raises if no auth middleware ran (a wiring bug)."""
    principal = _principal.get()
    if principal is None:
        raise RuntimeError("no authenticated principal bound to this request")
    return principal
