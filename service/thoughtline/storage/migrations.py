"""Named, ordered, recorded schema migrations for a user store.

The same path creates a new store and upgrades an old one: each migration runs once, in its own
transaction, and is recorded in `schema_migrations`. A store that has a migration this code does
not know was written by a newer Thoughtline and is refused rather than touched.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import apsw

from thoughtline.domain.thread_names import name_key
from thoughtline.domain.vector_keys import PASSAGE_MIN_CHARS, VECTOR_SLOTS, chunk_texts, sentence_count, thought_of
from thoughtline.storage.db import write_transaction
from thoughtline.storage.key_migrations import PROPOSAL_IDS, REQUESTS_PER_CLIENT, refold_thread_names
from thoughtline.storage.vector_codes import code_existing


class SchemaTooNewError(Exception):
    """The store was written by a newer Thoughtline; the message says how to proceed."""


@dataclass(frozen=True)
class Migration:
    """One schema step: a unique name and the function that applies it inside a transaction."""

    name: str
    apply: Callable[[apsw.Connection], None]


def _sql(script: str) -> Callable[[apsw.Connection], None]:
    def apply(conn: apsw.Connection) -> None:
        conn.execute(script)

    return apply


CORE = """
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
INSERT INTO meta(key, value) VALUES ('cursor_secret', lower(hex(randomblob(32))));

CREATE TABLE sequences (
    id                  INTEGER PRIMARY KEY,
    public_id           TEXT NOT NULL UNIQUE,
    title               TEXT NOT NULL,
    status              TEXT NOT NULL DEFAULT 'active'
                        CHECK (status IN ('active', 'paused', 'completed', 'abandoned')),
    total_thoughts      INTEGER NOT NULL,
    last_thought_number INTEGER NOT NULL,
    thought_count       INTEGER NOT NULL DEFAULT 0,
    parent_public_id    TEXT,
    kind                TEXT,
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL
);
CREATE INDEX sequences_by_update ON sequences(updated_at);
CREATE INDEX sequences_by_parent ON sequences(parent_public_id) WHERE parent_public_id IS NOT NULL;

-- A branch's fork point is a thought of its parent (NULL parent = the main path), named by the
-- thought's position in the sequence so resolution can stop "up to the fork point".
CREATE TABLE branches (
    id            INTEGER PRIMARY KEY,
    sequence_id   INTEGER NOT NULL REFERENCES sequences(id) ON DELETE CASCADE,
    name          TEXT NOT NULL,
    parent_branch INTEGER REFERENCES branches(id) ON DELETE CASCADE,
    from_thought  INTEGER NOT NULL,
    fork_position INTEGER NOT NULL,
    created_at    INTEGER NOT NULL,
    UNIQUE (sequence_id, name)
);

-- `id` is global (AUTOINCREMENT, never reused) so search indexes can key on it; `position` is
-- the 1-based write order inside the sequence and is what clients see as `index`.
CREATE TABLE thoughts (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    sequence_id      INTEGER NOT NULL REFERENCES sequences(id) ON DELETE CASCADE,
    position         INTEGER NOT NULL,
    branch           INTEGER REFERENCES branches(id) ON DELETE CASCADE,
    number           INTEGER NOT NULL,
    total            INTEGER NOT NULL,
    next_needed      INTEGER NOT NULL,
    body             TEXT NOT NULL,
    is_revision      INTEGER NOT NULL DEFAULT 0,
    revises_number   INTEGER,
    revises_position INTEGER,
    needs_more       INTEGER,
    flags            INTEGER NOT NULL DEFAULT 0,
    created_at       INTEGER NOT NULL,
    UNIQUE (sequence_id, position)
);
CREATE INDEX thoughts_by_scope ON thoughts(sequence_id, branch, number, position);

-- Idempotency keys: a retried call with the same key returns the stored result.
CREATE TABLE requests (
    request_id  TEXT PRIMARY KEY,
    sequence_id INTEGER REFERENCES sequences(id) ON DELETE CASCADE,
    fingerprint TEXT NOT NULL,
    result      TEXT NOT NULL,
    created_at  INTEGER NOT NULL
);
CREATE INDEX requests_by_sequence ON requests(sequence_id);

