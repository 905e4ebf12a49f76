"""Sequence lifecycle SQL: changing a sequence's status and listing sequences for discovery.

The status column itself is written by the core write path too (a final thought completes a
sequence, a later thought reopens it); this module only holds the explicit transitions of
`manage_sequence` and the listing behind its discovery action.
"""

from __future__ import annotations

from dataclasses import dataclass

import apsw

from thoughtline.domain.thread_names import name_key


@dataclass(frozen=True)
class SequenceSummary:
    """One sequence as the discovery list shows it."""

    sequence_id: str
    title: str
    status: str
    thought_count: int
    parent_sequence_id: str | None
    created_at: int
    updated_at: int
    rowid: int  # the store's own id: the paging key's tie-break and the badges' lookup
    kind: str | None
    parent_deleted: bool = False  # the parent link names a sequence deleted since


def set_status(conn: apsw.Connection, sequence_id: str, status: str, now_ms: int) -> bool:
    """Set a sequence's status; False when no such sequence exists in this store."""
    conn.execute(
        "UPDATE sequences SET status = ?, updated_at = max(updated_at, ?) WHERE public_id = ?",
        (status, now_ms, sequence_id),
    )
    changed = conn.changes() > 0
    if changed and status == "completed":
        # A completed sequence waits for thread matching, which runs after commit (SPEC §5.3).
        conn.execute(
            "INSERT INTO thread_match_queue(sequence_id, queued_at) "
            "SELECT id, ? FROM sequences WHERE public_id = ? "
            "ON CONFLICT(sequence_id) DO UPDATE SET queued_at = excluded.queued_at",
            (now_ms, sequence_id),
        )
    return changed


# How a sequence list is ordered, and the SQL of each: the paging key's columns and its direction.
# "updated" (most recently updated first) is what a person looks for; its key moves when a sequence
# is written to or changes status. "created" (oldest first) pages on a key that never changes, so a
# walk through every page meets each sequence exactly once.
LIST_ORDERS = ("updated", "created")
_ORDERED = {
    "updated": ("(updated_at, id) < (?2, ?3)", "ORDER BY updated_at DESC, id DESC"),
    "created": ("(created_at, id) > (?2, ?3)", "ORDER BY created_at, id"),
}


def sequences_page(
    conn: apsw.Connection,
    status: str | None,
    thread: str | None,
    order: str,
    after: tuple[int, int] | None,
    limit: int,
) -> list[SequenceSummary]:
    """A page of sequences in `order` (one of LIST_ORDERS), optionally of one status or in a thread.

    `thread` is a thread's name (any case); only its confirmed members are listed. A page holds the
    sequences past `after`, the (updated_at or created_at, row id) key of the previous page's last
    sequence, or the first ones when it is None. Keyset paging never repeats or skips a sequence
    whose key did not change meanwhile: in "created" order no key ever changes; in "updated" order a
    sequence updated while a client pages moves to the top, before the cursor, and the rest of the
    walk does not show it.
    """
    after_key, ordering = _ORDERED[order]
    found = conn.execute(
        "SELECT public_id, title, status, thought_count, parent_public_id, created_at, updated_at, id, kind, "
        "parent_public_id IS NOT NULL "
        "AND NOT EXISTS (SELECT 1 FROM sequences p WHERE p.public_id = s.parent_public_id) "
        "FROM sequences s WHERE (?1 IS NULL OR status = ?1) "
        f"AND (?2 IS NULL OR {after_key}) "
        "AND (?4 IS NULL OR id IN (SELECT m.sequence_id FROM thread_members m JOIN threads th ON th.id = m.thread "
        f"WHERE th.name_key = ?4)) {ordering} LIMIT ?5",
        (
            status,
            None if after is None else after[0],
            None if after is None else after[1],
            None if thread is None else name_key(thread),
            limit,
        ),
    )
    return [
        SequenceSummary(
            sequence_id=str(r[0]),
            title=str(r[1]),
            status=str(r[2]),
            thought_count=int(r[3]),
            parent_sequence_id=None if r[4] is None else str(r[4]),
            created_at=int(r[5]),
            updated_at=int(r[6]),
            rowid=int(r[7]),
            kind=None if r[8] is None else str(r[8]),
            parent_deleted=bool(r[9]),
        )
        for r in found
    ]
