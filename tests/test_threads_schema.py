"""The 0005_threads migration: the shape of the thread tables and how an older store upgrades."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from thoughtline.domain.thread_names import name_key
from thoughtline.storage import migrations
from thoughtline.storage.db import connect


def _store(tmp_path: Path, upto: str | None = None) -> apsw.Connection:
    conn = connect(tmp_path / "s.sqlite3", "wal")
    chosen = migrations.MIGRATIONS
    if upto is not None:
        names = [m.name for m in chosen]
        chosen = chosen[: names.index(upto) + 1]
    migrations.migrate(conn, chosen)
    return conn


def _sequence(conn: apsw.Connection, public_id: str = "seq_" + "a" * 32) -> int:
    conn.execute(
        "INSERT INTO sequences(public_id, title, total_thoughts, last_thought_number, created_at, updated_at) "
        "VALUES (?, 't', 1, 1, 1, 1)",
        (public_id,),
    )
    return conn.last_insert_rowid()


def _thread(conn: apsw.Connection, name: str) -> int:
    conn.execute(
        "INSERT INTO threads(name, name_key, created_at, updated_at) VALUES (?, ?, 1, 1)", (name, name_key(name))
    )
    return conn.last_insert_rowid()


def test_an_older_store_keeps_its_placeholder_threads_and_confirmed_members(tmp_path: Path) -> None:
    conn = _store(tmp_path, upto="0004_search_context")
    seq = _sequence(conn)
    conn.execute("INSERT INTO threads(id, name, created_at) VALUES (7, 'Straße', 5)")
    conn.execute("INSERT INTO thread_members(thread, sequence_id, created_at) VALUES (7, ?, 6)", (seq,))
    assert migrations.migrate(conn) == [m.name for m in migrations.MIGRATIONS][4:]
    got = conn.execute("SELECT id, name, name_key, status, description_version, backfilled_version FROM threads")
    assert list(got) == [(7, "Straße", "strasse", "active", 1, 0)]
    members = conn.execute("SELECT thread, sequence_id, added_by, created_at FROM thread_members")
    assert list(members) == [(7, seq, "agent", 6)]


def test_thread_names_are_unique_under_unicode_casefolding(tmp_path: Path) -> None:
    conn = _store(tmp_path)
    _thread(conn, "Straße")
    with pytest.raises(apsw.ConstraintError):
        _thread(conn, "STRASSE")


def test_a_thought_event_outside_the_nine_kinds_is_refused_by_the_schema(tmp_path: Path) -> None:
    conn = _store(tmp_path)
    seq = _sequence(conn)
    insert = (
        "INSERT INTO thoughts(sequence_id, position, number, total, next_needed, body, created_at, event) "
        "VALUES (?, ?, 1, 1, 1, 'x', 1, ?)"
    )
    conn.execute(insert, (seq, 1, "decision"))
    with pytest.raises(apsw.ConstraintError):
        conn.execute(insert, (seq, 2, "conclusion"))


def test_deleting_a_sequence_removes_its_memberships_proposals_rejections_and_queue_row(tmp_path: Path) -> None:
    conn = _store(tmp_path)
    seq, other = _sequence(conn), _sequence(conn, "seq_" + "b" * 32)
    thread = _thread(conn, "hiring")
    for s in (seq, other):
        conn.execute("INSERT INTO thread_members VALUES (?, ?, 'user', 1)", (thread, s))
        conn.execute(
            "INSERT INTO thread_proposals(thread, sequence_id, similarity, proposed_at) VALUES (?, ?, 0.5, 1)",
            (thread, s),
        )
        conn.execute("INSERT INTO thread_rejections VALUES (?, ?, 1)", (thread, s))
    conn.execute("INSERT INTO thread_match_queue VALUES (?, 1)", (seq,))
    conn.execute("DELETE FROM sequences WHERE id = ?", (seq,))
    assert list(conn.execute("SELECT sequence_id FROM thread_members")) == [(other,)]
    assert list(conn.execute("SELECT sequence_id FROM thread_proposals")) == [(other,)]
    assert list(conn.execute("SELECT sequence_id FROM thread_rejections")) == [(other,)]
    assert list(conn.execute("SELECT sequence_id FROM thread_match_queue")) == []
