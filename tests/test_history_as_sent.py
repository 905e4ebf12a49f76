"""History returns every argument as the caller sent it (SPEC §2.2), for new and upgraded stores."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support import ThreadServer, mcp_client, structured
from thoughtline.storage import migrations
from thoughtline.storage.db import connect, write_transaction
from thoughtline.storage.history import history_rows

pytestmark = pytest.mark.anyio


def args(seq: str | None, n: int, body: str, **extra: Any) -> dict[str, Any]:
    sent: dict[str, Any] = {"thought": body, "thoughtNumber": n, "totalThoughts": 5, "nextThoughtNeeded": True}
    if seq:
        sent["sequenceId"] = seq
    return {**sent, **extra}


async def test_a_branch_first_thought_carries_its_fork_arguments_as_sent_and_a_revision_its_target(
    server: ThreadServer,
) -> None:
    async with mcp_client(server.base_url) as client:
        first = await client.call_tool("sequentialthinking", args(None, 1, "main one"))
        seq = structured(first)["sequenceId"]
        for sent in (
            args(seq, 2, "main two"),
            args(seq, 2, "alt two", branchId="alt", branchFromThought=1),
            args(seq, 3, "alt three", branchId="alt"),
            # alt has no thought 1 of its own: the fork is stored on the main path's thought 1.
            args(seq, 2, "deep two", branchId="deep", branchFromThought=1, branchFromBranchId="alt"),
            args(seq, 4, "main four", isRevision=True, revisesThought=1),
        ):
            structured(await client.call_tool("sequentialthinking", sent))
        page = structured(await client.call_tool("get_thought_history", {"sequenceId": seq}))
    by_body = {t["thought"]: t for t in page["thoughts"]}
    assert by_body["alt two"]["branchFromThought"] == 1
    assert "branchFromBranchId" not in by_body["alt two"]
    assert "branchFromThought" not in by_body["alt three"]
    assert by_body["deep two"]["branchFromThought"] == 1
    assert by_body["deep two"]["branchFromBranchId"] == "alt"
    assert by_body["main four"]["isRevision"] is True
    assert by_body["main four"]["revisesThought"] == 1
    assert "branchFromThought" not in by_body["main two"]
    deep = next(b for b in page["sequence"]["branches"] if b["branchId"] == "deep")
    assert deep["parentBranchId"] is None  # the header shows where the fork really sits


async def test_booleans_sent_as_false_come_back_false_and_unsent_ones_stay_absent(server: ThreadServer) -> None:
    async with mcp_client(server.base_url) as client:
        first = await client.call_tool("sequentialthinking", args(None, 1, "sent false", isRevision="false"))
        seq = structured(first)["sequenceId"]
        structured(await client.call_tool("sequentialthinking", args(seq, 2, "sent", needsMoreThoughts=False)))
        structured(await client.call_tool("sequentialthinking", args(seq, 3, "nothing extra")))
        page = structured(await client.call_tool("get_thought_history", {"sequenceId": seq}))
    by_body = {t["thought"]: t for t in page["thoughts"]}
    assert by_body["sent false"]["isRevision"] is False
    assert "revisesThought" not in by_body["sent false"]
    assert by_body["sent"]["needsMoreThoughts"] is False
    assert "isRevision" not in by_body["sent"]
    assert not {"isRevision", "needsMoreThoughts"} & set(by_body["nothing extra"])


def test_upgrading_a_store_fills_in_each_branch_first_thought_fork_number(tmp_path: Path) -> None:
    conn = connect(tmp_path / "old.sqlite3", "wal")
    migrations.migrate(conn, migrations.MIGRATIONS[:4])  # as released before 0006_sequence_origin
    with write_transaction(conn):
        conn.execute(
            "INSERT INTO sequences(id, public_id, title, total_thoughts, last_thought_number, thought_count, "
            "created_at, updated_at) VALUES (1, 'seq_" + "a" * 32 + "', 't', 3, 3, 3, 0, 0)"
        )
        conn.execute(
            "INSERT INTO branches(id, sequence_id, name, from_thought, fork_position, created_at) "
            "VALUES (7, 1, 'alt', 1, 1, 0)"
        )
        for position, branch in ((1, None), (2, 7), (3, 7)):
            conn.execute(
                "INSERT INTO thoughts(sequence_id, position, branch, number, total, next_needed, body, created_at) "
                "VALUES (1, ?, ?, ?, 3, 1, 'x', 0)",
                (position, branch, position),
            )
    migrations.migrate(conn)
    conn.execute("BEGIN")
    found = history_rows(conn, 1, True, None, "asc", 10)
    conn.execute("COMMIT")
    conn.close()
    assert [r.branch_from_thought for r in found] == [None, 1, None]
