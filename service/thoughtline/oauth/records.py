"""The auth database's schema and records: tables, row types, and the few shared write steps.

Split from storage.py so that file holds only the typed queries; both are one concern each.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import Literal

import apsw

from thoughtline.oauth.signing import digest
from thoughtline.storage.migrations import Migration, migrate

SCHEMA = """
CREATE TABLE secrets (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
INSERT INTO secrets(name, value) VALUES ('signing_key', lower(hex(randomblob(32))));
CREATE TABLE clients (client_id TEXT PRIMARY KEY, info TEXT NOT NULL, created_at REAL NOT NULL) WITHOUT ROWID;
CREATE TABLE client_documents (
    url TEXT PRIMARY KEY, info TEXT NOT NULL, expires_at REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE owner (
    id INTEGER PRIMARY KEY CHECK (id = 1), account_id INTEGER NOT NULL, login TEXT NOT NULL,
    pinned_at REAL NOT NULL
);
CREATE TABLE grants (
    id TEXT PRIMARY KEY, client_id TEXT NOT NULL, user_key TEXT NOT NULL, account_id INTEGER NOT NULL,
    login TEXT NOT NULL, resources TEXT NOT NULL, scopes TEXT NOT NULL, created_at REAL NOT NULL,
    revoked_at REAL, revoked_reason TEXT
) WITHOUT ROWID;
CREATE TABLE codes (
    hash TEXT PRIMARY KEY, grant_id TEXT NOT NULL REFERENCES grants(id) ON DELETE CASCADE,
    redirect_uri TEXT NOT NULL, redirect_explicit INTEGER NOT NULL, code_challenge TEXT NOT NULL,
    expires_at REAL NOT NULL, used_at REAL
) WITHOUT ROWID;
CREATE INDEX codes_by_grant ON codes(grant_id);
CREATE TABLE tokens (
    hash TEXT PRIMARY KEY, kind TEXT NOT NULL CHECK (kind IN ('access', 'refresh')),
    grant_id TEXT NOT NULL REFERENCES grants(id) ON DELETE CASCADE, resources TEXT NOT NULL,
    expires_at REAL NOT NULL, used_at REAL
) WITHOUT ROWID;
CREATE INDEX tokens_by_grant ON tokens(grant_id);
"""


# Issue 11. Registered clients that never complete an authorization are pruned (F1), so the table
# records when a client was first authorized; clients already holding a grant count as used. A
# grant remembers the refresh token it spent last: only that one has a grace window for reuse.
HARDENING = """
ALTER TABLE clients ADD COLUMN authorized_at REAL;
ALTER TABLE grants ADD COLUMN last_refresh TEXT;
UPDATE clients SET authorized_at = created_at WHERE client_id IN (SELECT client_id FROM grants);
CREATE INDEX clients_unused ON clients(created_at) WHERE authorized_at IS NULL;
"""


def _schema(conn: apsw.Connection) -> None:
    conn.execute(SCHEMA)


def _hardening(conn: apsw.Connection) -> None:
    conn.execute(HARDENING)


AUTH_MIGRATIONS = (Migration("auth_0001_core", _schema), Migration("auth_0002_hardening", _hardening))

# Revoked or expired rows are kept this long after they stop mattering, so reuse of an old code or
# refresh token is still recognised (and punished) for a while, then pruned.
KEEP_DEAD_ROWS_SECONDS = 7 * 24 * 3600
# A registered client that has not completed an authorization within a day is dropped; MCP clients
# register right before they send the user to /authorize.
UNUSED_CLIENT_SECONDS = 24 * 3600.0
# Validated Client ID Metadata Documents kept at most (the newest win).
MAX_CACHED_DOCUMENTS = 1000


@dataclass(frozen=True)
class OwnerSetting:
    """Who the operator named as the owner: THOUGHTLINE_OWNER_ID wins over THOUGHTLINE_OWNER."""

    login: str | None
    account_id: int | None


@dataclass(frozen=True)
class OwnerPin:
    """A sign-in that made an account the owner; `previous` is the account that was before, if any."""

    account_id: int
    previous: int | None


@dataclass(frozen=True)
class Grant:
    """One sign-in's authorization: who, for which client, for which resources."""

    id: str
    client_id: str
    user_key: str
    account_id: int
    login: str
    resources: tuple[str, ...]
    scopes: tuple[str, ...]
    revoked: bool


@dataclass(frozen=True)
class CodeRecord:
    """An authorization code as stored (the code itself is known only to the client)."""

    grant: Grant
    redirect_uri: str
    redirect_explicit: bool
    code_challenge: str
    expires_at: float
    used: bool


@dataclass(frozen=True)
class TokenRecord:
    """An access or refresh token as stored."""

    kind: Literal["access", "refresh"]
    grant: Grant
    resources: tuple[str, ...]
    expires_at: float
    used: bool


@dataclass(frozen=True)
class Issued:
    """A freshly minted token pair; the plaintext exists only here and in the HTTP response."""

    access_token: str
    refresh_token: str
    access_expires_at: float
    resources: tuple[str, ...]


Redeem = Issued | Literal["reused", "missing"]


def grant_from_row(row: tuple[object, ...]) -> Grant:
    return Grant(
        id=str(row[0]),
        client_id=str(row[1]),
        user_key=str(row[2]),
        account_id=int(str(row[3])),
        login=str(row[4]),
        resources=tuple(json.loads(str(row[5]))),
        scopes=tuple(json.loads(str(row[6]))),
        revoked=row[7] is not None,
    )


def new_secret(prefix: str) -> str:
    """A bearer secret with 256 random bits; the prefix makes leaked ones easy to recognise."""
    return prefix + secrets.token_urlsafe(32)


def mint(
    conn: apsw.Connection,
    grant_id: str,
    resources: tuple[str, ...],
    now: float,
    access_ttl: float,
    refresh_ttl: float,
) -> Issued:
    """A new access/refresh pair: the access token for `resources`, the refresh token for the whole grant.

    RFC 8707 §2.2 lets a client ask for an access token narrower than its grant; the refresh token
    keeps every resource of the grant, so a later refresh can still ask for another of them.
    """
    access, refresh = new_secret("tla_"), new_secret("tlr_")
    row = conn.execute("SELECT resources FROM grants WHERE id = ?", (grant_id,)).fetchone()
    grant_resources = str(row[0]) if row is not None else json.dumps(resources)
    conn.execute(
        "INSERT INTO tokens(hash, kind, grant_id, resources, expires_at) VALUES (?, 'access', ?, ?, ?),"
        " (?, 'refresh', ?, ?, ?)",
        (
            digest(access),
            grant_id,
            json.dumps(resources),
            now + access_ttl,
            digest(refresh),
            grant_id,
            grant_resources,
            now + refresh_ttl,
        ),
    )
    return Issued(access, refresh, now + access_ttl, resources)


def just_rotated(conn: apsw.Connection, token_hash: str, now: float, grace: float) -> bool:
    """A refresh token spent within `grace` seconds that is still the last one its grant spent."""
    row = conn.execute(
        "SELECT 1 FROM tokens t JOIN grants g ON g.id = t.grant_id WHERE t.hash = ? AND t.kind = 'refresh'"
        " AND t.used_at >= ? AND g.last_refresh = t.hash",
        (token_hash, now - grace),
    ).fetchone()
    return row is not None


def revoke(conn: apsw.Connection, grant_id: str, reason: str, now: float) -> None:
    conn.execute(
        "UPDATE grants SET revoked_at = ?, revoked_reason = ? WHERE id = ? AND revoked_at IS NULL",
        (now, reason, grant_id),
    )


def prune(conn: apsw.Connection, now: float) -> None:
    cutoff = now - KEEP_DEAD_ROWS_SECONDS
    conn.execute("DELETE FROM grants WHERE revoked_at IS NOT NULL AND revoked_at < ?", (cutoff,))
    conn.execute("DELETE FROM codes WHERE expires_at < ?", (cutoff,))
    conn.execute("DELETE FROM tokens WHERE expires_at < ?", (cutoff,))
    conn.execute(
        "DELETE FROM grants WHERE revoked_at IS NULL AND created_at < ? AND NOT EXISTS"
        " (SELECT 1 FROM tokens t WHERE t.grant_id = grants.id) AND NOT EXISTS"
        " (SELECT 1 FROM codes c WHERE c.grant_id = grants.id)",
        (cutoff,),
    )
    conn.execute("DELETE FROM client_documents WHERE expires_at < ?", (now,))
    prune_clients(conn, now)


def prune_clients(conn: apsw.Connection, now: float) -> None:
    """Drop registrations that never led to an authorization within `UNUSED_CLIENT_SECONDS`."""
    conn.execute("DELETE FROM clients WHERE authorized_at IS NULL AND created_at < ?", (now - UNUSED_CLIENT_SECONDS,))


def trim_documents(conn: apsw.Connection, now: float) -> None:
    """Keep the document cache bounded: expired entries go, then all but the newest few."""
    conn.execute("DELETE FROM client_documents WHERE expires_at < ?", (now,))
    conn.execute(
        "DELETE FROM client_documents WHERE url NOT IN"
        " (SELECT url FROM client_documents ORDER BY expires_at DESC LIMIT ?)",
        (MAX_CACHED_DOCUMENTS,),
    )


def prepare(conn: apsw.Connection) -> None:
    migrate(conn, AUTH_MIGRATIONS)
