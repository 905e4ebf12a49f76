"""The rules an exported record keeps to enter a store: the tools' own limits, record by record.

`RecordChecker` reads records in export order (parents before children) and answers each with
the column values to store, or raises `RecordProblem` naming the record and the rule it breaks.
It also keeps what only the whole file shows (positions without gaps, branches and revisions
inside their own sequence, every sequence holding thoughts, no sequence its own ancestor) and
recomputes the derived columns (`Derived`). Import refuses a file at its first problem;
`thoughtline check` runs the same checker over a store's own rows. Messages never quote thought text.
The thread records' rules are `domain/export_threads.py`'s; the state kept per sequence and branch,
`domain/export_tallies.py`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from thoughtline.domain.arguments import (
    EVENT_KINDS,
    MAIN_BRANCH,
    MAX_BRANCH_ID_CHARS,
    MAX_KIND_CHARS,
    MAX_THOUGHT_CHARS,
    SEQUENCE_ID_RE,
)
from thoughtline.domain.export_tallies import NO_BRANCH, BranchTally, Derived, SequenceTally
from thoughtline.domain.export_threads import check_membership, check_proposal_ids, check_thread
from thoughtline.domain.record_fields import MAX_ID, Fields, RecordProblem, is_id, kind_of
from thoughtline.domain.sequence_labels import on_loops
from thoughtline.domain.thinking import BranchInfo, make_title, resolve_from

RECORD_TYPES = ("sequence", "branch", "thought", "thread", "thread_member", "thread_rejection", "proposal_ids")
SEQUENCE_STATUSES = ("active", "paused", "completed", "abandoned")
MAX_CLIENT_ID_CHARS = 2_048
MAX_FLAGS = 7  # the three flag bits of storage/thoughts.py


class RecordChecker:
    """Checks records in export order; `clamp` moves future times to now (import) instead of refusing."""

    def __init__(self, now_ms: int, *, clamp: bool, slack_ms: int = 0) -> None:
        self._now_ms = now_ms
        self._clamp = clamp
        self._slack_ms = slack_ms  # without `clamp`: how far back a time may step and pass (clock skew)
        self._sequences: dict[int, SequenceTally] = {}
        self._public_ids: set[str] = set()
        self._branches: dict[int, BranchTally] = {}
        self._branch_names: set[tuple[int, str]] = set()
        self._thoughts: set[int] = set()
        self._threads: dict[int, int] = {}  # file id -> created_at
        self._rules: dict[str, Callable[[Fields], dict[str, Any]]] = {
            "sequence": self._sequence,
            "branch": self._branch,
            "thought": self._thought,
            "thread": lambda f: check_thread(f, self._threads),
            "thread_member": self._membership,
            "thread_rejection": self._membership,
            "proposal_ids": check_proposal_ids,
        }

    def check(self, rec: Mapping[str, Any], ref: int = 0) -> dict[str, Any]:
        """The columns to store for `rec` (file ids still unmapped), or a `RecordProblem`."""
        kind = rec.get("type")
        rule = self._rules.get(kind) if isinstance(kind, str) else None
        if rule is None:
            named = f"{kind[:40]!r}" if isinstance(kind, str) else kind_of(kind)
            raise RecordProblem(f"unknown record type {named}; expected one of {', '.join(RECORD_TYPES)}", ref)
        return rule(Fields(rec, _label(rec), ref, self._now_ms, self._clamp, self._slack_ms))

    def whole_file_problems(self) -> list[RecordProblem]:
        """What only the whole file shows: sequences without thoughts or in a parent loop, forks from nowhere."""
        problems = [
            RecordProblem(f"{seq.label}: holds no thoughts (every sequence starts with one)", seq.ref)
            for seq in self._sequences.values()
            if seq.count == 0
        ]
        by_id = {seq.public_id: seq for seq in self._sequences.values() if seq.public_id}
        for looped in on_loops({public_id: seq.parent for public_id, seq in by_id.items()}):
            seq = by_id[looped]
            problems.append(
                RecordProblem(
                    f"{seq.label}: its 'parent_public_id' chain leads back to itself, so it would be its own "
                    "ancestor (sequentialthinking refuses such a parentSequenceId)",
                    seq.ref,
                )
            )
        for branch in self._branches.values():
            seq = self._sequences[branch.sequence]
            if seq.flawed:
                continue
            if seq.numbers.get(branch.fork_position) != branch.from_thought:
                problems.append(
                    RecordProblem(
                        f"{branch.label}: forks from thought {branch.from_thought} at position "
                        f"{branch.fork_position}, which its sequence does not hold",
                        branch.ref,
                    )
                )
            elif seq.owners[branch.fork_position] != branch.parent:
                # SPEC §2.1: the stored parent of a branch is the branch that owns the fork thought.
                problems.append(
                    RecordProblem(
                        f"{branch.label}: forks from thought {branch.from_thought} at position "
                        f"{branch.fork_position}, which is on {self._scope(seq.owners[branch.fork_position])}, "
                        f"but its 'parent_branch' is {self._scope(branch.parent)}; a branch's parent is the "
                        "branch that holds its fork thought",
                        branch.ref,
                    )
                )
        return problems

    def _scope(self, branch: int | None) -> str:
        """How a message names a branch by its file id (None: the main path)."""
        return "the main path" if branch is None else f"branch {self._branches[branch].name!r}"

    def derived(self) -> dict[int, Derived]:
        """Each sequence's derived columns as its thoughts give them, by the sequence's file id.

        A sequence with a thought that broke a rule is left out: its columns cannot be known.
        """
        return {
            rowid: Derived(seq.title, seq.count, seq.last_number, seq.last_total, seq.last_time)
            for rowid, seq in self._sequences.items()
            if not seq.flawed
        }

    def _sequence(self, f: Fields) -> dict[str, Any]:
        rowid = f.ident("id")
        public_id = f.raw("public_id")
        if rowid in self._sequences or (isinstance(public_id, str) and public_id in self._public_ids):
            raise f.problem("appears twice in the file")
        # Known before its fields are judged, so a check reports its thoughts' own problems only.
        self._sequences[rowid] = SequenceTally(f.label, f.ref)
        if not isinstance(public_id, str) or not SEQUENCE_ID_RE.match(public_id):
            raise f.problem("'public_id' must be seq_ followed by 32 lowercase hex characters, as the tools issue")
        self._public_ids.add(public_id)
        self._sequences[rowid].public_id = public_id
        parent = f.text("parent_public_id", 64, required=False)
        if parent is not None and not SEQUENCE_ID_RE.match(parent):
            raise f.problem("'parent_public_id' must be a sequence id (seq_ and 32 hex characters) or null")
        self._sequences[rowid].parent = parent
        kind = f.text("kind", MAX_KIND_CHARS, required=False)
        if kind is not None and not kind.strip():
            raise f.problem("'kind' is empty; use null for no kind")
        created = f.time("created_at")
        updated = f.not_before("updated_at", f.time("updated_at"), created, "its 'created_at'")
        self._sequences[rowid].created = self._sequences[rowid].last_time = created
        return {
            "id": rowid,
            "public_id": public_id,
            "status": f.choice("status", SEQUENCE_STATUSES, "active"),
            "parent_public_id": parent,
            "kind": kind,
            "origin_client": f.text("origin_client", MAX_CLIENT_ID_CHARS, required=False),
            "created_at": created,
            "updated_at": updated,
            # Derived: import recomputes them from the thoughts (`derived`), check compares.
            "title": "",
            "thought_count": f.integer("thought_count", 0, MAX_ID, required=False),
            "last_thought_number": f.integer("last_thought_number", 0, MAX_ID, required=False),
            "total_thoughts": f.integer("total_thoughts", 0, MAX_ID, required=False),
        }

    def _own_sequence(self, f: Fields) -> int:
        seq = f.raw("sequence_id")
        if not is_id(seq) or seq not in self._sequences:
            raise f.problem(f"refers to sequence record {kind_of(seq)}, which is not earlier in the file")
        return int(seq)

    def _branch_name(self, f: Fields, key: str, *, required: bool, allow_main: bool) -> str | None:
        name = f.text(key, MAX_BRANCH_ID_CHARS, required=required)
        if name is not None and (not name.strip() or (name == MAIN_BRANCH and not allow_main)):
            raise f.problem(f"'{key}' must be a branch id of 1-{MAX_BRANCH_ID_CHARS} characters other than 'main'")
        return name

    def _branch(self, f: Fields) -> dict[str, Any]:
        rowid, seq = f.ident("id"), self._own_sequence(f)
        name = str(self._branch_name(f, "name", required=True, allow_main=False))
        if rowid in self._branches or (seq, name) in self._branch_names:
            raise f.problem("appears twice in the file")
        parent = f.raw("parent_branch")
        if parent is not None and (not is_id(parent) or self._branches.get(parent, NO_BRANCH).sequence != seq):
            raise f.problem("'parent_branch' must be an earlier branch of the same sequence, or null")
        from_thought = int(f.number("from_thought") or 0)
        fork_position = f.ident("fork_position")
        label = f.label = f"branch {name!r} of {self._sequences[seq].label}"
        self._branches[rowid] = BranchTally(seq, label, f.ref, from_thought, fork_position, name, parent)
        self._sequences[seq].branches[name] = BranchInfo(rowid, name, parent, from_thought, fork_position)
        self._branch_names.add((seq, name))
        return {
            "id": rowid,
            "sequence_id": seq,
            "name": name,
            "parent_branch": parent,
            "from_thought": from_thought,
            "fork_position": fork_position,
            "created_at": f.not_before(
                "created_at", f.time("created_at"), self._sequences[seq].created, "its sequence's 'created_at'"
            ),
        }

    def _thought(self, f: Fields) -> dict[str, Any]:
        seq_id = self._own_sequence(f)
        seq = self._sequences[seq_id]
        f.label = f"thought {seq.count + 1} of {seq.label}"
        try:
            return self._thought_fields(f, seq_id, seq)
        except RecordProblem:
            # Counted anyway, so a check reports one bad thought once, not again for what follows it.
            seq.count += 1
            seq.flawed = True
            raise

    def _thought_fields(self, f: Fields, seq_id: int, seq: SequenceTally) -> dict[str, Any]:
        rowid = f.ident("id")
        if rowid in self._thoughts:
            raise f.problem("appears twice in the file")
        position = f.ident("position")
        if position != seq.count + 1:
            raise f.problem(f"has position {position}; positions run 1, 2, 3, … in the file's order")
        branch = f.raw("branch")
        if branch is not None:
            owner = self._branches.get(branch) if is_id(branch) else None
            if owner is None or owner.sequence != seq_id:
                raise f.problem("'branch' must be a branch of the same sequence, or null for the main path")
            if position <= owner.fork_position:
                raise f.problem(f"sits on {owner.label} before that branch's fork point")
        number = int(f.number("number") or 0)
        total = int(f.number("total") or 0)
        if total < number:
            raise f.problem(f"'total' {total} is below its 'number' {number}")
        body = str(f.text("body", MAX_THOUGHT_CHARS, any_control=True))  # as `sequentialthinking` takes it
        if not body.strip():
            raise f.problem("'body' is empty")
        is_revision = int(f.flag("is_revision", required=False) or 0)  # columns with defaults may be absent
        revises_number = f.number("revises_number", required=False)
        revises_position = f.integer("revises_position", 1, MAX_ID, required=False)
        if is_revision and (revises_number is None or seq.numbers.get(revises_position or 0) != revises_number):
            raise f.problem("is a revision of a thought its sequence does not hold earlier")
        if is_revision and revises_number is not None:
            self._check_revision_target(f, seq, branch, revises_number, revises_position)
        if not is_revision and (revises_number, revises_position) != (None, None):
            raise f.problem("names a revised thought but is not a revision")
        event = f.raw("event", required=False)
        if event is not None and event not in EVENT_KINDS:
            raise f.problem(f"'event' must be one of {', '.join(EVENT_KINDS)} or null")
        sent_from = self._branch_name(f, "sent_branch_from_branch_id", required=False, allow_main=True)
        if sent_from not in (None, MAIN_BRANCH) and sent_from not in seq.branches:
            # sequentialthinking refuses a branchFromBranchId its sequence does not hold (branch_not_found).
            raise f.problem(
                f"'sent_branch_from_branch_id' names branch {sent_from!r}, which its sequence does not hold; "
                "set it to one of its branches, 'main' or null"
            )
        # Write order is position order: a thought is never older than the one before it (the event
        # reducer and `since` read thoughts by time) nor than its sequence.
        what = "the thought before it" if seq.count else "its sequence's 'created_at'"
        created = f.not_before("created_at", f.time("created_at"), seq.last_time, what)
        row = {
            "id": rowid,
            "sequence_id": seq_id,
            "position": position,
            "branch": branch,
            "number": number,
            "total": total,
            "next_needed": f.flag("next_needed"),
            "body": body,
            "is_revision": is_revision,
            "revises_number": revises_number,
            "revises_position": revises_position,
            "needs_more": f.flag("needs_more", required=False),
            "flags": f.integer("flags", 0, MAX_FLAGS, required=False) or 0,
            "created_at": created,
            "event": event,
            "sent_branch_from_thought": f.number("sent_branch_from_thought", required=False),
            "sent_branch_from_branch_id": sent_from,
        }
        self._thoughts.add(rowid)
        seq.count, seq.last_number, seq.last_total = position, number, total
        seq.last_time = max(seq.last_time, created)
        seq.numbers[position] = number
        seq.owners[position] = branch
        seq.scopes.setdefault((branch, number), []).append(position)
        seq.title = seq.title or make_title(body)
        return row

    def _check_revision_target(
        self, f: Fields, seq: SequenceTally, branch: int | None, number: int, position: int | None
    ) -> None:
        """A revision must name the thought `revisesThought` meant when it was written: the thoughts
        read so far are exactly the ones stored before it, so the tools' own resolution answers."""
        if seq.flawed:  # a thought of it broke a rule and is missing here: the answer would not be the tools'
            return
        on = self._branches[branch] if branch is not None else None
        info = seq.branches[on.name] if on is not None else None
        meant = resolve_from(number, info, seq.branches, seq.find)
        if meant is None or meant.position != position:
            target = "no thought" if meant is None else f"the thought at position {meant.position}"
            raise f.problem(
                f"revises thought {number} at position {position}, but from {self._scope(branch)} thought "
                f"{number} means {target} (a reference resolves on its own branch, then on its ancestors up to "
                "their fork points)"
            )

    def _membership(self, f: Fields) -> dict[str, Any]:
        """A thread_member or thread_rejection record (`domain/export_threads.py`)."""
        return check_membership(f, self._threads, self._own_sequence, self._sequences.__getitem__)


