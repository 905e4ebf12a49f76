"""The thread schema's migrations (SPEC §5.3): threads, members, proposals, types and event indexes.

`storage/migrations.py` lists them in order with every other migration.
"""

from __future__ import annotations

import apsw

from thoughtline.domain.thread_names import name_key

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


def apply_threads(conn: apsw.Connection) -> None:
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
