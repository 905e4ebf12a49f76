"""The authorization server's database: clients, grants, codes and tokens in one SQLite file.

Why a database and not only signed tokens: codes must be single-use, refresh tokens rotate with
reuse detection, and a reused code or refresh token must revoke everything its grant issued. All
three need state every instance sees, so a stateless multi-instance deployment keeps it in
`<data_dir>/_auth/auth.sqlite3` on the same shared volume as the user stores, opened through
`thoughtline.storage.db` and `thoughtline.storage.writer` (same PRAGMAs, journal mode, single writer).
Tokens and codes are random and stored only as SHA-256 digests: a copy of the file grants nothing.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import anyio
import apsw

from thoughtline.config import Journal
from thoughtline.identity import OWNER_KEY, github_user_key, login_key
from thoughtline.oauth.records import (
    UNUSED_CLIENT_SECONDS,
    CodeRecord,
    OwnerPin,
    OwnerSetting,
    Redeem,
    TokenRecord,
    grant_from_row,
    just_rotated,
    mint,
    prepare,
    prune,
    prune_clients,
    revoke,
    trim_documents,
)
from thoughtline.oauth.signing import digest
from thoughtline.storage.reads import ReadPool
from thoughtline.storage.writer import Writer

T = TypeVar("T")

AUTH_DIR = "_auth"
AUTH_FILE = "auth.sqlite3"


class AuthStore:
    """Typed access to the auth database; writes go through one writer thread, reads through a pool."""

    def __init__(self, data_dir: Path, journal: Journal) -> None:
        self._path = data_dir / AUTH_DIR / AUTH_FILE
        self._journal = journal
        self._writer: Writer | None = None
        self._reader: ReadPool | None = None
        self._lock = anyio.Lock()

    async def _open(self) -> tuple[Writer, ReadPool]:
        # Opened on first use so building the app (and serving metadata) never touches the disk.
        async with self._lock:
            if self._writer is None or self._reader is None:
                self._path.parent.mkdir(parents=True, exist_ok=True)
                writer = Writer(self._path, self._journal)
                await anyio.to_thread.run_sync(writer.start, prepare)
                self._writer, self._reader = writer, ReadPool(self._path, self._journal)
            return self._writer, self._reader

    async def _write(self, fn: Callable[[apsw.Connection], T]) -> T:
        writer, _ = await self._open()
        return await writer.submit(fn)

    async def _read(self, fn: Callable[[apsw.Connection], T]) -> T:
        _, reader = await self._open()
        return await reader.run(fn)

    def close(self) -> None:
        """Stop the writer thread and close every connection."""
        if self._writer is not None:
            self._writer.close()
        if self._reader is not None:
            self._reader.close()
        self._writer = self._reader = None

    async def signing_key(self) -> bytes:
        """The key every instance signs short-lived state with (created with the database)."""

        def run(conn: apsw.Connection) -> bytes:
            row = conn.execute("SELECT value FROM secrets WHERE name = 'signing_key'").fetchone()
            return bytes.fromhex(str(row[0])) if row else b""

        return await self._read(run)

    # --- clients -----------------------------------------------------------------------------

    async def save_client(self, client_id: str, info: str, now: float) -> None:
        """Record a dynamically registered client (RFC 7591), dropping stale unused ones first."""

        def run(conn: apsw.Connection) -> None:
            prune_clients(conn, now)
            conn.execute("INSERT INTO clients(client_id, info, created_at) VALUES (?, ?, ?)", (client_id, info, now))

        await self._write(run)

    async def unused_clients(self, now: float) -> int:
        """How many registered clients have not completed an authorization yet (and are not stale)."""

        def run(conn: apsw.Connection) -> int:
            row = conn.execute(
                "SELECT count(*) FROM clients WHERE authorized_at IS NULL AND created_at >= ?",
                (now - UNUSED_CLIENT_SECONDS,),
            ).fetchone()
            return int(str(row[0])) if row else 0

        return await self._read(run)

    async def load_client(self, client_id: str) -> str | None:
        """The stored registration JSON of a client, if any."""

        def run(conn: apsw.Connection) -> str | None:
            row = conn.execute("SELECT info FROM clients WHERE client_id = ?", (client_id,)).fetchone()
            return str(row[0]) if row else None

        return await self._read(run)

    async def cached_document(self, url: str, now: float) -> str | None:
        """A still-fresh Client ID Metadata Document, already validated, if cached."""

        def run(conn: apsw.Connection) -> str | None:
            row = conn.execute(
                "SELECT info FROM client_documents WHERE url = ? AND expires_at > ?", (url, now)
            ).fetchone()
            return str(row[0]) if row else None

        return await self._read(run)

    async def cached_documents(self) -> int:
        """How many metadata documents the cache holds."""

        def run(conn: apsw.Connection) -> int:
            row = conn.execute("SELECT count(*) FROM client_documents").fetchone()
            return int(str(row[0])) if row else 0

        return await self._read(run)

    async def cache_document(self, url: str, info: str, now: float, expires_at: float) -> None:
        """Remember a validated Client ID Metadata Document until `expires_at` (the cache is bounded)."""

        def run(conn: apsw.Connection) -> None:
            conn.execute(
                "INSERT OR REPLACE INTO client_documents(url, info, expires_at) VALUES (?, ?, ?)",
                (url, info, expires_at),
            )
            trim_documents(conn, now)

        await self._write(run)

    # --- identity ------------------------------------------------------------------------------

    async def user_key_for(
        self, account_id: int, login: str, owner: OwnerSetting, now: float
    ) -> tuple[str, OwnerPin | None]:
        """Map a GitHub account to its store key at sign-in; `(key, pin)` where `pin` is set when
        this sign-in made the account the owner (the caller logs it).

        THOUGHTLINE_OWNER_ID names the owner by immutable id. THOUGHTLINE_OWNER names it by login,
        which can be renamed or re-registered, so the first sign-in whose login matches it exactly
        (ASCII case-insensitive) pins that account's id, recorded with the setting's value. While
        the setting keeps that value only the pinned id is the owner, whatever it is called later.
        When the setting changes, the next sign-in of the newly named login re-pins. An account
        that stops being the owner keeps working under its own `github:<id>` store; its earlier
        grants are moved there too, so no old token still opens the owner's store.
        """

        def run(conn: apsw.Connection) -> tuple[str, OwnerPin | None]:
            row = conn.execute("SELECT account_id, login FROM owner WHERE id = 1").fetchone()
            pinned_id, pinned_as = (int(str(row[0])), str(row[1])) if row else (None, None)
            if owner.account_id is not None:
                is_owner = account_id == owner.account_id
            elif owner.login is None:
                is_owner = False
            elif pinned_as is not None and login_key(pinned_as) == login_key(owner.login):
                is_owner = account_id == pinned_id  # the pin stands, whatever the login is now
            else:
                is_owner = login_key(login) == login_key(owner.login)  # no pin yet, or the setting changed
            if not is_owner:
                conn.execute(
                    "UPDATE grants SET user_key = ? WHERE account_id = ? AND user_key = ?",
                    (github_user_key(account_id), account_id, OWNER_KEY),
                )
                return github_user_key(account_id), None
            recorded_as = owner.login if owner.account_id is None and owner.login else login
            if pinned_id == account_id:
                if pinned_as is None or login_key(pinned_as) != login_key(recorded_as):
                    conn.execute("UPDATE owner SET login = ? WHERE id = 1", (recorded_as,))
                return OWNER_KEY, None
            conn.execute(
                "INSERT OR REPLACE INTO owner(id, account_id, login, pinned_at) VALUES (1, ?, ?, ?)",
                (account_id, recorded_as, now),
            )
            conn.execute(
                "UPDATE grants SET user_key = 'github:' || account_id WHERE user_key = ? AND account_id != ?",
                (OWNER_KEY, account_id),
            )
            return OWNER_KEY, OwnerPin(account_id=account_id, previous=pinned_id)

        return await self._write(run)

    # --- grants and codes ----------------------------------------------------------------------

    async def create_grant(
        self,
        *,
        code: str,
        client_id: str,
        user_key: str,
        account_id: int,
        login: str,
        resources: tuple[str, ...],
        scopes: tuple[str, ...],
        redirect_uri: str,
        redirect_explicit: bool,
        code_challenge: str,
        now: float,
        code_ttl: float,
    ) -> None:
        """Record a consented sign-in and the single-use code that redeems it."""
        grant_id = secrets.token_hex(16)

        def run(conn: apsw.Connection) -> None:
            conn.execute(
                "INSERT INTO grants(id, client_id, user_key, account_id, login, resources, scopes,"
                " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    grant_id,
                    client_id,
                    user_key,
                    account_id,
                    login,
                    json.dumps(resources),
                    json.dumps(scopes),
                    now,
                ),
            )
            conn.execute(
                "INSERT INTO codes(hash, grant_id, redirect_uri, redirect_explicit, code_challenge,"
                " expires_at) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    digest(code),
                    grant_id,
                    redirect_uri,
                    int(redirect_explicit),
                    code_challenge,
                    now + code_ttl,
                ),
            )
            conn.execute(
                "UPDATE clients SET authorized_at = ? WHERE client_id = ? AND authorized_at IS NULL", (now, client_id)
            )
            prune(conn, now)

        await self._write(run)

    async def find_code(self, code_hash: str) -> CodeRecord | None:
        """The stored code with this digest, used or not."""

        def run(conn: apsw.Connection) -> CodeRecord | None:
            row = conn.execute(
                "SELECT g.id, g.client_id, g.user_key, g.account_id, g.login, g.resources, g.scopes,"
                " g.revoked_at, c.redirect_uri, c.redirect_explicit, c.code_challenge, c.expires_at,"
                " c.used_at FROM codes c JOIN grants g ON g.id = c.grant_id WHERE c.hash = ?",
                (code_hash,),
            ).fetchone()
            if row is None:
                return None
            return CodeRecord(
                grant=grant_from_row(row[:8]),
                redirect_uri=str(row[8]),
                redirect_explicit=bool(row[9]),
                code_challenge=str(row[10]),
                expires_at=float(str(row[11])),
                used=row[12] is not None,
            )

        return await self._read(run)

    async def redeem_code(
        self, code_hash: str, resources: tuple[str, ...], now: float, access_ttl: float, refresh_ttl: float
    ) -> Redeem:
        """Mark a code used and mint its tokens, atomically; a second redemption revokes the grant."""

        def run(conn: apsw.Connection) -> Redeem:
            row = conn.execute("SELECT grant_id, used_at FROM codes WHERE hash = ?", (code_hash,)).fetchone()
            if row is None:
                return "missing"
            grant_id = str(row[0])
            if row[1] is not None:
                revoke(conn, grant_id, "authorization code reused", now)
                return "reused"
            conn.execute("UPDATE codes SET used_at = ? WHERE hash = ?", (now, code_hash))
            return mint(conn, grant_id, resources, now, access_ttl, refresh_ttl)

        return await self._write(run)

    # --- tokens --------------------------------------------------------------------------------

    async def find_token(self, token_hash: str) -> TokenRecord | None:
        """The stored access or refresh token with this digest."""

        def run(conn: apsw.Connection) -> TokenRecord | None:
            row = conn.execute(
                "SELECT g.id, g.client_id, g.user_key, g.account_id, g.login, g.resources, g.scopes,"
                " g.revoked_at, t.kind, t.resources, t.expires_at, t.used_at"
                " FROM tokens t JOIN grants g ON g.id = t.grant_id WHERE t.hash = ?",
                (token_hash,),
            ).fetchone()
            if row is None:
                return None
            return TokenRecord(
                kind="access" if row[8] == "access" else "refresh",
                grant=grant_from_row(row[:8]),
                resources=tuple(json.loads(str(row[9]))),
                expires_at=float(str(row[10])),
                used=row[11] is not None,
            )

        return await self._read(run)

    async def rotate_refresh(
        self,
        token_hash: str,
        resources: tuple[str, ...],
        now: float,
        access_ttl: float,
        refresh_ttl: float,
        grace: float,
    ) -> Redeem:
        """Spend a refresh token for a new pair; presenting a spent one revokes the whole grant.

        Reuse means two parties hold the same refresh token (OAuth 2.1 §4.3.1); we cannot tell
        which is the thief, so both lose access and the user signs in again. One exception, as
        common authorization servers make it: the token spent last in its grant, presented again
        within `grace` seconds, is a client's own concurrent refresh and gets a pair too.
        """

        def run(conn: apsw.Connection) -> Redeem:
            row = conn.execute(
                "SELECT grant_id, used_at FROM tokens WHERE hash = ? AND kind = 'refresh'", (token_hash,)
            ).fetchone()
            if row is None:
                return "missing"
            grant_id = str(row[0])
            if row[1] is not None:
                if just_rotated(conn, token_hash, now, grace):
                    return mint(conn, grant_id, resources, now, access_ttl, refresh_ttl)
                revoke(conn, grant_id, "refresh token reused", now)
                return "reused"
            # Earlier access tokens are left to expire on their own (they are short-lived): cutting
            # them off would fail requests already in flight while the client refreshes.
            conn.execute("UPDATE tokens SET used_at = ? WHERE hash = ?", (now, token_hash))
            conn.execute("UPDATE grants SET last_refresh = ? WHERE id = ?", (token_hash, grant_id))
            return mint(conn, grant_id, resources, now, access_ttl, refresh_ttl)

        return await self._write(run)

    async def refresh_just_rotated(self, token_hash: str, now: float, grace: float) -> bool:
        """Whether a spent refresh token is still inside its grace window (see `rotate_refresh`)."""
        return await self._read(lambda c: just_rotated(c, token_hash, now, grace))

    async def revoke_grant(self, grant_id: str, reason: str, now: float) -> None:
        """Revoke a grant: every code and token it issued stops working at once."""
        await self._write(lambda c: revoke(c, grant_id, reason, now))
