"""Moving a whole store in and out: JSON Lines export/import and integrity checks.

Part of the store layer, which is where all SQL lives.
Export writes parents before children. Import checks every record with the tools' own rules
(`domain/export_rules.py`), recomputes what is derived, remaps row ids, and runs in the caller's
transaction, so a refused file leaves nothing behind.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import apsw

from thoughtline.domain.export_rules import RecordChecker
from thoughtline.domain.record_fields import RecordProblem
from thoughtline.domain.thread_names import name_key
from thoughtline.storage.proposals import issued_proposal_ids, reserve_proposal_ids
from thoughtline.storage.sequence_reads import get_sequence

# A thread's own type travels as `thread_type`: `type` names the record's kind.
_THREAD_KEYS = ("id", "name", "description", "status", "created_at", "updated_at", "thread_type")
_MEMBER_KEYS = ("thread", "sequence_id", "sequence_public_id", "added_by", "created_at")
_REJECTION_KEYS = ("thread", "sequence_id", "sequence_public_id", "rejected_at")
THREAD_RECORDS = ("thread", "thread_member", "thread_rejection")
COUNTED = ("sequence", "branch", "thought", "thread", "thread_member", "thread_rejection")


def iter_export(conn: apsw.Connection) -> Iterator[dict[str, Any]]:
    """Every sequence, branch, thought, thread, membership and rejection as JSON-ready records.

    Parents come before children. A thought's `event` travels as one of its columns. Pending
    proposals are not exported: the importing store matches again (its threads' backfill starts
    pending), and rejections keep what the user turned down out of that. The last record says how
    many proposal ids this store issued, so the importing store never hands out one of them again.
    """
    for row in conn.execute("SELECT * FROM sequences ORDER BY id"):
        yield {"type": "sequence", **_row_dict(conn, "sequences", row)}
    for row in conn.execute(
        "SELECT b.*, s.public_id FROM branches b JOIN sequences s ON s.id = b.sequence_id ORDER BY b.id"
    ):
        yield {"type": "branch", **_row_dict(conn, "branches", row)}
    for row in conn.execute(
        "SELECT t.*, s.public_id FROM thoughts t JOIN sequences s ON s.id = t.sequence_id ORDER BY t.id"
    ):
        yield {"type": "thought", **_row_dict(conn, "thoughts", row)}
    for row in conn.execute(
        "SELECT id, name, description, status, created_at, updated_at, type FROM threads ORDER BY id"
    ):
        yield {"type": "thread", **dict(zip(_THREAD_KEYS, row, strict=True))}
    for row in conn.execute(
        "SELECT m.thread, m.sequence_id, s.public_id, m.added_by, m.created_at FROM thread_members m "
        "JOIN sequences s ON s.id = m.sequence_id ORDER BY m.thread, m.sequence_id"
    ):
        yield {"type": "thread_member", **dict(zip(_MEMBER_KEYS, row, strict=True))}
    for row in conn.execute(
        "SELECT r.thread, r.sequence_id, s.public_id, r.rejected_at FROM thread_rejections r "
        "JOIN sequences s ON s.id = r.sequence_id ORDER BY r.thread, r.sequence_id"
    ):
        yield {"type": "thread_rejection", **dict(zip(_REJECTION_KEYS, row, strict=True))}
    yield {"type": "proposal_ids", "issued": issued_proposal_ids(conn)}


def _columns(conn: apsw.Connection, table: str) -> list[str]:
    return [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]


def _row_dict(conn: apsw.Connection, table: str, row: tuple[Any, ...]) -> dict[str, Any]:
    cols = _columns(conn, table)
    record = dict(zip(cols, row[: len(cols)], strict=True))
    if len(row) > len(cols):
        record["sequence_public_id"] = row[len(cols)]
    return record


def import_records(
    conn: apsw.Connection, records: Iterable[tuple[int, Mapping[str, Any]]], now_ms: int
) -> dict[str, int]:
    """Load exported records, each with the number its reader points at it by (a line).

    Refuses with `RecordProblem` (naming that number) at the first record that breaks a rule or
    whose sequence id this store already holds; the caller's transaction then rolls everything
    back. Times after `now_ms` are moved to it, and a time before the one it follows (its sequence,
    the thought before it, its thread) forward to that one; counts, titles and totals are recomputed.
    """
    checker = RecordChecker(now_ms, clamp=True)
    loader = _Loader(conn)
    counts = dict.fromkeys(COUNTED, 0)
    for ref, rec in records:
        row = checker.check(rec, ref)
        kind = str(rec["type"])
        loader.load(kind, row, ref)
        if kind in counts:
            counts[kind] += 1
    problems = checker.whole_file_problems()
    if problems:
        raise problems[0]
    for file_id, derived in checker.derived().items():
        conn.execute(
            # A sequence is updated by every thought written to it: never before its newest one.
            "UPDATE sequences SET title = ?, thought_count = ?, last_thought_number = ?, total_thoughts = ?, "
            "updated_at = max(updated_at, ?) WHERE id = ?",
            (
                derived.title,
                derived.thought_count,
                derived.last_thought_number,
                derived.total_thoughts,
                derived.last_time,
                loader.sequences[file_id],
            ),
        )
    # Imported completed sequences are matched like ones that complete here: against every active
    # thread of this store, not only the file's threads (whose backfill starts pending).
    conn.execute(
        "INSERT INTO thread_match_queue(sequence_id, queued_at) SELECT id, ? FROM sequences "
        "WHERE status = 'completed' AND id IN (SELECT value FROM json_each(?)) ON CONFLICT(sequence_id) DO NOTHING",
        (now_ms, json.dumps(list(loader.sequences.values()))),
    )
    counts["merged_thread"] = loader.merged
    return counts


class _Loader:
    """Inserts checked rows, mapping the file's row ids onto this store's."""

    def __init__(self, conn: apsw.Connection) -> None:
        self.conn = conn
        self.sequences: dict[int, int] = {}
        self.branches: dict[int, int] = {}
        self.threads: dict[int, int] = {}
        self.merged = 0  # threads of the file absorbed by one of the store's

    def load(self, kind: str, row: dict[str, Any], ref: int) -> None:
        if kind == "sequence":
            if get_sequence(self.conn, str(row["public_id"])) is not None:
                raise RecordProblem(
                    f"sequence {row['public_id']} is already in this store (was this export imported before?)", ref
                )
            for derived in ("thought_count", "last_thought_number", "total_thoughts"):
                row[derived] = 0  # recomputed from the thoughts once they are in
            # Pop first: in `d[k] = v` the value is evaluated before the key, so the insert would
            # still carry the file's own row id, which another store may already use.
            old = row.pop("id")
            self.sequences[old] = self._insert("sequences", row)
        elif kind == "branch":
            row["sequence_id"] = self.sequences[row["sequence_id"]]
            parent = row["parent_branch"]
            row["parent_branch"] = None if parent is None else self.branches[parent]
            old = row.pop("id")
            self.branches[old] = self._insert("branches", row)
        elif kind == "thought":
            row.pop("id")
            row["sequence_id"] = self.sequences[row["sequence_id"]]
            row["branch"] = None if row["branch"] is None else self.branches[row["branch"]]
            self._insert("thoughts", row)
        elif kind == "thread":
            old = row.pop("id")
            self.threads[old] = self._thread(row)
        elif kind in THREAD_RECORDS:
            row["thread"] = self.threads[row["thread"]]
            row["sequence_id"] = self.sequences[row["sequence_id"]]
            table = "thread_members" if kind == "thread_member" else "thread_rejections"
            self._insert(table, row, on_conflict=" ON CONFLICT DO NOTHING")
        else:  # proposal_ids
            reserve_proposal_ids(self.conn, int(row["issued"]))

    def _insert(self, table: str, row: dict[str, Any], on_conflict: str = "") -> int:
        # Column names come from the checker's fixed record shapes, never from the file.
        cols = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        self.conn.execute(f"INSERT INTO {table}({cols}) VALUES ({marks}){on_conflict}", tuple(row.values()))
        return self.conn.last_insert_rowid()

    def _thread(self, row: dict[str, Any]) -> int:
        """The target thread of an imported one: a thread of the same name (any case or form) absorbs it."""
        key = name_key(str(row["name"]))
        found: list[tuple[int]] = list(self.conn.execute("SELECT id FROM threads WHERE name_key = ?", (key,)))
        if found:
            self.merged += 1
            # The file's members and rejections may predate the store's thread of that name: it has
            # existed since the older of the two, so no membership comes before its thread.
            self.conn.execute(
                "UPDATE threads SET created_at = min(created_at, ?) WHERE id = ?", (row["created_at"], found[0][0])
            )
            return found[0][0]
        return self._insert("threads", {**row, "name_key": key})


def integrity_problems(conn: apsw.Connection) -> list[str]:
    """`PRAGMA integrity_check` and foreign-key check findings (empty when healthy)."""
    problems = [str(r[0]) for r in conn.execute("PRAGMA integrity_check") if r[0] != "ok"]
    problems += [f"foreign key: {r}" for r in conn.execute("PRAGMA foreign_key_check")]
    return problems
