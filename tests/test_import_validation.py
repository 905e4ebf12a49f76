"""`thoughtline import` holds every record to the tools' own rules: a hand-edited export that plants
what no tool could write is refused whole, with one `error:` line naming its line, and writes nothing;
derived columns are recomputed and times from the future are moved to now."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.import_support import Ran, query, read_lines, run, step, write_lines, written_store
from tests.support import TOKEN, mcp_client, serve_in_thread, structured
from thoughtline.cli import main
from thoughtline.config import Settings
from thoughtline.web.app import create_app

Records = list[dict[str, Any]]


@dataclass(frozen=True)
class Export:
    """A real store's export and the ids in it."""

    records: Records
    a: str
    b: str


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> Export:
    base = tmp_path_factory.mktemp("source")
    a, b = written_store(base / "data")
    out = base / "export.jsonl"
    assert main(["export", "--data-dir", str(base / "data"), "-o", str(out)]) == 0
    return Export(read_lines(out), a, b)


def first(records: Records, kind: str, **match: Any) -> tuple[int, dict[str, Any]]:
    """(line number, record) of the first record of `kind` whose fields match."""
    for line, rec in enumerate(records, start=1):
        if rec["type"] == kind and all(rec.get(k) == v for k, v in match.items()):
            return line, rec
    raise AssertionError(f"no {kind} record matching {match}")


def refused_import(capsys: pytest.CaptureFixture[str], tmp_path: Path, records: Records, *phrases: str) -> Ran:
    data = tmp_path / "target"
    ran = run(capsys, "import", "--data-dir", str(data), str(write_lines(tmp_path / "edited.jsonl", records)))
    assert ran.code == 1, ran.out
    assert ran.err.startswith("error: "), ran.err
    assert ran.err.count("\n") == 1, ran.err  # one line
    assert "Traceback" not in ran.err
    assert "Nothing was imported" in ran.err
    for phrase in phrases:
        assert phrase in ran.err, ran.err
    assert not (data / "stores").exists()  # refused before any store was created
    return ran


def edited(export: Export, kind: str, change: Callable[[dict[str, Any]], None], **match: Any) -> tuple[int, Records]:
    records = [dict(r) for r in export.records]
    line, rec = first(records, kind, **match)
    change(rec)
    return line, records