def check_file(records: Iterable[tuple[int, Mapping[str, Any]]], now_ms: int) -> None:
    """Raise the first `RecordProblem` of a whole file (each record with its line number)."""
    checker = RecordChecker(now_ms, clamp=True)
    last_ref, last_type = 0, None
    for ref, rec in records:
        checker.check(rec, ref)
        last_ref, last_type = ref, rec.get("type")
    problems = checker.whole_file_problems()
    if problems:
        raise problems[0]
    # Every export ends with its proposal_ids record: without it the file was cut short (or is empty),
    # and importing the part that arrived would pass for a whole store.
    if last_type != "proposal_ids":
        raise RecordProblem(
            "the file ends without the proposal_ids record every export ends with, so it was cut short: "
            "export the store again (a file from a Thoughtline before 2026-12-01 can end with the line "
            '{"type": "proposal_ids", "issued": 0})',
            last_ref + 1,
        )


def _label(rec: Mapping[str, Any]) -> str:
    """How a problem names its record before its fields are known to be sound."""
    kind = rec.get("type")
    if kind == "sequence" and isinstance(rec.get("public_id"), str) and SEQUENCE_ID_RE.match(rec["public_id"]):
        return f"sequence {rec['public_id']}"
    if kind == "thread" and isinstance(rec.get("name"), str):
        return f"thread {rec['name'][:40]!a}"
    return f"{kind} record" if isinstance(kind, str) and kind in RECORD_TYPES else "record"
