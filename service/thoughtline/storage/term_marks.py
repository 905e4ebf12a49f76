"""Where a store's thought text stands, for caches of its term statistics (`library/term_cache.py`).

A mark is read in the same snapshot as the statistics it vouches for. Thought ids are
AUTOINCREMENT (never reused) and every delete or body edit of a thought bumps
`search_state.generation` (the search triggers), so with an unchanged generation the thoughts
added since a mark are exactly those above its last id.
"""

from __future__ import annotations

from dataclasses import dataclass

import apsw

from thoughtline.storage.rows import rows


@dataclass(frozen=True)
class Mark:
    """The search generation, the highest thought id and the thought count of one snapshot."""

    generation: int
    last_id: int
    documents: int


def mark(conn: apsw.Connection) -> Mark:
    """The mark of the connection's current snapshot."""
    (generation, last_id, documents), *_ = rows(
        conn,
        "SELECT (SELECT generation FROM search_state WHERE id = 1), "
        "(SELECT coalesce(max(id), 0) FROM thoughts), (SELECT count(*) FROM thoughts)",
    )
    return Mark(int(generation), int(last_id), int(documents))


def bodies_after(conn: apsw.Connection, last_id: int, through: int) -> list[str]:
    """The bodies of the thoughts with `last_id` < id <= `through`, oldest first."""
    return [
        str(body)
        for (body,) in rows(conn, "SELECT body FROM thoughts WHERE id > ? AND id <= ? ORDER BY id", (last_id, through))
    ]
