"""The search schema's migrations (owned by the library): keyword index, vectors and their upkeep.

`storage/migrations.py` lists them in order with every other migration; the SQL lives here beside
the one function that re-queues vectors embedded under an older passage rule.
"""

from __future__ import annotations

import apsw

from thoughtline.domain.vector_keys import PASSAGE_MIN_CHARS, VECTOR_SLOTS, chunk_texts, sentence_count, thought_of

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


def requeue_old_vectors(conn: apsw.Connection) -> None:
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


# Keyword indexing once per commit group (issue 19, part 5). The insert trigger refreshes a new
# thought's row and its neighbours' rows, one FTS5 statement pair per thought: 60-85 µs of the
# store writer's ~190 µs per append, while every other write of the store waits. Inside the
# writer's transaction a marker row in `keyword_batch` is present (`search.begin_keyword_batch`);
# then the trigger only queues the thought, and `search.index_queued_keywords` refreshes every
# queued thought and its neighbours in one statement pair just before the COMMIT and removes the
# marker, so no committed snapshot ever holds either. Every other writer (import, the CLI, a
# tool that opens the file itself) sees no marker, and the trigger indexes at once, as before.
# Deleting, editing and retitling always refresh at once.
KEYWORD_QUEUE = f"""
CREATE TABLE keyword_batch (
    id INTEGER PRIMARY KEY CHECK (id = 1)
);
CREATE TABLE keyword_queue (
    thought_id INTEGER PRIMARY KEY REFERENCES thoughts(id) ON DELETE CASCADE
);

DROP TRIGGER thoughts_search_insert;
CREATE TRIGGER thoughts_search_insert AFTER INSERT ON thoughts
WHEN NOT EXISTS (SELECT 1 FROM keyword_batch) BEGIN{_REFRESH_AROUND.format(row="new")}
    INSERT INTO vector_queue(thought_id) VALUES (new.id);
END;

CREATE TRIGGER thoughts_search_insert_batched AFTER INSERT ON thoughts
WHEN EXISTS (SELECT 1 FROM keyword_batch) BEGIN
    INSERT INTO keyword_queue(thought_id) VALUES (new.id);
    INSERT INTO vector_queue(thought_id) VALUES (new.id);
END;
"""
