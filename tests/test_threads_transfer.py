"""Export/import carry threads, memberships, events and rejected proposals (SPEC §5.3)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support import TOKEN
from tests.thread_support import MovableClock, Served, call, connected, create, served, think
from thoughtline.config import Settings

pytestmark = pytest.mark.anyio

# Import moves times after its own clock's now to now, so the stores here live in the past.
PAST = 1_700_000_000.0


def cli(*args: str, data: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("THOUGHTLINE_", "MCP_API_TOKEN"))}
    return subprocess.run(
        [sys.executable, "-m", "thoughtline", *args],
        capture_output=True,
        text=True,
        env={**clean, "THOUGHTLINE_DATA_DIR": str(data)},
        input=stdin,
        timeout=120,
        check=False,
    )


async def snapshot(app: Served, seqs: list[str]) -> dict[str, Any]:
    async with connected(app) as client:
        listed = await call(client, "configure_thread", action="list", includeArchived=True)
        briefs = {t["name"]: await call(client, "thread_briefing", name=t["name"]) for t in listed["threads"]}
        histories = [await call(client, "get_thought_history", sequenceId=s) for s in seqs]
    for thread in listed["threads"]:
        thread.pop("pendingProposals")  # proposals are matched again, not carried
    return {"threads": listed["threads"], "briefings": briefs, "histories": histories}


async def test_export_then_import_carries_threads_members_events_and_rejections(tmp_path: Path) -> None:
    source = Settings(data_dir=tmp_path / "source", api_token=TOKEN)
    with served(source, MovableClock(PAST)) as app:
        async with connected(app) as client:
            await create(client, "Postgres", "Move billing to Postgres 16.")
            await create(client, "Hiring")
            await create(client, "Old")
            a = await think(client, "Plan the move", threads=["Postgres", "Hiring"])
            await think(client, "Disk quota blocks us", 2, sequenceId=a, event="blocker")
            await think(client, "Use logical replication", 3, sequenceId=a, event="decision")
            b = await think(client, "Interview loop")
            await call(client, "configure_thread", action="pin", name="Hiring", sequenceId=b)
            await think(client, "Hire two", 2, sequenceId=b, done=True)
            c = await think(client, "Unrelated")
            await call(client, "configure_thread", action="pin", name="Postgres", sequenceId=c)
            await call(client, "configure_thread", action="unpin", name="Postgres", sequenceId=c)
            await call(client, "configure_thread", action="archive", name="Old")
        app.execute(
            "INSERT INTO thread_proposals(thread, sequence_id, similarity, proposed_at) "
            "SELECT t.id, s.id, 0.9, 1 FROM threads t, sequences s WHERE t.name = 'Old'"
        )
        before = await snapshot(app, [a, b, c])
        rejected = app.query(
            "SELECT t.name, s.public_id FROM thread_rejections r JOIN threads t ON t.id = r.thread "
            "JOIN sequences s ON s.id = r.sequence_id"
        )
    exported = cli("export", data=source.data_dir)
    assert exported.returncode == 0, exported.stderr
    kinds = [json.loads(line)["type"] for line in exported.stdout.splitlines()]
    assert (kinds.count("thread"), kinds.count("thread_member"), kinds.count("thread_rejection")) == (3, 3, 1)
    target = Settings(data_dir=tmp_path / "target", api_token=TOKEN)
    imported = cli("import", "-", data=target.data_dir, stdin=exported.stdout)
    assert imported.returncode == 0, imported.stderr
    assert "3 threads" in imported.stdout
    with served(target, MovableClock(PAST)) as copy:
        after = await snapshot(copy, [a, b, c])
        copied_rejections = copy.query(
            "SELECT t.name, s.public_id FROM thread_rejections r JOIN threads t ON t.id = r.thread "
            "JOIN sequences s ON s.id = r.sequence_id"
        )
        backfill = copy.query("SELECT name, backfilled_version < description_version FROM threads ORDER BY name")
    assert after == before
    assert before["briefings"]["Postgres"]["openBlockers"][0]["text"] == "Disk quota blocks us"
    assert copied_rejections == rejected == [("Postgres", c)]
    assert backfill == [("Hiring", 1), ("Old", 1), ("Postgres", 1)]


async def test_an_imported_thread_merges_into_a_same_named_thread_of_the_target(tmp_path: Path) -> None:
    source = Settings(data_dir=tmp_path / "source", api_token=TOKEN)
    with served(source) as app:
        async with connected(app) as client:
            await create(client, "Postgres", "From the laptop.")
            seq = await think(client, "Plan", threads=["Postgres"])
    exported = cli("export", data=source.data_dir).stdout
    target = Settings(data_dir=tmp_path / "target", api_token=TOKEN)
    with served(target) as app:
        async with connected(app) as client:
            await create(client, "POSTGRES", "From the server.")
    imported = cli("import", "-", data=target.data_dir, stdin=exported)
    assert imported.returncode == 0
    assert "1 thread (1 merged into threads of the same name)" in imported.stdout, imported.stdout
    with served(target) as app:
        async with connected(app) as client:
            listed = await call(client, "configure_thread", action="list")
            brief = await call(client, "thread_briefing", name="postgres")
    assert [(t["name"], t["description"], t["memberCount"]) for t in listed["threads"]] == [
        ("POSTGRES", "From the server.", 1)
    ]
    assert [m["sequenceId"] for m in brief["members"]] == [seq]
