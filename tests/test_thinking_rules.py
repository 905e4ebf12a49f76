"""The reasoning model's pure rules: branch resolution, planning, titles and headlines."""

from __future__ import annotations

import pytest

from thoughtline.domain.arguments import ThoughtInput
from thoughtline.domain.thinking import (
    BranchInfo,
    SequenceState,
    ThoughtRef,
    lineage,
    make_title,
    plan_thought,
    resolve,
    resolve_from,
)
from thoughtline.domain.write_text import headline, notes
from thoughtline.errors import DomainError


class Book:
    """An in-memory sequence: thoughts as (position, branch key, number)."""

    def __init__(self) -> None:
        self.thoughts: list[tuple[int, int | None, int]] = []
        self.branches: dict[str, BranchInfo] = {}

    def add(self, branch: int | None, number: int) -> int:
        position = len(self.thoughts) + 1
        self.thoughts.append((position, branch, number))
        return position

    def branch(self, key: int, name: str, parent: int | None, from_thought: int, fork_position: int) -> BranchInfo:
        info = BranchInfo(key, name, parent, from_thought, fork_position)
        self.branches[name] = info
        return info

    def find(self, branch: int | None, number: int, max_position: int | None) -> ThoughtRef | None:
        hits = [
            p
            for p, b, n in self.thoughts
            if b == branch and n == number and (max_position is None or p <= max_position)
        ]
        return ThoughtRef(max(hits), number, branch) if hits else None

    def state(self, status: str = "active") -> SequenceState:
        return SequenceState("seq_x", status, len(self.thoughts), dict(self.branches))  # type: ignore[arg-type]


def thought(number: int, **extra: object) -> ThoughtInput:
    return ThoughtInput(
        thought=f"t{number}",
        next_thought_needed=True,
        thought_number=number,
        total_thoughts=10,
        sequence_id="seq_" + "0" * 32,
        **extra,  # type: ignore[arg-type]
    )


@pytest.fixture
def book() -> Book:
    """main: 1 2 3; branch A (key 1) forks at main's 2 and writes 3 4."""
    b = Book()
    for n in (1, 2, 3):
        b.add(None, n)
    b.branch(1, "A", None, 2, 2)
    b.add(1, 3)
    b.add(1, 4)
    return b


def test_reference_on_a_branch_prefers_the_branch_own_thought(book: Book) -> None:
    ref = resolve(3, lineage(book.state(), book.branches["A"]), book.find)
    assert ref == ThoughtRef(4, 3, 1)


def test_reference_falls_back_to_the_parent_only_up_to_the_fork_point(book: Book) -> None:
    a = book.branches["A"]
    assert resolve(2, lineage(book.state(), a), book.find) == ThoughtRef(2, 2, None)
    book.add(None, 5)  # main moves on after the fork
    assert resolve(5, lineage(book.state(), a), book.find) is None


def test_parent_writes_after_the_fork_are_invisible_even_with_low_numbers(book: Book) -> None:
    book.add(None, 1)  # main reuses number 1 after A forked
    ref = resolve(1, lineage(book.state(), book.branches["A"]), book.find)
    assert ref == ThoughtRef(1, 1, None)


def test_resolving_from_the_branches_alone_gives_what_a_revision_resolves_to(book: Book) -> None:
    # Import and `thoughtline check` hold stored revisions to this, without a SequenceState.
    a = book.branches["A"]
    assert resolve_from(3, a, book.branches, book.find) == ThoughtRef(4, 3, 1)
    assert resolve_from(1, a, book.branches, book.find) == ThoughtRef(1, 1, None)
    assert resolve_from(4, None, book.branches, book.find) is None  # A's 4 is invisible from main
    plan = plan_thought(thought(5, branch_id="A", is_revision=True, revises_thought=3), book.state(), book.find)
    assert plan.revises == resolve_from(3, a, book.branches, book.find)


def test_newest_occurrence_of_a_reused_number_wins_on_the_main_path(book: Book) -> None:
    newer = book.add(None, 2)
    assert resolve(2, lineage(book.state(), None), book.find) == ThoughtRef(newer, 2, None)


