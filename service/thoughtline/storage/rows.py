"""Helpers every SQL module of a user store shares: a statement's rows, timestamps as ISO text, the cursor secret.

Each takes an open apsw connection the caller already holds inside a transaction.
"""

from __future__ import annotations

import functools
from datetime import date, timedelta
from typing import Any

import apsw


def rows(conn: apsw.Connection, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """All result rows of one statement (values typed loosely; callers know their columns)."""
    return list(conn.execute(sql, params))


_EPOCH = date(1970, 1, 1)


def iso(ms: int) -> str:
    """Unix milliseconds as an ISO-8601 UTC timestamp (`2026-12-01T23:02:47.123Z`).

    Integer arithmetic below the day, one cached date per day: a briefing of a few hundred
    members writes two of these per member, and this is ~10x cheaper than a datetime each.
    """
    days, rest = divmod(ms, 86_400_000)
    seconds, milli = divmod(rest, 1000)
    hours, seconds = divmod(seconds, 3600)
    minutes, seconds = divmod(seconds, 60)
    return f"{_iso_date(days)}T{hours:02d}:{minutes:02d}:{seconds:02d}.{milli:03d}Z"


@functools.lru_cache(maxsize=4096)
def _iso_date(days: int) -> str:
    day = _EPOCH + timedelta(days=days)
    return f"{day.year:04d}-{day.month:02d}-{day.day:02d}"


def cursor_secret(conn: apsw.Connection) -> str:
    """The store's own key for signing history cursors (created by the first migration)."""
    return str(rows(conn, "SELECT value FROM meta WHERE key = 'cursor_secret'")[0][0])
