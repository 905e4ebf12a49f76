"""Moving a whole store in and out: JSON Lines export/import and integrity checks.

Part of the store layer (the only other home of SQL besides `storage/thoughts.py` and the migrations).
Export writes parents before children; import remaps row ids and runs in the caller's transaction,
so a failed import leaves nothing behind.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import apsw

from thoughtline.domain.thread_names import name_key
from thoughtline.errors import DomainError
from thoughtline.storage.thoughts import get_sequence

# A thread's own type travels as `thread_type`: `type` names the record's kind.
_THREAD_KEYS = ("id", "name", "description", "status", "created_at", "updated_at", "thread_type")
_MEMBER_KEYS = ("thread", "sequence_id", "sequence_public_id", "added_by", "created_at")
_REJECTION_KEYS = ("thread", "sequence_id", "sequence_public_id", "rejected_at")
THREAD_RECORDS = ("thread", "thread_member", "thread_rejection")


def iter_export(conn: apsw.Connection) -> Iterator[dict[str, Any]]:
    """Every sequence, branch, thought, thread, membership and rejection as JSON-ready records.

    Parents come before children. A thought's `event` travels as one of its columns. Pending
    proposals are not exported: the importing store matches again (its threads' backfill starts
    pending), and rejections keep what the user turned down out of that.
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


def _columns(conn: apsw.Connection, table: str) -> list[str]:
    return [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]


def _row_dict(conn: apsw.Connection, table: str, row: tuple[Any, ...]) -> dict[str, Any]:
    cols = _columns(conn, table)
    record = dict(zip(cols, row[: len(cols)], strict=True))
    if len(row) > len(cols):
        record["sequence_public_id"] = row[len(cols)]
    return record


def import_records(conn: apsw.Connection, records: Iterable[dict[str, Any]]) -> dict[str, int]:
    """Load exported records into this store, remapping row ids; existing sequence ids are refused.

    Columns an older export lacks take their defaults; a record missing what it needs is refused
    with its position, and the caller's transaction then rolls everything back.
    """
    seq_map: dict[int, int] = {}
    branch_map: dict[int, int] = {}
    thread_map: dict[int, int] = {}
    counts = {"sequence": 0, "branch": 0, "thought": 0, "thread": 0, "thread_member": 0, "thread_rejection": 0}
    for number, rec in enumerate(records, start=1):
        try:
            _import_one(conn, rec, seq_map, branch_map, thread_map)
        except (KeyError, TypeError, ValueError) as exc:
            raise DomainError(
                "invalid_input",
                f"record {number} ({rec.get('type')!r}) is incomplete or refers to a record that is not in the "
                f"file ({type(exc).__name__}: {str(exc)[:80]}); import needs a whole file from `thoughtline export`.",
            ) from None
        counts[str(rec["type"])] += 1
    return counts


def _import_one(
    conn: apsw.Connection,
    rec: dict[str, Any],
    seq_map: dict[int, int],
    branch_map: dict[int, int],
    thread_map: dict[int, int],
) -> None:
    """Insert one record, recording its new row id for the records that refer to it."""
    kind = rec.get("type")
    if kind == "sequence":
        if get_sequence(conn, str(rec["public_id"])) is not None:
            raise DomainError(
                "invalid_input",
                f"sequence {rec['public_id']} is already in this store (was this export imported before?).",
            )
        cols = [c for c in _columns(conn, "sequences") if c != "id" and c in rec]
        conn.execute(
            f"INSERT INTO sequences({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})",
            tuple(rec[c] for c in cols),
        )
        seq_map[int(rec["id"])] = conn.last_insert_rowid()
    elif kind == "branch":
        parent = rec["parent_branch"]
        conn.execute(
            "INSERT INTO branches(sequence_id, name, parent_branch, from_thought, fork_position, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (
                seq_map[int(rec["sequence_id"])],
                rec["name"],
                None if parent is None else branch_map[int(parent)],
                rec["from_thought"],
                rec["fork_position"],
                rec["created_at"],
            ),
        )
        branch_map[int(rec["id"])] = conn.last_insert_rowid()
    elif kind == "thought":
        cols = [c for c in _columns(conn, "thoughts") if c != "id" and c in rec]
        values = dict(rec)
        values["sequence_id"] = seq_map[int(rec["sequence_id"])]
        values["branch"] = None if rec["branch"] is None else branch_map[int(rec["branch"])]
        conn.execute(
            f"INSERT INTO thoughts({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})",
            tuple(values[c] for c in cols),
        )
    elif kind in THREAD_RECORDS:
        _import_thread_record(conn, rec, seq_map, thread_map)
    else:
        raise DomainError(
            "invalid_input",
            f"unknown record type {kind!r}; expected sequence, branch, thought, thread, thread_member "
            "or thread_rejection.",
        )


def _import_thread_record(
    conn: apsw.Connection, rec: dict[str, Any], seq_map: dict[int, int], thread_map: dict[int, int]
) -> None:
    """Insert one `thread`, `thread_member` or `thread_rejection` record, remapping its row ids."""
    kind = rec["type"]
    if kind == "thread":
        thread_map[int(rec["id"])] = _import_thread(conn, rec)
    elif kind == "thread_member":
        conn.execute(
            "INSERT INTO thread_members(thread, sequence_id, added_by, created_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT DO NOTHING",
            (thread_map[int(rec["thread"])], seq_map[int(rec["sequence_id"])], rec["added_by"], rec["created_at"]),
        )
    else:
        conn.execute(
            "INSERT INTO thread_rejections(thread, sequence_id, rejected_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            (thread_map[int(rec["thread"])], seq_map[int(rec["sequence_id"])], rec["rejected_at"]),
        )


def _import_thread(conn: apsw.Connection, rec: dict[str, Any]) -> int:
    """The target thread of an imported one: a thread of the same name (any case) absorbs it."""
    name = str(rec["name"])
    found: list[tuple[int]] = list(conn.execute("SELECT id FROM threads WHERE name_key = ?", (name_key(name),)))
    if found:
        return found[0][0]
    # `thread_type` is absent from exports made before threads had one: the type is then derived.
    conn.execute(
        "INSERT INTO threads(name, name_key, description, status, created_at, updated_at, type) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            name,
            name_key(name),
            rec["description"],
            rec["status"],
            rec["created_at"],
            rec["updated_at"],
            rec.get("thread_type"),
        ),
    )
    return conn.last_insert_rowid()


def integrity_problems(conn: apsw.Connection) -> list[str]:
    """`PRAGMA integrity_check` and foreign-key check findings (empty when healthy)."""
    problems = [str(r[0]) for r in conn.execute("PRAGMA integrity_check") if r[0] != "ok"]
    problems += [f"foreign key: {r}" for r in conn.execute("PRAGMA foreign_key_check")]
    return problems
