"""Thread SQL: the registry, confirmed memberships, counts and latest activity.

Typed functions over an apsw connection inside the caller's transaction (the writer's, or a
read snapshot). Threads are looked up by `name_key` (the casefolded name), never by `name`.
Proposal matching and review live with the proposals (`library/proposals.py`); this module only
keeps their tables consistent when memberships change, and reads the term statistics matching
weighs words with (from the keyword index's vocabulary). The events a briefing shows are read by
`storage/thread_events.py`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import apsw

from thoughtline.domain.thread_names import name_key
from thoughtline.errors import DomainError
from thoughtline.storage.rows import rows

_THREAD_COLS = "id, name, description, status, created_at, updated_at, type"


@dataclass(frozen=True)
class ThreadRow:
    """A thread's registry entry."""

    rowid: int
    name: str
    description: str
    status: str
    created_at: int
    updated_at: int
    type: str | None = None  # as the user set it; None: derived from the events on read

    @property
    def archived(self) -> bool:
        """Whether the thread is archived."""
        return self.status == "archived"


@dataclass(frozen=True)
class ThreadStats:
    """Counts and the latest activity of one thread."""

    member_count: int
    pending_proposals: int
    last_activity_at: int


@dataclass(frozen=True)
class MemberRow:
    """A confirmed member sequence as the briefing lists it."""

    rowid: int
    sequence_id: str
    title: str
    status: str
    updated_at: int
    added_by: str
    joined_at: int


def find_thread(conn: apsw.Connection, name: str) -> ThreadRow | None:
    """The thread whose name equals `name` case-insensitively, or None."""
    found = rows(conn, f"SELECT {_THREAD_COLS} FROM threads WHERE name_key = ?", (name_key(name),))
    return ThreadRow(*found[0]) if found else None


def require_thread(conn: apsw.Connection, name: str) -> ThreadRow:
    """The named thread, or `thread_not_found` saying how to find the right name."""
    thread = find_thread(conn, name)
    if thread is None:
        raise DomainError(
            "thread_not_found",
            f"no thread named {name!r}; list your threads with configure_thread action 'list' "
            "(includeArchived: true shows archived ones too), or create it with action 'create'.",
            api_message=f"no thread named {name!r}; list your threads with GET /api/v1/threads "
            "(?includeArchived=true shows archived ones too), or create it with POST /api/v1/threads.",
        )
    return thread


def list_threads(
    conn: apsw.Connection, include_archived: bool, after_key: str | None = None, limit: int | None = None
) -> list[ThreadRow]:
    """Threads by name (their folded key, unique); archived ones only when asked for.

    `after_key` starts after that key and `limit` stops after that many, so a page reads only its own rows.
    """
    found = rows(
        conn,
        f"SELECT {_THREAD_COLS} FROM threads WHERE (?1 OR status = 'active') AND (?2 IS NULL OR name_key > ?2) "
        "ORDER BY name_key LIMIT ?3",
        (int(include_archived), after_key, -1 if limit is None else limit),
    )
    return [ThreadRow(*r) for r in found]


def count_threads(conn: apsw.Connection, include_archived: bool) -> int:
    """How many threads `list_threads` would list in all."""
    found = rows(conn, "SELECT count(*) FROM threads WHERE ?1 OR status = 'active'", (int(include_archived),))
    return int(found[0][0])


def last_activity(conn: apsw.Connection, thread: ThreadRow, until_ms: int | None = None) -> int:
    """The latest thought written to a member or membership added (at or before `until_ms`).

    A thread with neither counts from its creation, so a new thread is active.
    """
    found = rows(
        conn,
        "SELECT max(m.created_at), max((SELECT t.created_at FROM thoughts t WHERE t.sequence_id = m.sequence_id "
        "AND (?2 IS NULL OR t.created_at <= ?2) ORDER BY t.position DESC LIMIT 1)) "
        "FROM thread_members m WHERE m.thread = ?1 AND (?2 IS NULL OR m.created_at <= ?2)",
        (thread.rowid, until_ms),
    )
    times = [int(t) for t in (*found[0], thread.created_at) if t is not None]
    return max(times)


def thread_stats(conn: apsw.Connection, thread: ThreadRow) -> ThreadStats:
    """Member count, pending proposals and latest activity of a thread.

    An archived thread counts no pending proposals: review_proposals neither lists nor decides
    them until it is unarchived, and the count says what a review would show.
    """
    members = rows(conn, "SELECT count(*) FROM thread_members WHERE thread = ?", (thread.rowid,))[0][0]
    pending = 0
    if not thread.archived:
        pending = rows(conn, "SELECT count(*) FROM thread_proposals WHERE thread = ?", (thread.rowid,))[0][0]
    return ThreadStats(int(members), int(pending), last_activity(conn, thread))


