"""`thoughtline check` holds a sound store to the rules import holds a record to: rows no tool could
write (and derived columns that went stale) are reported by store, with a non-zero exit."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.import_support import execute, query, run, written_store
from thoughtline.domain.thread_names import name_key

YEAR_2100 = 4_102_444_800_000


def test_a_store_written_by_the_tools_checks_ok(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    written_store(data)
    ran = run(capsys, "check", "--data-dir", str(data))
    assert ran.code == 0, ran.out
    assert ran.out.splitlines()[0].endswith(": ok")


def test_rows_no_tool_could_write_are_each_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    a, b = written_store(data)
    ((branch,),) = query(data, "SELECT id FROM branches")
    bad_name = "x\x00\x1b" * 20
    execute(data, "UPDATE sequences SET thought_count = 9 WHERE public_id = ?", (a,))
    execute(data, "UPDATE sequences SET updated_at = ? WHERE public_id = ?", (YEAR_2100, a))
    execute(
        data,
        "UPDATE thoughts SET branch = ? WHERE sequence_id = (SELECT id FROM sequences WHERE public_id = ?)",
        (branch, b),
    )
    execute(data, "UPDATE threads SET name = ?, name_key = ?", (bad_name, name_key(bad_name)))
    ran = run(capsys, "check", "--data-dir", str(data))
    assert ran.code == 1
    line = ran.out.splitlines()[0]
    assert "4 record(s) no tool could have written" in line
    assert f"sequence {a}: 'updated_at' is in the future" in line
    assert f"thought 1 of sequence {b}: 'branch' must be a branch of the same sequence" in line
    assert "'name' contains U+0000" in line
    assert f"sequence {a}: thought_count is 9, its thoughts say 3" in line
    assert "import it into a new data directory" in line
    assert ran.out.splitlines()[-1] == "1 store(s) checked, 1 with problems"


def test_sequences_whose_parents_form_a_loop_are_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # What sequentialthinking wrote before it refused a parentSequenceId that closes a loop.
    data = tmp_path / "data"
    a, b = written_store(data)
    execute(data, "UPDATE sequences SET parent_public_id = ? WHERE public_id = ?", (b, a))
    execute(data, "UPDATE sequences SET parent_public_id = ? WHERE public_id = ?", (a, b))
    ran = run(capsys, "check", "--data-dir", str(data))
    assert ran.code == 1
    assert "2 record(s) no tool could have written" in ran.out
    for seq in (a, b):
        assert f"sequence {seq}: its 'parent_public_id' chain leads back to itself" in ran.out


def test_a_proposal_counter_past_the_longest_id_the_tools_take_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    written_store(data)
    execute(data, "DELETE FROM sqlite_sequence WHERE name = 'thread_proposals'")
    execute(data, "INSERT INTO sqlite_sequence(name, seq) VALUES ('thread_proposals', ?)", (10**18 - 1,))
    ran = run(capsys, "check", "--data-dir", str(data))
    assert ran.code == 1
    assert "'issued' is 999999999999999999, so the next proposal id would have more than 18 digits" in ran.out


def test_a_thread_whose_lookup_key_went_stale_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    written_store(data)
    execute(data, "UPDATE threads SET name_key = 'something else'")
    ran = run(capsys, "check", "--data-dir", str(data))
    assert ran.code == 1
    assert "thread 'Hiring': its lookup key is stale" in ran.out
