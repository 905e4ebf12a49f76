"""The SQL of related earlier reasoning (SPEC §5.4): thoughts to fold into the index, and the cards shown.

Read-only queries on a read snapshot; `library/related_open.py` calls them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import apsw

from thoughtline.storage.rows import iso

SNIPPET_CHARS = 200


@dataclass(frozen=True)
class Card:
    """What a suggestion shows of an earlier sequence."""

    key: int
    sequence_id: str
    title: str
    status: str
    updated_at: str
    snippet: str  # the opening of its latest thought: the conclusion once it is done


def thoughts_after(conn: apsw.Connection, after_id: int, limit: int) -> list[tuple[int, int, str, str]]:
    """Up to `limit` stored thoughts with an id above `after_id`, in id order.

    Each as (thought id, sequence rowid, sequence id, text).
    """
    return [
        (int(r[0]), int(r[1]), str(r[2]), str(r[3]))
        for r in conn.execute(
            "SELECT t.id, t.sequence_id, s.public_id, t.body FROM thoughts t JOIN sequences s ON s.id = t.sequence_id "
            "WHERE t.id > ? ORDER BY t.id LIMIT ?",
            (after_id, limit),
        )
    ]


def cards(conn: apsw.Connection, keys: Sequence[int]) -> dict[int, Card]:
    """The card of each given sequence rowid that still exists."""
    if not keys:
        return {}
    rows = conn.execute(
        "SELECT s.id, s.public_id, s.title, s.status, s.updated_at, "
        "(SELECT substr(t.body, 1, ?) FROM thoughts t WHERE t.sequence_id = s.id ORDER BY t.position DESC LIMIT 1) "
        "FROM sequences s WHERE s.id IN (SELECT value FROM json_each(?))",
        (SNIPPET_CHARS + 1, json.dumps(list(keys))),
    )
    out: dict[int, Card] = {}
    for key, public_id, title, status, updated_at, latest in rows:
        text = " ".join(str(latest or "").split())
        snippet = text if len(text) <= SNIPPET_CHARS else text[: SNIPPET_CHARS - 1].rstrip() + "…"
        out[int(key)] = Card(int(key), str(public_id), str(title), str(status), iso(int(updated_at)), snippet)
    return out