def _refuse_taken(conn: apsw.Connection, name: str, except_rowid: int | None = None) -> None:
    taken = find_thread(conn, name)
    if taken is not None and taken.rowid != except_rowid:
        raise DomainError(
            "thread_exists",
            f"a thread named {taken.name!r} already exists (names compare case-insensitively); "
            "pick another name, or use the existing thread.",
        )


def create_thread(conn: apsw.Connection, name: str, description: str, now_ms: int) -> ThreadRow:
    """Register a new thread; its backfill starts pending (description_version 1 > backfilled 0)."""
    _refuse_taken(conn, name)
    conn.execute(
        "INSERT INTO threads(name, name_key, description, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
        (name, name_key(name), description, now_ms, now_ms),
    )
    return ThreadRow(conn.last_insert_rowid(), name, description, "active", now_ms, now_ms)


def rename_thread(conn: apsw.Connection, thread: ThreadRow, new_name: str, now_ms: int) -> ThreadRow:
    """Give a thread a new name (a change of case alone is allowed); memberships stay."""
    _refuse_taken(conn, new_name, except_rowid=thread.rowid)
    conn.execute(
        "UPDATE threads SET name = ?, name_key = ?, updated_at = ? WHERE id = ?",
        (new_name, name_key(new_name), now_ms, thread.rowid),
    )
    return require_thread(conn, new_name)


def set_description(conn: apsw.Connection, thread: ThreadRow, description: str, now_ms: int) -> ThreadRow:
    """Replace the description; a real change makes the thread's backfill pending again."""
    if description != thread.description:
        conn.execute(
            "UPDATE threads SET description = ?, updated_at = ?, description_version = description_version + 1, "
            "backfill_after = 0 WHERE id = ?",
            (description, now_ms, thread.rowid),
        )
    return require_thread(conn, thread.name)


def set_thread_status(conn: apsw.Connection, thread: ThreadRow, status: str, now_ms: int) -> ThreadRow:
    """Archive or unarchive; setting the status a thread already has changes nothing.

    Unarchiving leaves the thread's backfill pending again (over what is stored by now): sequences
    that completed while it was archived were matched against the active threads only. Members,
    rejected pairs and pairs already proposed are skipped by the backfill, so nothing is repeated.
    """
    if status == thread.status:
        return require_thread(conn, thread.name)
    if status == "active":
        conn.execute(
            "UPDATE threads SET status = ?, updated_at = ?, description_version = description_version + 1, "
            "backfill_after = 0 WHERE id = ?",
            (status, now_ms, thread.rowid),
        )
    else:
        conn.execute("UPDATE threads SET status = ?, updated_at = ? WHERE id = ?", (status, now_ms, thread.rowid))
    return require_thread(conn, thread.name)


def set_thread_type(conn: apsw.Connection, thread: ThreadRow, kind: str | None, now_ms: int) -> ThreadRow:
    """Set the type a user chose (None: derive it from the events again); setting the one it has changes nothing."""
    if kind != thread.type:
        conn.execute("UPDATE threads SET type = ?, updated_at = ? WHERE id = ?", (kind, now_ms, thread.rowid))
    return require_thread(conn, thread.name)


def delete_thread(conn: apsw.Connection, thread: ThreadRow) -> tuple[int, int]:
    """Delete the registry entry with its memberships, proposals and rejections (never a sequence).

    Returns (memberships, proposals) removed.
    """
    members = rows(conn, "SELECT count(*) FROM thread_members WHERE thread = ?", (thread.rowid,))[0][0]
    pending = rows(conn, "SELECT count(*) FROM thread_proposals WHERE thread = ?", (thread.rowid,))[0][0]
    conn.execute("DELETE FROM threads WHERE id = ?", (thread.rowid,))
    return int(members), int(pending)


def add_member(conn: apsw.Connection, thread_rowid: int, seq_rowid: int, added_by: str, now_ms: int) -> bool:
    """Confirm a membership (an existing one keeps its `addedBy`); False when it already existed.

    A member is never proposed, so a pending proposal of the pair goes.
    """
    conn.execute(
        "INSERT INTO thread_members(thread, sequence_id, added_by, created_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT DO NOTHING",
        (thread_rowid, seq_rowid, added_by, now_ms),
    )
    added = conn.changes() > 0
    conn.execute("DELETE FROM thread_proposals WHERE thread = ? AND sequence_id = ?", (thread_rowid, seq_rowid))
    return added


def remove_member(conn: apsw.Connection, thread_rowid: int, seq_rowid: int, now_ms: int) -> bool:
    """End a membership; False when the sequence was not a member.

    The pair is recorded as rejected, so proposals never bring back what the user took out.
    """
    conn.execute("DELETE FROM thread_members WHERE thread = ? AND sequence_id = ?", (thread_rowid, seq_rowid))
    removed = conn.changes() > 0
    conn.execute("DELETE FROM thread_proposals WHERE thread = ? AND sequence_id = ?", (thread_rowid, seq_rowid))
    conn.execute(
        "INSERT INTO thread_rejections(thread, sequence_id, rejected_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
        (thread_rowid, seq_rowid, now_ms),
    )
    return removed


