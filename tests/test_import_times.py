"""Times run forward in write order: `thoughtline import` moves a time that runs backwards forward to
the time it follows (as it moves a future time to now), refuses a fork source no tool could name, and
`thoughtline check` reports a store whose times run backwards by more than a clock's skew."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.import_support import execute, query, read_lines, run, step, write_lines, written_store
from tests.support import TOKEN, mcp_client, serve_in_thread, structured
from thoughtline.cli import main
from thoughtline.config import Settings
from thoughtline.web.app import create_app

Records = list[dict[str, Any]]
HOUR = 3_600_000


async def _blocked_then_cleared(settings: Settings) -> None:
    with serve_in_thread(create_app(settings)) as running:
        async with mcp_client(running.base_url) as client:

            async def tool(name: str, args: dict[str, Any]) -> dict[str, Any]:
                return structured(await client.call_tool(name, args))

            await tool("configure_thread", {"action": "create", "name": "tt", "description": "time order"})
            first = step(1, "Deploy blocked: staging cluster is down", threads=["tt"], event="blocker")
            seq = (await tool("sequentialthinking", first))["sequenceId"]
            cleared = step(2, "Staging is back, deploy unblocked", seq, event="blocker_cleared")
            await tool("sequentialthinking", cleared)


async def _briefing(settings: Settings) -> dict[str, Any]:
    with serve_in_thread(create_app(settings)) as running:
        async with mcp_client(running.base_url) as client:
            return structured(await client.call_tool("thread_briefing", {"name": "tt"}))


def _export(capsys: pytest.CaptureFixture[str], data: Path, out: Path) -> Records:
    assert run(capsys, "export", "--data-dir", str(data), "-o", str(out)).code == 0
    return read_lines(out)


def _import(capsys: pytest.CaptureFixture[str], tmp_path: Path, records: Records) -> Path:
    data = tmp_path / "target"
    ran = run(capsys, "import", "--data-dir", str(data), str(write_lines(tmp_path / "edited.jsonl", records)))
    assert ran.code == 0, ran.err
    checked = run(capsys, "check", "--data-dir", str(data))
    assert checked.code == 0, checked.out
    return data


def _of(records: Records, kind: str, **match: Any) -> dict[str, Any]:
    return next(r for r in records if r["type"] == kind and all(r.get(k) == v for k, v in match.items()))


def test_a_cleared_blocker_dated_before_its_blocker_is_moved_after_it_so_the_thread_stays_unblocked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "source"
    anyio.run(_blocked_then_cleared, Settings(data_dir=source, api_token=TOKEN))
    records = _export(capsys, source, tmp_path / "export.jsonl")
    blocker, cleared = _of(records, "thought", position=1), _of(records, "thought", position=2)
    cleared["created_at"] = blocker["created_at"] - 60_000  # still a past time: only its order is wrong
    data = _import(capsys, tmp_path, records)
    assert query(data, "SELECT created_at FROM thoughts ORDER BY position") == [(blocker["created_at"],)] * 2
    brief = anyio.run(_briefing, Settings(data_dir=data, api_token=TOKEN))
    assert brief["openBlockers"] == []
    assert brief["thread"]["state"] != "blocked"


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> Records:
    base = tmp_path_factory.mktemp("source")
    written_store(base / "data")  # a: main 1, branch alt, main 3; b: 1 (pinned, then unpinned); thread Hiring
    out = base / "export.jsonl"
    assert main(["export", "--data-dir", str(base / "data"), "-o", str(out)]) == 0
    return read_lines(out)


@pytest.mark.parametrize(
    ("edit", "column", "expected"),
    [
        # A thought older than the thought before it: moved to that thought's time.
        ("thought_before_previous", "SELECT max(created_at) - min(created_at) FROM thoughts WHERE position <= 2 "
         "AND sequence_id = (SELECT sequence_id FROM thoughts WHERE position = 2)", 0),
        # A sequence created after its first thought: the thought moves to the sequence's time.
        ("sequence_after_thought", "SELECT count(*) FROM thoughts t JOIN sequences s ON s.id = t.sequence_id "
         "WHERE t.created_at < s.created_at", 0),
        # updated_at before created_at, for a sequence and a thread.
        ("sequence_updated_early", "SELECT count(*) FROM sequences WHERE updated_at < created_at", 0),
        ("thread_updated_early", "SELECT count(*) FROM threads WHERE updated_at < created_at", 0),
        # A membership and a rejection of 1970, before their thread and sequence existed.
        ("member_in_1970", "SELECT count(*) FROM thread_members m JOIN threads t ON t.id = m.thread "
         "JOIN sequences s ON s.id = m.sequence_id WHERE m.created_at < max(t.created_at, s.created_at)", 0),
        ("rejection_in_1970", "SELECT count(*) FROM thread_rejections r JOIN threads t ON t.id = r.thread "
         "JOIN sequences s ON s.id = r.sequence_id WHERE r.rejected_at < max(t.created_at, s.created_at)", 0),
    ],
)  # fmt: skip
def test_a_time_that_runs_backwards_is_moved_forward_to_the_time_it_follows(
    export: Records, tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: str, column: str, expected: int
) -> None:
    records = [dict(r) for r in export]
    if edit == "thought_before_previous":
        _of(records, "thought", position=2)["created_at"] -= HOUR
    elif edit == "sequence_after_thought":
        _of(records, "sequence", id=_of(records, "thought", position=1)["sequence_id"])["created_at"] += HOUR
    elif edit == "sequence_updated_early":
        seq = _of(records, "sequence")
        seq["updated_at"] = seq["created_at"] - HOUR
    elif edit == "thread_updated_early":
        thread = _of(records, "thread")
        thread["updated_at"] = thread["created_at"] - HOUR
    elif edit == "member_in_1970":
        _of(records, "thread_member")["created_at"] = 1
    else:
        _of(records, "thread_rejection")["rejected_at"] = 1
    data = _import(capsys, tmp_path, records)  # imported, and the store passes check
    assert query(data, column) == [(expected,)]


def test_a_fork_source_its_sequence_does_not_hold_is_refused_naming_its_line(
    export: Records, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # sequentialthinking refuses such a branchFromBranchId, so no version wrote one: nothing to move it to.
    records = [dict(r) for r in export]
    forked = _of(records, "thought", position=2)  # alt's first thought, sent with branchFromThought 1
    forked["sent_branch_from_branch_id"] = "nope"
    data = tmp_path / "target"
    ran = run(capsys, "import", "--data-dir", str(data), str(write_lines(tmp_path / "edited.jsonl", records)))
    assert ran.code == 1
    assert ran.err.startswith("error: "), ran.err
    assert f" line {records.index(forked) + 1}: thought 2 of sequence " in ran.err
    assert "'sent_branch_from_branch_id' names branch 'nope', which its sequence does not hold" in ran.err
    assert ran.err.count("\n") == 1
    assert not (data / "stores").exists()


def test_a_store_whose_times_run_backwards_is_reported_by_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    a, b = written_store(data)
    execute(
        data,
        "UPDATE thoughts SET created_at = created_at - ? WHERE position = 3 AND sequence_id = "
        "(SELECT id FROM sequences WHERE public_id = ?)",
        (HOUR, a),
    )
    execute(
        data,
        "UPDATE thoughts SET sent_branch_from_branch_id = 'nope' WHERE position = 2 AND sequence_id = "
        "(SELECT id FROM sequences WHERE public_id = ?)",
        (a,),
    )
    execute(
        data,
        "UPDATE thoughts SET created_at = created_at - ? WHERE sequence_id = "
        "(SELECT id FROM sequences WHERE public_id = ?)",
        (HOUR, b),
    )
    execute(data, "UPDATE thread_rejections SET rejected_at = 1")
    execute(data, "UPDATE threads SET updated_at = created_at - ?", (HOUR,))
    ran = run(capsys, "check", "--data-dir", str(data))
    assert ran.code == 1
    line = ran.out.splitlines()[0]
    assert "5 record(s) no tool could have written" in line
    assert f"thought 3 of sequence {a}: 'created_at'" in line
    assert "ms before the thought before it" in line
    assert f"thought 2 of sequence {a}: 'sent_branch_from_branch_id' names branch 'nope'" in line
    assert "thread 'Hiring': 'updated_at'" in line
    assert "ms before its 'created_at'" in line
    assert f"thought 1 of sequence {b}: 'created_at'" in line
    assert "before its sequence's 'created_at'" in line
    assert "thread_rejection record: 'rejected_at' (1 ms since 1970)" in line


def test_check_passes_times_a_clock_stepped_back_a_little(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # An NTP step of a few seconds between two writes is not damage; import would move it forward.
    data = tmp_path / "data"
    written_store(data)
    execute(data, "UPDATE thoughts SET created_at = created_at - 5000 WHERE position = 3")
    execute(data, "UPDATE thread_members SET created_at = (SELECT created_at - 5000 FROM threads)")
    ran = run(capsys, "check", "--data-dir", str(data))
    assert ran.code == 0, ran.out


def test_a_thread_merged_into_a_younger_one_of_the_same_name_keeps_its_members_after_it(
    export: Records, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The same export as written an hour earlier: its members predate the target's thread Hiring.
    older = [{k: v - HOUR if k.endswith("_at") else v for k, v in rec.items()} for rec in export]
    data = tmp_path / "target"
    written_store(data)
    ran = run(capsys, "import", "--data-dir", str(data), str(write_lines(tmp_path / "x.jsonl", older)))
    assert ran.code == 0, ran.err
    assert query(data, "SELECT created_at FROM threads") == [(_of(older, "thread")["created_at"],)]
    checked = run(capsys, "check", "--data-dir", str(data))
    assert checked.code == 0, checked.out


def test_a_sequence_updated_before_it_was_created_or_before_its_newest_thought_is_reported_by_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    a, _ = written_store(data)
    execute(data, "UPDATE sequences SET updated_at = created_at - ? WHERE public_id = ?", (HOUR, a))
    ran = run(capsys, "check", "--data-dir", str(data))
    assert ran.code == 1
    assert "2 record(s) no tool could have written" in ran.out
    assert f"sequence {a}: 'updated_at'" in ran.out
    assert "ms before its 'created_at'" in ran.out
    assert "is before its newest thought" in ran.out