def test_an_unedited_export_imports_whole(export: Export, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "target"
    ran = run(capsys, "import", "--data-dir", str(data), str(write_lines(tmp_path / "x.jsonl", export.records)))
    assert ran.code == 0, ran.err
    assert ran.out.startswith("imported 2 sequences, 1 branch, 4 thoughts, 1 thread")
    assert query(data, "SELECT count(*) FROM thread_rejections") == [(1,)]


def test_an_export_imports_into_a_store_that_already_holds_other_sequences(
    export: Export, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "target"
    written_store(data)  # its own rows take the ids the export's rows had in their store
    ran = run(capsys, "import", "--data-dir", str(data), str(write_lines(tmp_path / "x.jsonl", export.records)))
    assert ran.code == 0, ran.err
    public = {seq for (seq,) in query(data, "SELECT public_id FROM sequences")}
    assert {export.a, export.b} < public
    assert len(public) == 4
    # Each imported thought and branch hangs off its own sequence, not the store's older one.
    assert query(
        data,
        "SELECT count(*) FROM thoughts t JOIN sequences s ON s.id = t.sequence_id WHERE s.public_id IN (?, ?)",
        (export.a, export.b),
    ) == [(4,)]
    assert query(
        data,
        "SELECT count(*) FROM branches b JOIN sequences s ON s.id = b.sequence_id WHERE s.public_id = ?",
        (export.a,),
    ) == [(1,)]


@pytest.mark.parametrize(
    ("kind", "match", "field", "value", "phrases"),
    [
        ("sequence", {}, "public_id", "seq_NOT-OURS", ("'public_id' must be seq_",)),
        ("sequence", {}, "public_id", "my-own-id", ("'public_id' must be seq_",)),
        ("sequence", {}, "status", "deleted", ("'status' must be one of",)),
        ("thread", {}, "name", "x\x00\x1b" * 104, ("'name' is 312 characters",)),
        ("thread", {}, "name", "hi\u200bring", ("U+200B",)),
        ("thought", {"position": 1}, "body", "x" * 5_000_000, ("'body' is 5,000,000 characters", "20,000")),
        ("thought", {"position": 1}, "body", "   ", ("'body' is empty",)),
        ("thought", {"position": 1}, "body", "half a pair \ud800", ("lone UTF-16 surrogate",)),
        ("thought", {"position": 1}, "number", 1_000_001, ("'number' is 1000001, outside 1-1000000",)),
        ("thought", {"position": 1}, "number", 1.5, ("'number' must be a whole number",)),
        ("thought", {"position": 1}, "number", True, ("'number' must be a whole number",)),
        ("thought", {"position": 1}, "number", 10**400, ("outside 1-1000000",)),
        ("thought", {"position": 1}, "total", "3", ("'total' must be a whole number",)),
        ("thought", {"position": 2}, "position", 7, ("positions run 1, 2, 3",)),
        ("thought", {"position": 1}, "event", "conclusion", ("'event' must be one of",)),
        ("thought", {"position": 1}, "created_at", -5, ("'created_at' must be a time",)),
        ("branch", {}, "name", "main", ("'name' must be a branch id",)),
        ("branch", {}, "from_thought", 2, ("forks from thought 2 at position 1, which its sequence does not hold",)),
        ("thread_member", {}, "added_by", "root", ("'added_by' must be one of",)),
        ("proposal_ids", {}, "issued", 10**18 - 1, ("'issued' is 999999999999999999", "more than 18 digits")),
        ("proposal_ids", {}, "issued", 2**62, ("more than 18 digits", "use at most 999999999999999998")),
    ],
)
def test_a_record_no_tool_could_write_is_refused_naming_its_line(
    export: Export,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    kind: str,
    match: dict[str, Any],
    field: str,
    value: Any,
    phrases: tuple[str, ...],
) -> None:
    line, records = edited(export, kind, lambda rec: rec.__setitem__(field, value), **match)
    ran = refused_import(capsys, tmp_path, records, *phrases)
    assert f"line {line}: " in ran.err
    assert "x" * 100 not in ran.err  # never the text itself


def test_a_thought_on_another_sequences_branch_is_refused(
    export: Export, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # B's only thought claims A's branch: deleting A would have deleted it with the branch.
    seq_b = first(export.records, "sequence", public_id=export.b)[1]["id"]
    branch = first(export.records, "branch")[1]["id"]
    line, records = edited(export, "thought", lambda rec: rec.__setitem__("branch", branch), sequence_id=seq_b)
    ran = refused_import(capsys, tmp_path, records, "'branch' must be a branch of the same sequence")
    assert f"line {line}: thought 1 of sequence {export.b}" in ran.err


def _forked(*extra: dict[str, Any], b2_fork: int = 1) -> Records:
    """A sequence: main 1; b1 and b2 both fork from main's thought 1 (b2 at position `b2_fork`)."""
    seq = "seq_" + "1" * 32

    def thought(position: int, number: int, branch: int | None, **more: Any) -> dict[str, Any]:
        return {
            "type": "thought",
            "id": position,
            "sequence_id": 1,
            "position": position,
            "branch": branch,
            "number": number,
            "total": 9,
            "next_needed": 1,
            "body": f"thought at {position}",
            "is_revision": 0,
            "revises_number": None,
            "revises_position": None,
            "created_at": 1_700_000_000_000 + position,
            **more,
        }

    def branch(rowid: int, name: str, fork: int) -> dict[str, Any]:
        return {
            "type": "branch",
            "id": rowid,
            "sequence_id": 1,
            "name": name,
            "parent_branch": None,
            "from_thought": 1,
            "fork_position": fork,
            "created_at": 1_700_000_000_000,
        }

    return [
        {"type": "sequence", "id": 1, "public_id": seq, "status": "active", "created_at": 1, "updated_at": 1},
        branch(1, "b1", 1),
        branch(2, "b2", b2_fork),
        thought(1, 1, None),
        thought(2, 1, 1),
        thought(3, 1, 2),
        *[thought(4 + n, 2, **rec) for n, rec in enumerate(extra)],
        {"type": "proposal_ids", "issued": 0},
    ]


def _revising(branch: int | None, position: int) -> dict[str, Any]:
    return {"branch": branch, "is_revision": 1, "revises_number": 1, "revises_position": position}


@pytest.mark.parametrize(
    ("records", "line", "phrases"),
    [
        # b2 says it forks from the main path, but the thought at its fork position is b1's.
        (
            _forked(b2_fork=2),
            3,
            ("branch 'b2'", "which is on branch 'b1', but its 'parent_branch' is the main path"),
        ),
        # b2 revises b1's thought 1: a sibling's thoughts are invisible from b2 (its own 1 is meant).
        (
            _forked(_revising(2, 2)),
            7,
            ("revises thought 1 at position 2, but from branch 'b2' thought 1 means the thought at position 3",),
        ),
        # The main path revises b2's thought 1: a branch's thoughts are invisible from the main path.
        (
            _forked(_revising(None, 3)),
            7,
            ("revises thought 1 at position 3, but from the main path thought 1 means the thought at position 1",),
        ),
    ],
    ids=["fork-thought-on-another-branch", "revision-of-a-sibling-branch", "main-revises-a-branch"],
)
def test_a_fork_or_revision_the_tools_would_resolve_elsewhere_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], records: Records, line: int, phrases: tuple[str, ...]
) -> None:
    ran = refused_import(capsys, tmp_path, records, f"line {line}: ", *phrases)
    assert "thought at 1" not in ran.err  # never the text itself


def test_forks_and_revisions_as_the_tools_resolve_them_import(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Each branch revises its own thought 1, the main path its own: what the tools would store.
    records = _forked(_revising(2, 3), _revising(1, 2), _revising(None, 1))
    ran = run(capsys, "import", "--data-dir", str(tmp_path / "target"), str(write_lines(tmp_path / "x.jsonl", records)))
    assert ran.code == 0, ran.err
    assert ran.out.startswith("imported 1 sequence, 2 branches, 6 thoughts")


def test_a_revision_of_a_thought_its_sequence_does_not_hold_is_refused(
    export: Export, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line, records = edited(export, "thought", lambda rec: rec.__setitem__("revises_number", 2), is_revision=1)
    refused_import(capsys, tmp_path, records, f"line {line}: ", "is a revision of a thought")


def test_a_record_referring_to_nothing_earlier_is_refused(
    export: Export, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line, records = edited(export, "thread_member", lambda rec: rec.__setitem__("sequence_id", 999))
    refused_import(capsys, tmp_path, records, f"line {line}: ", "not earlier in the file")
    records = [*export.records, {"type": "sequence_v2"}]
    refused_import(capsys, tmp_path, records, f"line {len(records)}: unknown record type")


def test_a_membership_whose_sequence_id_and_public_id_disagree_is_refused(
    export: Export, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Repointing `sequence_id` alone would file the membership under a sequence nobody meant.
    _, member = first(export.records, "thread_member")
    other = next(r for r in export.records if r["type"] == "sequence" and r["id"] != member["sequence_id"])
    line, records = edited(export, "thread_member", lambda rec: rec.__setitem__("sequence_id", other["id"]))
    refused_import(
        capsys,
        tmp_path,
        records,
        f"line {line}: ",
        f"'sequence_public_id' is {member['sequence_public_id']} but sequence record {other['id']}",
        f"is {other['public_id']}; make them name the same sequence",
    )


def test_a_sequence_without_thoughts_is_refused(
    export: Export, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seq_b = first(export.records, "sequence", public_id=export.b)[1]["id"]
    records = [r for r in export.records if not (r["type"] == "thought" and r["sequence_id"] == seq_b)]
    line = first(records, "sequence", public_id=export.b)[0]
    refused_import(capsys, tmp_path, records, f"line {line}: sequence {export.b}: holds no thoughts")


def test_sequences_whose_parents_form_a_loop_are_refused(
    export: Export, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # sequentialthinking refuses a parentSequenceId that makes a sequence its own ancestor.
    def parent(named: str) -> Callable[[dict[str, Any]], None]:
        return lambda rec: rec.__setitem__("parent_public_id", named)

    line_a = first(export.records, "sequence", public_id=export.a)[0]
    _, records = edited(export, "sequence", parent(export.b), public_id=export.a)
    line_b, rec_b = first(records, "sequence", public_id=export.b)
    parent(export.a)(rec_b)
    ran = refused_import(capsys, tmp_path, records, "its own ancestor")
    assert f"line {min(line_a, line_b)}: " in ran.err
    _, records = edited(export, "sequence", parent(export.a), public_id=export.a)
    refused_import(capsys, tmp_path, records, f"line {line_a}: sequence {export.a}: its 'parent_public_id' chain")


def test_a_deeply_nested_line_is_one_error_line_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nested = '{"type": "thought", "body": ' + "[" * 200_000 + "]" * 200_000 + "}"
    path = tmp_path / "nested.jsonl"
    path.write_text('{"type": "proposal_ids", "issued": 0}\n' + nested + "\n")
    data = tmp_path / "target"
    ran = run(capsys, "import", "--data-dir", str(data), str(path))
    assert ran.code == 1
    assert ran.err.startswith("error: "), ran.err
    assert ran.err.count("\n") == 1, ran.err
    assert "line 2 nests arrays or objects too deeply" in ran.err
    assert not data.exists()


def test_a_refused_file_changes_nothing_in_an_existing_store(
    export: Export, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "target"
    written_store(data)
    before = query(data, "SELECT (SELECT count(*) FROM sequences), (SELECT count(*) FROM thoughts)")
    # A whole, valid export of other sequences, except that its last record is bad.
    records = [r for r in export.records if r["type"] in ("sequence", "branch", "thought")]
    fresh = {r["public_id"]: "seq_" + f"{n:032x}" for n, r in enumerate(records) if r["type"] == "sequence"}
    records = [{**r, "public_id": fresh[r["public_id"]]} if r["type"] == "sequence" else r for r in records]
    records.append({**records[-1], "id": 10_000, "position": 99})
    path = write_lines(tmp_path / "edited.jsonl", records)
    ran = run(capsys, "import", "--data-dir", str(data), str(path))
    assert ran.code == 1
    assert f"line {len(records)}: " in ran.err
    assert query(data, "SELECT (SELECT count(*) FROM sequences), (SELECT count(*) FROM thoughts)") == before


def test_derived_counts_are_recomputed_so_later_writes_work(
    export: Export, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def wrong(rec: dict[str, Any]) -> None:
        rec.update(thought_count=17, last_thought_number=40, total_thoughts=0, title="not its first thought")

    _, records = edited(export, "sequence", wrong, public_id=export.a)
    data = tmp_path / "target"
    assert run(capsys, "import", "--data-dir", str(data), str(write_lines(tmp_path / "x.jsonl", records))).code == 0
    assert query(
        data,
        "SELECT thought_count, last_thought_number, total_thoughts, title FROM sequences WHERE public_id = ?",
        (export.a,),
    ) == [(3, 3, 3, "Plan the loop")]

    async def write_next() -> dict[str, Any]:
        with serve_in_thread(create_app(Settings(data_dir=data, api_token=TOKEN))) as running:
            async with mcp_client(running.base_url) as client:
                return structured(await client.call_tool("sequentialthinking", step(4, "Then hire", export.a)))

    assert anyio.run(write_next)["thoughtHistoryLength"] == 4


def test_times_after_now_are_moved_to_now(export: Export, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    year_2100 = 4_102_444_800_000
    _, records = edited(export, "sequence", lambda rec: rec.__setitem__("updated_at", year_2100), public_id=export.a)
    data = tmp_path / "target"
    before = int(time.time() * 1000)
    assert run(capsys, "import", "--data-dir", str(data), str(write_lines(tmp_path / "x.jsonl", records))).code == 0
    ((updated,),) = query(data, "SELECT updated_at FROM sequences WHERE public_id = ?", (export.a,))
    assert before <= updated <= int(time.time() * 1000)


def test_thought_text_the_tools_accept_imports_whatever_its_characters(
    export: Export, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = "colour \x1b[31mred\x1b[0m,\ttab, NUL \x00, and a line\nbreak"  # sequentialthinking takes all of these
    _, records = edited(export, "thought", lambda rec: rec.__setitem__("body", body), position=2)
    data = tmp_path / "target"
    ran = run(capsys, "import", "--data-dir", str(data), str(write_lines(tmp_path / "x.jsonl", records)))
    assert ran.code == 0, ran.err
    assert query(data, "SELECT body FROM thoughts WHERE position = 2") == [(body,)]


@pytest.mark.parametrize("kept", [0, -1, -3])
def test_an_export_cut_short_or_empty_is_refused_whole(
    export: Export, tmp_path: Path, capsys: pytest.CaptureFixture[str], kept: int
) -> None:
    records = [dict(r) for r in export.records][:kept]
    assert not records or records[-1]["type"] != "proposal_ids"
    ran = refused_import(capsys, tmp_path, records, "cut short", "export the store again")
    assert f"line {len(records) + 1}:" in ran.err
