"""`thoughtline check` holds a sound store to the rules import holds a record to: rows no tool could
write (and derived columns that went stale) are reported by store, with a non-zero exit."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.import_support import execute, query, run, written_store
from thoughtline.domain.arguments import ThoughtInput
from thoughtline.domain.thread_names import name_key
from thoughtline.errors import DomainError
from thoughtline.identity import OWNER_KEY
from thoughtline.storage import migrations
from thoughtline.storage.checkup import record_problems
from thoughtline.storage.db import connect
from thoughtline.storage.router import store_path
from thoughtline.storage.thoughts import append_thought, delete_sequence

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


def test_a_fork_or_revision_the_tools_would_resolve_elsewhere_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    a, _ = written_store(data)  # a: main 1, branch alt (its 2, from main's 1), main 3 revising 1
    ((seq,),) = query(data, "SELECT id FROM sequences WHERE public_id = ?", (a,))
    # A main-path revision of alt's thought, invisible from the main path.
    execute(data, "UPDATE thoughts SET revises_number = 2, revises_position = 2 WHERE is_revision = 1")
    revision = run(capsys, "check", "--data-dir", str(data))
    execute(data, "UPDATE thoughts SET revises_number = 1, revises_position = 1 WHERE is_revision = 1")
    # A second branch that says it forks from the main path, at alt's thought.
    execute(
        data,
        "INSERT INTO branches(sequence_id, name, parent_branch, from_thought, fork_position, created_at) "
        "VALUES (?1, 'b2', NULL, 2, 2, (SELECT created_at FROM sequences WHERE id = ?1))",
        (seq,),
    )
    fork = run(capsys, "check", "--data-dir", str(data))
    assert revision.code == fork.code == 1
    assert "1 record(s) no tool could have written" in revision.out
    assert f"thought 3 of sequence {a}: revises thought 2 at position 2, but from the main path thought 2" in (
        revision.out
    )
    assert "1 record(s) no tool could have written" in fork.out
    assert f"branch 'b2' of sequence {a}: forks from thought 2 at position 2, which is on branch 'alt', but its " in (
        fork.out
    )


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


# One call of a sequence: (number, branch, fork from number, fork from branch, revises number);
# most are refused by the tools, and the accepted ones cover nested forks, reused numbers and
# revisions through ancestors.
_BRANCHES = st.sampled_from([None, "a", "b", "c"])
_NUMBERS = st.integers(1, 4)
_CALLS = st.lists(
    st.tuples(_NUMBERS, _BRANCHES, st.none() | _NUMBERS, _BRANCHES, st.none() | _NUMBERS), min_size=1, max_size=25
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(calls=_CALLS)
def test_every_fork_and_revision_the_tools_write_passes_the_import_rules(
    tmp_path: Path, calls: list[tuple[int, str | None, int | None, str | None, int | None]]
) -> None:
    conn = connect(Path(tempfile.mkdtemp(dir=tmp_path)) / "s.sqlite3", "wal")  # one store per example
    migrations.migrate(conn)
    sequence_id = "seq_" + "a" * 32
    first = ThoughtInput(thought="first", next_thought_needed=True, thought_number=1, total_thoughts=4)
    append_thought(conn, first, 1_000, sequence_id)
    for number, branch, fork, fork_branch, revises in calls:
        call = ThoughtInput(
            thought=f"thought {number}",
            next_thought_needed=True,
            thought_number=number,
            total_thoughts=4,
            sequence_id=sequence_id,
            branch_id=branch,
            branch_from_thought=fork if branch is not None else None,
            branch_from_branch_id=fork_branch if branch is not None and fork is not None else None,
            is_revision=True if revises is not None else None,
            revises_thought=revises,
        )
        conn.execute("SAVEPOINT call")
        try:
            append_thought(conn, call, 2_000, "seq_" + "b" * 32)
        except DomainError:
            conn.execute("ROLLBACK TO call")
        conn.execute("RELEASE call")
    try:
        assert record_problems(conn, 10_000) == []
    finally:
        conn.close()


def test_a_sub_agent_whose_parent_was_deleted_checks_ok_and_round_trips(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Deleting a parent keeps its sub-agents' links (set once, SPEC §5.2): check and import accept them.
    data = tmp_path / "data"
    a, b = written_store(data)
    execute(data, "UPDATE sequences SET parent_public_id = ? WHERE public_id = ?", (a, b))
    conn = connect(store_path(data, OWNER_KEY), "wal")
    try:
        with conn:
            assert delete_sequence(conn, a) == 3
    finally:
        conn.close()
    assert run(capsys, "check", "--data-dir", str(data)).code == 0
    out = tmp_path / "export.jsonl"
    assert run(capsys, "export", "--data-dir", str(data), "-o", str(out)).code == 0
    other = tmp_path / "other"
    imported = run(capsys, "import", "--data-dir", str(other), str(out))
    assert imported.code == 0, imported.out + imported.err
    assert query(other, "SELECT parent_public_id FROM sequences WHERE public_id = ?", (b,)) == [(a,)]
    assert run(capsys, "check", "--data-dir", str(other)).code == 0