def test_nested_branch_from_an_inherited_thought_collapses_to_its_real_owner(book: Book) -> None:
    # Forking from "thought 1 of A" really forks from main's 1: A has no thought 1 of its own.
    plan = plan_thought(
        thought(2, branch_id="B", branch_from_thought=1, branch_from_branch_id="A"), book.state(), book.find
    )
    assert plan.new_branch is not None
    assert plan.new_branch.parent is None
    assert plan.new_branch.fork_position == 1


def test_nested_branch_from_a_branch_own_thought_keeps_that_branch_as_parent(book: Book) -> None:
    plan = plan_thought(
        thought(5, branch_id="B", branch_from_thought=4, branch_from_branch_id="A"), book.state(), book.find
    )
    assert plan.new_branch is not None
    assert (plan.new_branch.parent, plan.new_branch.fork_position) == (1, 5)


def test_redeclaring_a_branch_with_another_fork_point_is_a_conflict(book: Book) -> None:
    with pytest.raises(DomainError) as err:
        plan_thought(thought(5, branch_id="A", branch_from_thought=1), book.state(), book.find)
    assert err.value.code == "branch_conflict"


def test_redeclaring_a_branch_with_the_same_fork_point_continues_it(book: Book) -> None:
    plan = plan_thought(thought(5, branch_id="A", branch_from_thought=2), book.state(), book.find)
    assert plan.new_branch is None
    assert plan.branch == book.branches["A"]


@pytest.mark.parametrize(
    ("extra", "code"),
    [
        ({"is_revision": True}, "revision_target_required"),
        ({"revises_thought": 1}, "invalid_input"),
        ({"is_revision": False, "revises_thought": 1}, "invalid_input"),
        ({"is_revision": True, "revises_thought": 9}, "revision_target_not_found"),
        ({"branch_from_thought": 1}, "branch_id_required"),
        ({"branch_id": "Z"}, "branch_not_found"),
        ({"branch_id": "Z", "branch_from_thought": 9}, "branch_point_not_found"),
        ({"branch_id": "Z", "branch_from_thought": 1, "branch_from_branch_id": "nope"}, "branch_not_found"),
        ({"branch_id": "Z", "branch_from_branch_id": "A"}, "invalid_input"),
        ({"branch_id": "A", "branch_from_thought": 1, "branch_from_branch_id": "A"}, "invalid_input"),
    ],
)
def test_invalid_references_are_refused_with_their_code(book: Book, extra: dict[str, object], code: str) -> None:
    with pytest.raises(DomainError) as err:
        plan_thought(thought(6, **extra), book.state(), book.find)
    assert err.value.code == code


def test_revision_on_a_new_branch_resolves_through_the_fork(book: Book) -> None:
    plan = plan_thought(
        thought(3, branch_id="C", branch_from_thought=2, is_revision=True, revises_thought=1), book.state(), book.find
    )
    assert plan.revises == ThoughtRef(1, 1, None)


def test_flags_reopen_reuse_and_raised_total(book: Book) -> None:
    inp = ThoughtInput("x", True, 12, 10, sequence_id="seq_" + "0" * 32)
    plan = plan_thought(inp, book.state("completed"), book.find)
    assert (plan.reopened, plan.number_reused, plan.total_raised, plan.total_thoughts) == (True, False, True, 12)
    again = plan_thought(thought(3), book.state(), book.find)
    assert again.number_reused


