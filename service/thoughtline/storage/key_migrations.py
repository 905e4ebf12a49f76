"""Schema steps that change how rows are keyed: proposal ids, request ids, thread name keys (issue 19).

Each is one migration of `storage/migrations.py`, which lists them in order; kept here so that
file stays one list of steps rather than every step's body.
"""

from __future__ import annotations

import apsw

from thoughtline.domain.thread_names import name_key, repaired_name

# Proposal ids are never reused: a retried accept or reject of a decided id must find nothing,
# never a newer proposal that took the same number. AUTOINCREMENT keeps the highest id ever
# issued in `sqlite_sequence`. The old plain key issued max(id) + 1, so an upgraded store cannot
# know what it already handed out. Every id it issued was at most the number of proposals it
# ever made, far fewer than a million for any store so far (only pairs above a calibrated
# threshold are proposed), so its new ids start a million above the highest one left. A store
# that never held a sequence or a thread starts at 1.
PROPOSAL_ID_JUMP = 1_000_000
PROPOSAL_IDS = f"""
CREATE TABLE thread_proposals_ids (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    thread           INTEGER NOT NULL REFERENCES threads(id) ON DELETE CASCADE,
    sequence_id      INTEGER NOT NULL REFERENCES sequences(id) ON DELETE CASCADE,
    similarity       REAL NOT NULL,
    evidence_thought INTEGER,
    proposed_at      INTEGER NOT NULL,
    UNIQUE (thread, sequence_id)
);
INSERT INTO thread_proposals_ids(id, thread, sequence_id, similarity, evidence_thought, proposed_at)
    SELECT id, thread, sequence_id, similarity, evidence_thought, proposed_at FROM thread_proposals;
DROP TABLE thread_proposals;
ALTER TABLE thread_proposals_ids RENAME TO thread_proposals;
CREATE INDEX thread_proposals_by_sequence ON thread_proposals(sequence_id);
DELETE FROM sqlite_sequence WHERE name = 'thread_proposals';
INSERT INTO sqlite_sequence(name, seq)
    SELECT 'thread_proposals', coalesce((SELECT max(id) FROM thread_proposals), 0) + {PROPOSAL_ID_JUMP}
    WHERE EXISTS (SELECT 1 FROM sequences) OR EXISTS (SELECT 1 FROM threads);
"""

# A requestId is replayed only for the client that sent it: continuation is per OAuth client
# (0006), so replay is too, or one client's key could return another client's result. `client`
# is the OAuth client id, '' for the static token. Keys stored before are given to the client
# that started their sequence, the best record of who sent them.
REQUESTS_PER_CLIENT = """
CREATE TABLE requests_per_client (
    client      TEXT NOT NULL,
    request_id  TEXT NOT NULL,
    sequence_id INTEGER REFERENCES sequences(id) ON DELETE CASCADE,
    fingerprint TEXT NOT NULL,
    result      TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (client, request_id)
);
INSERT INTO requests_per_client(client, request_id, sequence_id, fingerprint, result, created_at)
    SELECT coalesce(s.origin_client, ''), r.request_id, r.sequence_id, r.fingerprint, r.result, r.created_at
    FROM requests r LEFT JOIN sequences s ON s.id = r.sequence_id;
DROP TABLE requests;
ALTER TABLE requests_per_client RENAME TO requests;
CREATE INDEX requests_by_sequence ON requests(sequence_id);
"""


def refold_thread_names(conn: apsw.Connection) -> None:
    """Recompute every `name_key` under the compatibility caseless rule, repairing names it refuses.

    A name holding invisible characters loses them, and a name that now folds onto an older
    thread's gets its row id appended (`repaired_name`): no thread becomes unreachable.
    """
    stored = list(conn.execute("SELECT id, name FROM threads ORDER BY id"))
    # Placeholders no valid key can equal (a control character), so moving keys never collide.
    conn.execute("UPDATE threads SET name_key = char(1) || id")
    taken: set[str] = set()
    for rowid, name in stored:
        fixed = repaired_name(str(name), int(rowid), taken)
        taken.add(name_key(fixed))
        conn.execute("UPDATE threads SET name = ?, name_key = ? WHERE id = ?", (fixed, name_key(fixed), rowid))