-- Room for named threads (a later feature): user-curated, overlapping groups of sequences.
CREATE TABLE threads (
    id         INTEGER PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE COLLATE NOCASE,
    created_at INTEGER NOT NULL
);
CREATE TABLE thread_members (
    thread      INTEGER NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
    sequence_id INTEGER NOT NULL REFERENCES sequences(id) ON DELETE CASCADE,
    status      TEXT NOT NULL DEFAULT 'confirmed' CHECK (status IN ('confirmed', 'proposed', 'rejected')),
    added_by    TEXT NOT NULL DEFAULT 'agent',
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (thread, sequence_id)
) WITHOUT ROWID;
CREATE INDEX thread_members_by_sequence ON thread_members(sequence_id);
"""

# --- Search (issue 5; owned by the library) -------------------------------------------------
# Keyword index: external-content FTS5 over thoughts.body, kept in step by triggers. Vectors:
# a sqlite-vec table keyed by thoughts.id, filled after commit from `vector_queue` (writes never
# wait for the model). `search_state.generation` changes whenever stored vectors change other
# than by appending, so an in-memory vector index knows when to reload.
SEARCH = """
CREATE VIRTUAL TABLE thoughts_fts USING fts5(
    body, content = 'thoughts', content_rowid = 'id', tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO thoughts_fts(thoughts_fts) VALUES ('rebuild');

CREATE VIRTUAL TABLE thought_vectors USING vec0(
    thought_id INTEGER PRIMARY KEY,
    embedding float[384] distance_metric=cosine
);

CREATE TABLE vector_queue (
    thought_id INTEGER PRIMARY KEY REFERENCES thoughts(id) ON DELETE CASCADE
);
INSERT INTO vector_queue(thought_id) SELECT id FROM thoughts;

CREATE TABLE search_state (
    id            INTEGER PRIMARY KEY CHECK (id = 1),
    generation    INTEGER NOT NULL,
    max_vector_id INTEGER NOT NULL
);
INSERT INTO search_state(id, generation, max_vector_id) VALUES (1, 0, 0);

CREATE TRIGGER thoughts_search_insert AFTER INSERT ON thoughts BEGIN
    INSERT INTO thoughts_fts(rowid, body) VALUES (new.id, new.body);
    INSERT INTO vector_queue(thought_id) VALUES (new.id);
END;

-- Fires for cascaded deletes too (a deleted sequence takes its thoughts with it).
CREATE TRIGGER thoughts_search_delete AFTER DELETE ON thoughts BEGIN
    INSERT INTO thoughts_fts(thoughts_fts, rowid, body) VALUES ('delete', old.id, old.body);
    DELETE FROM thought_vectors WHERE thought_id = old.id;
    UPDATE search_state SET generation = generation + 1 WHERE id = 1;
END;

CREATE TRIGGER thoughts_search_update AFTER UPDATE OF body ON thoughts BEGIN
    INSERT INTO thoughts_fts(thoughts_fts, rowid, body) VALUES ('delete', old.id, old.body);
    INSERT INTO thoughts_fts(rowid, body) VALUES (new.id, new.body);
    DELETE FROM thought_vectors WHERE thought_id = old.id;
    INSERT OR IGNORE INTO vector_queue(thought_id) VALUES (new.id);
    UPDATE search_state SET generation = generation + 1 WHERE id = 1;
END;

CREATE INDEX thoughts_by_created ON thoughts(created_at);
"""

# A thought's vectors are keyed by `thought id * VECTOR_SLOTS + slot` (domain/vector_keys.py).
# sqlite-vec scans the whole table for range or IN deletes but looks up `=` directly, hence one
# point delete per slot in the triggers.
# Both f-strings below interpolate only these integer constants, never outside input.
_DELETE_SLOTS = "\n".join(
    f"    DELETE FROM thought_vectors WHERE vector_key = old.id * {VECTOR_SLOTS} + {slot};"
    for slot in range(VECTOR_SLOTS)
)
SEARCH_PASSAGES = f"""
DROP TRIGGER thoughts_search_delete;
DROP TRIGGER thoughts_search_update;
DROP TABLE thought_vectors;
CREATE VIRTUAL TABLE thought_vectors USING vec0(
    vector_key INTEGER PRIMARY KEY,
    embedding float[384] distance_metric=cosine
);
INSERT OR IGNORE INTO vector_queue(thought_id) SELECT id FROM thoughts;
UPDATE search_state SET generation = generation + 1, max_vector_id = 0 WHERE id = 1;

CREATE TRIGGER thoughts_search_delete AFTER DELETE ON thoughts BEGIN
    INSERT INTO thoughts_fts(thoughts_fts, rowid, body) VALUES ('delete', old.id, old.body);
{_DELETE_SLOTS}
    UPDATE search_state SET generation = generation + 1 WHERE id = 1;
END;

CREATE TRIGGER thoughts_search_update AFTER UPDATE OF body ON thoughts BEGIN
    INSERT INTO thoughts_fts(thoughts_fts, rowid, body) VALUES ('delete', old.id, old.body);
    INSERT INTO thoughts_fts(rowid, body) VALUES (new.id, new.body);
{_DELETE_SLOTS}
    INSERT OR IGNORE INTO vector_queue(thought_id) VALUES (new.id);
    UPDATE search_state SET generation = generation + 1 WHERE id = 1;
END;
"""

# Document expansion: the keyword index holds each thought's text beside its neighbours' text
# and its sequence title, in separate columns that ranking weighs less than the body (LoCoMo,
# all ten conversations: hybrid recall@5 0.623 -> 0.658; see `retrieval.Tuning`). An answer
# often sits one step from the words of the question. The table is contentless (the neighbour
# text is not stored twice) with contentless_delete, so a row is refreshed by rowid without
# supplying its old text: inserting, editing or deleting a thought refreshes it and the thoughts
# on either side of it. `thought_search_text` is the one definition of a row's columns.
_REFRESH_AROUND = """
    DELETE FROM thoughts_fts WHERE rowid IN (
        SELECT id FROM thoughts
        WHERE sequence_id = {row}.sequence_id AND position BETWEEN {row}.position - 1 AND {row}.position + 1
    );
    INSERT INTO thoughts_fts(rowid, body, context, title)
        SELECT id, body, context, title FROM thought_search_text
        WHERE sequence_id = {row}.sequence_id AND position BETWEEN {row}.position - 1 AND {row}.position + 1;"""
SEARCH_CONTEXT = f"""
DROP TRIGGER thoughts_search_insert;
DROP TRIGGER thoughts_search_delete;
DROP TRIGGER thoughts_search_update;
DROP TABLE thoughts_fts;
CREATE VIRTUAL TABLE thoughts_fts USING fts5(
    body, context, title, content = '', contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE VIEW thought_search_text AS
SELECT t.id, t.sequence_id, t.position, t.body,
       coalesce((SELECT p.body FROM thoughts p WHERE p.sequence_id = t.sequence_id AND p.position = t.position - 1), '')
       || char(10) ||
       coalesce((SELECT n.body FROM thoughts n WHERE n.sequence_id = t.sequence_id AND n.position = t.position + 1), '')
       AS context,
       s.title
FROM thoughts t JOIN sequences s ON s.id = t.sequence_id;

INSERT INTO thoughts_fts(rowid, body, context, title) SELECT id, body, context, title FROM thought_search_text;

CREATE TRIGGER thoughts_search_insert AFTER INSERT ON thoughts BEGIN{_REFRESH_AROUND.format(row="new")}
    INSERT INTO vector_queue(thought_id) VALUES (new.id);
END;

-- Fires for cascaded deletes too; the neighbours of a deleted thought lose it from their context.
CREATE TRIGGER thoughts_search_delete AFTER DELETE ON thoughts BEGIN
    DELETE FROM thoughts_fts WHERE rowid = old.id;{_REFRESH_AROUND.format(row="old")}
{_DELETE_SLOTS}
    UPDATE search_state SET generation = generation + 1 WHERE id = 1;
END;

CREATE TRIGGER thoughts_search_update AFTER UPDATE OF body ON thoughts BEGIN{_REFRESH_AROUND.format(row="new")}
{_DELETE_SLOTS}
    INSERT OR IGNORE INTO vector_queue(thought_id) VALUES (new.id);
    UPDATE search_state SET generation = generation + 1 WHERE id = 1;
END;

CREATE TRIGGER sequences_search_title AFTER UPDATE OF title ON sequences BEGIN
    DELETE FROM thoughts_fts WHERE rowid IN (SELECT id FROM thoughts WHERE sequence_id = new.id);
    INSERT INTO thoughts_fts(rowid, body, context, title)
        SELECT id, body, context, title FROM thought_search_text WHERE sequence_id = new.id;
END;
"""

# --- end of search block ---

# --- Threads (issue 9; SPEC §5.3) --------------------------------------------------------------
# Replaces the placeholder `threads` / `thread_members` of 0001_core. `name_key` is the Unicode
# casefold of the name, computed in Python (NOCASE folds ASCII only), so "Straße" and "STRASSE"
# are one name. `thread_members` holds confirmed members only; proposals and rejections have
# their own tables so a rejected pair is remembered even when nothing else is. A thread's
# backfill is done when `backfilled_version = description_version`; `backfill_after` is the
# `sequences.id` the bounded backfill has reached. `thread_match_queue` lists completed sequences
# whose matching (after commit, never on the write path) is still to run.
THREADS = """
CREATE TABLE threads (
    id                  INTEGER PRIMARY KEY,
    name                TEXT NOT NULL,
    name_key            TEXT NOT NULL,
    description         TEXT NOT NULL DEFAULT '',
    status              TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'archived')),
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    description_version INTEGER NOT NULL DEFAULT 1,
    backfilled_version  INTEGER NOT NULL DEFAULT 0,
    backfill_after      INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX threads_by_name_key ON threads(name_key);

CREATE TABLE thread_members (
    thread      INTEGER NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
    sequence_id INTEGER NOT NULL REFERENCES sequences(id) ON DELETE CASCADE,
    added_by    TEXT NOT NULL CHECK (added_by IN ('agent', 'user', 'review')),
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (thread, sequence_id)
) WITHOUT ROWID;
CREATE INDEX thread_members_by_sequence ON thread_members(sequence_id);

CREATE TABLE thread_proposals (
    id               INTEGER PRIMARY KEY,
    thread           INTEGER NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
    sequence_id      INTEGER NOT NULL REFERENCES sequences(id) ON DELETE CASCADE,
    similarity       REAL NOT NULL,
    evidence_thought INTEGER,
    proposed_at      INTEGER NOT NULL,
    UNIQUE (thread, sequence_id)
);
CREATE INDEX thread_proposals_by_sequence ON thread_proposals(sequence_id);

CREATE TABLE thread_rejections (
    thread      INTEGER NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
    sequence_id INTEGER NOT NULL REFERENCES sequences(id) ON DELETE CASCADE,
    rejected_at INTEGER NOT NULL,
    PRIMARY KEY (thread, sequence_id)
) WITHOUT ROWID;
CREATE INDEX thread_rejections_by_sequence ON thread_rejections(sequence_id);

CREATE TABLE thread_match_queue (
    sequence_id INTEGER PRIMARY KEY REFERENCES sequences(id) ON DELETE CASCADE,
    queued_at   INTEGER NOT NULL
);

ALTER TABLE thoughts ADD COLUMN event TEXT CHECK (event IN (
    'decision', 'blocker', 'blocker_cleared', 'question', 'answer',
    'milestone', 'setback', 'resolution', 'observation'
));
-- The briefing reads only event-bearing thoughts of member sequences: explicit events plus the
-- derived ones (a final thought is a conclusion, a revision an update). The query repeats this
-- WHERE so the planner uses the partial index.
CREATE INDEX thoughts_events ON thoughts(sequence_id, position)
    WHERE event IS NOT NULL OR next_needed = 0 OR is_revision = 1;
"""


def _apply_threads(conn: apsw.Connection) -> None:
    """Recreate the placeholder thread tables in the final shape, carrying any rows they hold."""
    old_threads = list(conn.execute("SELECT id, name, created_at FROM threads"))
    old_members = list(
        conn.execute("SELECT thread, sequence_id, added_by, created_at FROM thread_members WHERE status = 'confirmed'")
    )
    conn.execute("DROP TABLE thread_members; DROP TABLE threads;")
    conn.execute(THREADS)
    for rowid, name, created_at in old_threads:
        conn.execute(
            "INSERT INTO threads(id, name, name_key, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
            (rowid, name, name_key(str(name)), created_at, created_at),
        )
    for thread, sequence_id, added_by, created_at in old_members:
        who = added_by if added_by in ("agent", "user", "review") else "agent"
        conn.execute(
            "INSERT INTO thread_members(thread, sequence_id, added_by, created_at) VALUES (?, ?, ?, ?)",
            (thread, sequence_id, who, created_at),
        )


# --- end of threads block ---


# Canonical-style calls (issue 12): the OAuth client that started a sequence (NULL = the static
# token), so a call without sequenceId only ever continues its own client's sequence; and the fork
# arguments exactly as each thought sent them, because history returns every argument as sent
# (the `branches` row keeps the resolved parent instead). The index serves the continuation lookup.
SEQUENCE_ORIGIN = """
ALTER TABLE sequences ADD COLUMN origin_client TEXT;
ALTER TABLE thoughts ADD COLUMN sent_branch_from_thought INTEGER;
ALTER TABLE thoughts ADD COLUMN sent_branch_from_branch_id TEXT;
CREATE INDEX sequences_by_origin ON sequences(origin_client, updated_at) WHERE status IN ('active', 'paused');
-- Stores written before this migration: a branch's first thought sent the branch's fork number.
UPDATE thoughts SET sent_branch_from_thought = (SELECT b.from_thought FROM branches b WHERE b.id = thoughts.branch)
WHERE branch IS NOT NULL AND position = (
    SELECT min(t.position) FROM thoughts t WHERE t.sequence_id = thoughts.sequence_id AND t.branch = thoughts.branch
);
"""

# A random id stamped once into each store: the registry of created stores (`storage/registry.py`)
# records it, so a different store renamed over this file is told apart from a restored backup.
STORE_IDENTITY = """
INSERT OR IGNORE INTO meta(key, value) VALUES ('store_id', lower(hex(randomblob(16))));
"""

# Search ranking (issue 8): the learned ranker reads whole-thought and best-sentence cosines, and
# every multi-sentence thought now has one vector per sentence. Stores embedded before that hold
# one vector for a short thought and heading-prefixed sentence pairs for a long one (over 1,000
# characters), so their search ranks below what was trained until re-embedded. This re-queues
# exactly the thoughts whose stored vectors differ from the current passage rule: a different
# number of vectors, or the old rule's grouped passages (over 16 sentences), whose count can
# match. `store_vectors` deletes every slot of a thought before writing it, so re-embedding
# replaces; the old vectors keep serving searches until then. A store embedded under the current
# rule re-queues almost nothing.
_OLD_PASSAGE_MIN_CHARS = 1_000
_OLD_GROUPED_SENTENCES = 16


def _requeue_old_vectors(conn: apsw.Connection) -> None:
    stored: dict[int, int] = {}
    for (key,) in conn.execute("SELECT vector_key FROM thought_vectors"):
        owner = thought_of(int(key))
        stored[owner] = stored.get(owner, 0) + 1
    stale: list[int] = []
    for tid, body in conn.execute("SELECT id, body FROM thoughts"):
        count = stored.get(int(tid))
        if count is None:
            continue  # never embedded: already queued
        text = str(body)
        grouped = len(text) > _OLD_PASSAGE_MIN_CHARS and sentence_count(text) > _OLD_GROUPED_SENTENCES
        if grouped or count != len(chunk_texts(text, VECTOR_SLOTS, PASSAGE_MIN_CHARS)):
            stale.append(int(tid))
    conn.executemany("INSERT OR IGNORE INTO vector_queue(thought_id) VALUES (?)", [(t,) for t in stale])


# Thread types (issue 18, SPEC §5.3): the type a user set on a thread; NULL means it is derived
# from the thread's events on read (`domain/thread_types.py`), so it follows them until set.
# The event log index covers everything a briefing reduces and the type derivation reads, so both
# read the index alone (no table row per event thought) on a store of 100k thoughts; its WHERE is
# the one of `thoughts_events`, which the queries repeat.
THREAD_TYPE = """
ALTER TABLE threads ADD COLUMN type TEXT CHECK (type IS NULL OR type IN ('work', 'case', 'relationship', 'topic'));
CREATE INDEX thoughts_event_log ON thoughts(sequence_id, event, next_needed, is_revision, created_at, number, branch)
    WHERE event IS NOT NULL OR next_needed = 0 OR is_revision = 1;
"""

# Bounded briefings and thread lists (issue 18): each event a briefing shows is a seek per member
# in time order, (time, id), of all events or of one kind (`storage/thread_events.py`), replacing
# 0005's and 0012's indexes, which made it read every event; a member's last thought time is
# read from an index, not its row.
BOUNDED_EVENTS = """
DROP INDEX thoughts_events;
DROP INDEX thoughts_event_log;
CREATE INDEX thoughts_event_time
    ON thoughts(sequence_id, created_at, id, event, next_needed, is_revision, number, branch)
    WHERE event IS NOT NULL OR next_needed = 0 OR is_revision = 1;
CREATE INDEX thoughts_event_kinds
    ON thoughts(sequence_id, event, created_at, id, next_needed, is_revision, number, branch)
    WHERE event IS NOT NULL OR next_needed = 0 OR is_revision = 1;
CREATE INDEX thoughts_by_position_time ON thoughts(sequence_id, position, created_at);
"""


MIGRATIONS: Sequence[Migration] = (
    Migration("0001_core", _sql(CORE)),
    Migration("0002_search", _sql(SEARCH)),
    Migration("0003_search_passages", _sql(SEARCH_PASSAGES)),
    Migration("0004_search_context", _sql(SEARCH_CONTEXT)),
    Migration("0005_threads", _apply_threads),
    Migration("0006_sequence_origin", _sql(SEQUENCE_ORIGIN)),
    Migration("0008_store_identity", _sql(STORE_IDENTITY)),
    Migration("0007_search_ranking", _requeue_old_vectors),
    Migration("0009_proposal_ids_never_reused", _sql(PROPOSAL_IDS)),
    Migration("0010_request_ids_per_client", _sql(REQUESTS_PER_CLIENT)),
    Migration("0011_thread_names_fold_compatibility_forms", refold_thread_names),
    Migration("0012_thread_type", _sql(THREAD_TYPE)),
    # Every vector also as int8 codes, so opening a store reads those (storage/vector_codes.py).
    Migration("0013_vector_codes", code_existing),
    Migration("0014_bounded_thread_events", _sql(BOUNDED_EVENTS)),
)


def applied_migrations(conn: apsw.Connection) -> list[str]:
    """Names recorded in the store, oldest first (empty for a new file)."""
    exists = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").fetchall()
    if not exists:
        return []
    return [row[0] for row in conn.execute("SELECT name FROM schema_migrations ORDER BY rowid")]


def schema_version(conn: apsw.Connection) -> int:
    """How many migrations the store has recorded."""
    return len(applied_migrations(conn))


def migrate(conn: apsw.Connection, migrations: Sequence[Migration] = MIGRATIONS) -> list[str]:
    """Bring the store up to date; returns the names applied now. Refuses newer stores."""
    conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    known = [m.name for m in migrations]
    recorded = applied_migrations(conn)
    unknown = [name for name in recorded if name not in known]
    if unknown:
        raise SchemaTooNewError(
            f"this store has migrations this Thoughtline does not know ({', '.join(unknown)}): "
            "it was written by a newer version. Upgrade Thoughtline; the store was left untouched."
        )
    applied: list[str] = []
    for migration in migrations:
        if migration.name in recorded:
            continue
        with write_transaction(conn):
            # Another process may have applied it while we waited for the write lock.
            if conn.execute("SELECT 1 FROM schema_migrations WHERE name = ?", (migration.name,)).fetchall():
                continue
            migration.apply(conn)
            conn.execute(
                "INSERT INTO schema_migrations(name, applied_at) VALUES (?, strftime('%Y-%m-%dT%H:%M:%fZ'))",
                (migration.name,),
            )
        applied.append(migration.name)
    return applied
