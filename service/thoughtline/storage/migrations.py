"""Named, ordered, recorded schema migrations for a user store.

The same path creates a new store and upgrades an old one: each migration runs once, in its own
transaction, and is recorded in `schema_migrations`. A store that has a migration this code does
not know was written by a newer Thoughtline and is refused rather than touched.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import apsw

from thoughtline.storage.db import write_transaction
from thoughtline.storage.key_migrations import PROPOSAL_IDS, REQUESTS_PER_CLIENT, refold_thread_names
from thoughtline.storage.search_schema import (
    KEYWORD_QUEUE,
    SEARCH,
    SEARCH_CONTEXT,
    SEARCH_PASSAGES,
    requeue_old_vectors,
)
from thoughtline.storage.thread_schema import BOUNDED_EVENTS, THREAD_TYPE, apply_threads
from thoughtline.storage.vector_codes import code_existing

KEYWORD_QUEUE_MIGRATION = "0015_keyword_queue"


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

MIGRATIONS: Sequence[Migration] = (
    Migration("0001_core", _sql(CORE)),
    Migration("0002_search", _sql(SEARCH)),
    Migration("0003_search_passages", _sql(SEARCH_PASSAGES)),
    Migration("0004_search_context", _sql(SEARCH_CONTEXT)),
    Migration("0005_threads", apply_threads),
    Migration("0006_sequence_origin", _sql(SEQUENCE_ORIGIN)),
    Migration("0008_store_identity", _sql(STORE_IDENTITY)),
    Migration("0007_search_ranking", requeue_old_vectors),
    Migration("0009_proposal_ids_never_reused", _sql(PROPOSAL_IDS)),
    Migration("0010_request_ids_per_client", _sql(REQUESTS_PER_CLIENT)),
    Migration("0011_thread_names_fold_compatibility_forms", refold_thread_names),
    Migration("0012_thread_type", _sql(THREAD_TYPE)),
    # Every vector also as int8 codes, so opening a store reads those (storage/vector_codes.py).
    Migration("0013_vector_codes", code_existing),
    Migration("0014_bounded_thread_events", _sql(BOUNDED_EVENTS)),
    # New thoughts are keyword-indexed once per transaction, not once each (issue 19, part 5).
    Migration(KEYWORD_QUEUE_MIGRATION, _sql(KEYWORD_QUEUE)),
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