@pytest.mark.parametrize(
    ("was", "keeps_going", "reopened", "left", "note"),
    [
        ("completed", True, True, "completed", "Note: this sequence was completed; this thought reopens it"),
        ("abandoned", True, True, "abandoned", "Note: this sequence was abandoned; this thought reopens it"),
        ("abandoned", False, False, "abandoned", "this final thought marks it completed"),
        ("completed", False, False, None, None),
        ("active", True, False, None, None),
        ("paused", True, False, "paused", "Note: this sequence was paused; this thought makes it active again"),
        ("paused", False, False, "paused", "Note: this sequence was paused; this final thought marks it completed"),
    ],
)
def test_a_write_that_changes_an_ended_or_paused_status_says_what_it_was_and_only_an_ended_one_is_reopened(
    book: Book, was: str, keeps_going: bool, reopened: bool, left: str | None, note: str | None
) -> None:
    inp = ThoughtInput("x", keeps_going, 6, 10, sequence_id="seq_" + "0" * 32)
    plan = plan_thought(inp, book.state(was), book.find)
    assert (plan.reopened, plan.left_status) == (reopened, left)
    said = [line for line in notes(inp, plan) if "this sequence was" in line]
    assert len(said) == (0 if note is None else 1)
    if note is not None:
        assert note in said[0]
        assert "nextThoughtNeeded" not in said[0]


def test_first_thought_of_a_new_sequence_cannot_branch_or_revise() -> None:
    def nothing(branch: int | None, number: int, max_position: int | None) -> ThoughtRef | None:
        return None

    for extra, code in (
        ({"branch_id": "A", "branch_from_thought": 1}, "branch_point_not_found"),
        ({"is_revision": True, "revises_thought": 1}, "revision_target_not_found"),
    ):
        with pytest.raises(DomainError) as err:
            plan_thought(thought(1, **extra), None, nothing)
        assert err.value.code == code


def test_title_collapses_whitespace_and_stops_at_160_characters() -> None:
    assert make_title("  a\n\tb   c ") == "a b c"
    long = make_title("word " * 100)
    assert len(long) <= 160
    assert long.endswith("…")


def test_headlines_name_branch_starts_continuations_and_revisions(book: Book) -> None:
    start = thought(3, branch_id="N", branch_from_thought=2)
    assert headline(start, plan_thought(start, book.state(), book.find)) == "Branch N from thought 2 · 3/10"
    cont = thought(5, branch_id="A")
    assert headline(cont, plan_thought(cont, book.state(), book.find)) == "Branch A · 5/10"
    rev = thought(4, is_revision=True, revises_thought=1)
    assert headline(rev, plan_thought(rev, book.state(), book.find)) == "Revision of thought 1 · 4/10"
    plain = thought(4)
    assert headline(plain, plan_thought(plain, book.state(), book.find)) == "Thought 4/10"


def test_a_nested_branch_start_names_the_branch_that_owns_its_fork_thought(book: Book) -> None:
    nested = thought(5, branch_id="B", branch_from_thought=4, branch_from_branch_id="A")
    assert (
        headline(nested, plan_thought(nested, book.state(), book.find)) == "Branch B from thought 4 of branch A · 5/10"
    )
    # "thought 1 of A" is main's 1 (A has no 1 of its own), so the headline names no branch.
    inherited = thought(2, branch_id="C", branch_from_thought=1, branch_from_branch_id="A")
    assert headline(inherited, plan_thought(inherited, book.state(), book.find)) == "Branch C from thought 1 · 2/10"


def test_a_branch_continues_with_its_own_declaration_after_the_fork_number_is_reused(book: Book) -> None:
    # main's 2 is written again after A forked from it: A's unchanged declaration still names A's fork.
    book.add(None, 2)
    plan = plan_thought(thought(5, branch_id="A", branch_from_thought=2), book.state(), book.find)
    assert plan.new_branch is None
    assert plan.branch == book.branches["A"]


def test_a_nested_branch_continues_with_its_own_declaration_after_the_fork_number_is_reused(book: Book) -> None:
    b = book.branch(2, "B", 1, 4, 5)
    book.add(b.key, 5)
    book.add(1, 4)  # A reuses 4, the thought B forked from
    plan = plan_thought(
        thought(6, branch_id="B", branch_from_thought=4, branch_from_branch_id="A"), book.state(), book.find
    )
    assert plan.branch == b


def test_a_different_declaration_stays_a_conflict_after_the_fork_number_is_reused(book: Book) -> None:
    book.add(None, 1)
    with pytest.raises(DomainError) as err:
        plan_thought(thought(5, branch_id="A", branch_from_thought=1), book.state(), book.find)
    assert err.value.code == "branch_conflict"
