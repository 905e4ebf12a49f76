"""The set-once rules of a sequence's parent and kind, tested directly as the pure functions they are."""

from __future__ import annotations

import pytest

from thoughtline.domain.sequence_labels import MAX_PARENT_HOPS, check_kind, check_parent, closes_loop, on_loops
from thoughtline.errors import DomainError

# child -> parent: C is a sub-agent of B, B of A; A has none.
TREE: dict[str, str | None] = {"A": None, "B": "A", "C": "B"}


def refusal(sequence_id: str | None, current: str | None, parent: str, links: dict[str, str | None]) -> str:
    with pytest.raises(DomainError) as caught:
        check_parent(sequence_id, current, parent, links.get)
    assert caught.value.code == "invalid_input"
    return caught.value.message


def test_a_new_sequence_takes_any_parent() -> None:
    check_parent(None, None, "C", TREE.get)


def test_a_sequence_without_a_parent_takes_one_outside_its_own_subtree() -> None:
    check_parent("D", None, "C", TREE.get)
    check_parent("B", None, "A", {**TREE, "B": None}.get)


def test_naming_the_same_parent_again_is_accepted() -> None:
    check_parent("C", "B", "B", TREE.get)


def test_a_sequence_cannot_be_its_own_parent() -> None:
    assert "cannot be its own parent" in refusal("A", None, "A", TREE)
    assert "cannot be its own parent" in refusal("B", "A", "B", TREE)


def test_a_parent_below_the_sequence_would_close_a_loop_and_is_refused() -> None:
    message = refusal("A", None, "C", TREE)
    assert "its own ancestor" in message
    assert "parentSequenceId C is a sub-agent of A" in message


def test_a_different_parent_than_the_stored_one_is_refused_naming_both() -> None:
    message = refusal("C", "B", "A", TREE)
    assert "already has parent B" in message
    assert "omit parentSequenceId, or pass B" in message


def test_a_loop_stored_above_the_new_parent_ends_the_walk() -> None:
    # X and Y name each other (a store written before the rule); linking Z under X cannot reach Z.
    assert closes_loop("Z", "X", {"X": "Y", "Y": "X"}.get) is False


def test_a_chain_longer_than_the_bound_is_refused_as_unknown_not_walked_forever() -> None:
    chain: dict[str, str | None] = {f"s{i}": f"s{i + 1}" for i in range(MAX_PARENT_HOPS + 5)}
    assert closes_loop("top", "s0", chain.get) is None
    assert "too long to check" in refusal("top", None, "s0", chain)


def test_on_loops_names_each_sequence_on_a_loop_and_not_those_leading_into_one() -> None:
    links: dict[str, str | None] = {"A": None, "B": "A", "P": "Q", "Q": "P", "R": "P", "S": "S", "T": "elsewhere"}
    assert on_loops(links) == ["P", "Q", "S"]
    assert on_loops(TREE) == []


def test_a_kind_is_set_by_the_first_call_that_sends_one_and_may_be_repeated() -> None:
    check_kind(None, None, "plan")
    check_kind("A", None, "plan")
    check_kind("A", "plan", "plan")


def test_a_different_kind_than_the_stored_one_is_refused_naming_it() -> None:
    with pytest.raises(DomainError) as caught:
        check_kind("A", "debug", "plan")
    assert caught.value.code == "invalid_input"
    assert caught.value.message == (
        "sequence A already has kind 'debug', and a sequence's kind does not change; omit kind, or send 'debug'."
    )
