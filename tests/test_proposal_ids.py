"""A decided proposal id stays decided: no later proposal is ever given the same id (after an accept,
a reject, a schema upgrade, or an export and import), so a retried decision finds nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest
from mcp import Client

from tests.sample_notes import DRIP, HOSE
from tests.thread_support import Served, call, connected, create, refused, served, write_sequence
from thoughtline.config import Settings
from thoughtline.domain.arguments import MAX_PROPOSAL_ID
from thoughtline.library.embed import MiniLMEmbedder
from thoughtline.storage import migrations, transfer
from thoughtline.storage.key_migrations import PROPOSAL_ID_JUMP
from thoughtline.storage.proposals import issued_proposal_ids, record_proposals

pytestmark = pytest.mark.anyio

GARDEN = ("Garden irrigation", "The drip irrigation line and the garden hose leak; tracking the hunt and the repairs.")


@pytest.fixture
def app(settings: Settings, embedder: MiniLMEmbedder) -> Iterator[Served]:
    with served(settings, embedder_factory=lambda: embedder) as running:
        yield running


async def pending(client: Client) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = (await call(client, "review_proposals", action="list"))["proposals"]
    return listed


@pytest.mark.parametrize("decision", ["accept", "reject"])
async def test_a_retried_decision_never_acts_on_a_proposal_made_after_it(app: Served, decision: str) -> None:
    async with connected(app) as client:
        await create(client, *GARDEN)
        await write_sequence(client, HOSE)
        (first,) = await pending(client)
        await call(client, "review_proposals", action=decision, proposalId=first["proposalId"])
        drip = await write_sequence(client, DRIP)
        (second,) = await pending(client)
        retried = await refused(client, "review_proposals", action=decision, proposalId=first["proposalId"])
        left = await pending(client)
        brief = await call(client, "thread_briefing", name=GARDEN[0])
    assert second["sequenceId"] == drip
    assert second["proposalId"] != first["proposalId"]
    assert retried[0] == "proposal_not_found"
    assert left == [second]  # neither confirmed nor suppressed by the stale id
    assert drip not in [m["sequenceId"] for m in brief["members"]]


async def test_the_last_id_the_tools_take_is_issued_and_reviewable_and_none_is_issued_past_it(app: Served) -> None:
    async with connected(app) as client:
        await create(client, *GARDEN)
        # A store whose counter was carried this far (an import of a file that allowed it).
        app.execute("INSERT INTO sqlite_sequence(name, seq) VALUES ('thread_proposals', ?)", (MAX_PROPOSAL_ID - 1,))
        await write_sequence(client, HOSE)
        (last,) = await pending(client)
        decided = await call(client, "review_proposals", action="accept", proposalId=last["proposalId"])
        await write_sequence(client, DRIP)
        after = await pending(client)
    assert last["proposalId"] == f"prp_{MAX_PROPOSAL_ID}"
    assert decided["proposalId"] == last["proposalId"]
    assert after == []  # prp_1000000000000000000 could be listed but never reviewed: it is not issued


def _store(path: Path, upto: int | None = None) -> apsw.Connection:
    conn = apsw.Connection(str(path))
    conn.execute("PRAGMA foreign_keys = ON")
    migrations.migrate(conn, migrations.MIGRATIONS if upto is None else migrations.MIGRATIONS[:upto])
    return conn


def _pairs(conn: apsw.Connection, count: int) -> list[tuple[int, int, float, int, int]]:
    """`count` sequences (one thought each) and one thread to propose them to."""
    conn.execute("INSERT INTO threads(name, name_key, created_at, updated_at) VALUES ('t', 't', 1, 1)")
    picks = []
    for n in range(count):
        conn.execute(
            "INSERT INTO sequences(public_id, title, total_thoughts, last_thought_number, thought_count, created_at, "
            "updated_at) VALUES (?, 's', 1, 1, 1, 1, 1)",
            (f"seq_{n:032x}",),
        )
        seq = conn.last_insert_rowid()
        conn.execute(
            "INSERT INTO thoughts(sequence_id, position, number, total, next_needed, body, created_at) "
            "VALUES (?, 1, 1, 1, 0, 'a thought', 1)",
            (seq,),
        )
        picks.append((1, seq, 0.9, 0, 1))
    return picks


def test_an_upgraded_store_issues_ids_above_any_it_could_have_issued_before(tmp_path: Path) -> None:
    upto = next(i for i, m in enumerate(migrations.MIGRATIONS) if m.name.endswith("_proposal_ids_never_reused"))
    conn = _store(tmp_path / "old.db", upto)
    picks = _pairs(conn, 3)
    record_proposals(conn, picks[:2])  # ids 1 and 2 under the old plain key
    conn.execute("DELETE FROM thread_proposals WHERE id = 2")  # decided: the old key would issue 2 again
    migrations.migrate(conn)
    record_proposals(conn, picks[2:])
    ids = [row[0] for row in conn.execute("SELECT id FROM thread_proposals ORDER BY id")]
    conn.close()
    assert ids == [1, 1 + PROPOSAL_ID_JUMP + 1]


def test_a_new_store_starts_at_one_and_never_reuses_a_decided_id(tmp_path: Path) -> None:
    conn = _store(tmp_path / "new.db")
    picks = _pairs(conn, 2)
    record_proposals(conn, picks[:1])
    conn.execute("DELETE FROM thread_proposals")
    record_proposals(conn, picks[1:])
    ids = [row[0] for row in conn.execute("SELECT id FROM thread_proposals")]
    conn.close()
    assert ids == [2]


def test_ids_issued_before_an_export_are_never_issued_by_the_store_it_is_imported_into(tmp_path: Path) -> None:
    source = _store(tmp_path / "source.db")
    picks = _pairs(source, 3)
    record_proposals(source, picks)
    source.execute("DELETE FROM thread_proposals")  # all three decided
    exported = list(transfer.iter_export(source))
    source.close()
    assert exported[-1] == {"type": "proposal_ids", "issued": 3}
    target = _store(tmp_path / "target.db")
    transfer.import_records(target, enumerate(exported, start=1), now_ms=10)
    (thread,) = (row[0] for row in target.execute("SELECT id FROM threads"))
    seq = next(row[0] for row in target.execute("SELECT id FROM sequences ORDER BY id"))
    record_proposals(target, [(thread, seq, 0.9, 0, 1)])
    ids = [row[0] for row in target.execute("SELECT id FROM thread_proposals")]
    issued = issued_proposal_ids(target)
    target.close()
    assert ids == [4]
    assert issued == 4