_MEMBER_COLS = "s.id, s.public_id, s.title, s.status, s.updated_at, m.added_by, m.created_at"


def members(conn: apsw.Connection, thread_rowid: int, limit: int | None = None) -> list[MemberRow]:
    """Confirmed members, most recently updated first; the `limit` first when given."""
    found = rows(
        conn,
        f"SELECT {_MEMBER_COLS} FROM thread_members m JOIN sequences s ON s.id = m.sequence_id WHERE m.thread = ? "
        "ORDER BY s.updated_at DESC, s.id DESC LIMIT ?",
        (thread_rowid, -1 if limit is None else limit),
    )
    return [MemberRow(*r) for r in found]


def members_joined_after(conn: apsw.Connection, thread_rowid: int, after_ms: int, limit: int) -> list[MemberRow]:
    """The `limit` memberships added after `after_ms`, newest added first."""
    found = rows(
        conn,
        f"SELECT {_MEMBER_COLS} FROM thread_members m JOIN sequences s ON s.id = m.sequence_id "
        "WHERE m.thread = ? AND m.created_at > ? ORDER BY m.created_at DESC, s.id DESC LIMIT ?",
        (thread_rowid, after_ms, limit),
    )
    return [MemberRow(*r) for r in found]


def member_count(conn: apsw.Connection, thread_rowid: int, joined_after_ms: int | None = None) -> int:
    """How many members a thread has (those added after `joined_after_ms` when given)."""
    found = rows(
        conn,
        "SELECT count(*) FROM thread_members WHERE thread = ?1 AND (?2 IS NULL OR created_at > ?2)",
        (thread_rowid, joined_after_ms),
    )
    return int(found[0][0])


def sequence_rowid(conn: apsw.Connection, public_id: str) -> int | None:
    """The row id of a sequence of this store, or None."""
    found = rows(conn, "SELECT id FROM sequences WHERE public_id = ?", (public_id,))
    return int(found[0][0]) if found else None


# --- Term statistics for proposal matching (SPEC §5.3 "3. Proposals") ---
# The tokenizer `thoughts_fts` is declared with (migrations, SEARCH_CONTEXT): a text is cut into
# the same terms the index holds, so its terms meet the index's own document frequencies.
_FTS_TOKENIZER = ("porter", ["unicode61", "remove_diacritics", "2"])
# fts5vocab over the keyword index, created per connection in `temp`: the statistics come from the
# index itself, with no second index to keep in step and no migration.
_VOCAB = "thread_term_vocab"


@dataclass(frozen=True)
class TermStatistics:
    """How common terms are in a store: thoughts indexed, and per term the thoughts holding it."""

    documents: int
    frequency: dict[str, int]


def terms(conn: apsw.Connection, text: str) -> list[str]:
    """The index terms of `text`, in order (as `thoughts_fts` tokenizes a thought's body)."""
    tokenizer = conn.fts5_tokenizer(*_FTS_TOKENIZER)
    cut = tokenizer(
        text.encode("utf-8"), apsw.FTS5_TOKENIZE_DOCUMENT, None, include_offsets=False, include_colocated=False
    )
    return [t for t in cut if isinstance(t, str)]


def sequence_terms(conn: apsw.Connection, sequence_rowids: Sequence[int]) -> dict[int, Counter[str]]:
    """Term counts over the thought bodies of each given sequence (a sequence with no thought is absent)."""
    out: dict[int, Counter[str]] = {}
    for seq, body in rows(
        conn,
        "SELECT sequence_id, body FROM thoughts WHERE sequence_id IN (SELECT value FROM json_each(?)) "
        "ORDER BY sequence_id, position",
        (json.dumps(list(sequence_rowids)),),
    ):
        out.setdefault(int(seq), Counter()).update(terms(conn, str(body)))
    return out


def term_statistics(conn: apsw.Connection, wanted: Iterable[str]) -> TermStatistics:
    """Document frequencies of `wanted` in thought bodies, from the keyword index's own vocabulary.

    A term no thought holds is absent from `frequency`. One point lookup per term: the vocab
    table narrows only on `term =`, and a scan would read the whole vocabulary.
    """
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_VOCAB} USING fts5vocab(main, thoughts_fts, 'col')")
    frequency: dict[str, int] = {}
    query = f"SELECT doc FROM temp.{_VOCAB} WHERE term = ? AND col = 'body'"
    for term in sorted(set(wanted)):
        found = rows(conn, query, (term,))
        if found:
            frequency[term] = int(found[0][0])
    documents = int(rows(conn, "SELECT count(*) FROM thoughts")[0][0])
    return TermStatistics(documents, frequency)
