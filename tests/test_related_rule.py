"""The rule of related earlier reasoning, directly: the word-share evidence and the choice (SPEC §5.4)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from thoughtline.library.related import THRESHOLD, TermIndex, choose, terms


def index_of(sequences: dict[int, list[str]]) -> TermIndex:
    index = TermIndex()
    pairs = ((k, t) for k, ts in sequences.items() for t in ts)
    rows = [(i, key, f"seq_{key}", text) for i, (key, text) in enumerate(pairs, 1)]
    index.fold(rows)
    return index


def test_a_sequence_sharing_the_rare_words_of_an_opening_is_chosen_and_a_common_word_is_not_enough() -> None:
    index = index_of(
        {
            1: ["bellhop worker OOMKilled, heap snapshots show the retry map growing"],
            2: ["sourdough loaf dense again this week"],
            3: ["hallway paint samples this week"],
            4: ["bellhop OOMKilled again this week: take heap snapshots first"],
        }
    )
    chosen = choose(index.shares(4, THRESHOLD))
    assert [key for key, _ in chosen] == [1]
    assert all(key != 4 for key, _ in index.shares(4))  # never itself


def test_nothing_is_chosen_when_no_sequence_is_strong_enough() -> None:
    assert choose([(1, THRESHOLD - 0.01), (2, 0.05)]) == []
    assert choose([(k, 0.9) for k in range(10)]) == [(k, 0.9) for k in range(3)]


def test_words_are_folded_without_stopwords_single_letters_or_plural_s() -> None:
    assert terms("The runbooks of a Class, and 2 RUNBOOK x") == {"runbook", "class"}


def test_folding_twice_changes_nothing_and_forgetting_drops_every_posting() -> None:
    index = index_of({1: ["alpha beta"], 2: ["beta gamma"]})
    index.fold([(1, 1, "seq_1", "alpha beta")])
    assert index.terms_of == {1: {"alpha", "beta"}, 2: {"beta", "gamma"}}
    index.forget(2)
    assert index.postings == {"alpha": {1}, "beta": {1}}
    assert index.keys == {"seq_1": 1}


def test_a_word_is_held_once_however_many_sequences_use_it_and_the_estimate_follows_what_is_held() -> None:
    index = index_of({1: ["alpha beta"], 2: ["beta gamma"], 3: ["beta"]})
    betas = [next(w for w in index.terms_of[k] if w == "beta") for k in (1, 2, 3)]
    assert betas[0] is betas[1] is betas[2]
    grown = index.nbytes
    index.fold([(4, 3, "seq_3", "delta")])
    assert index.nbytes > grown > 0
    for key in (1, 2, 3):
        index.forget(key)
    assert (index.postings, index.nbytes) == ({}, 0)


WORDS = st.sampled_from([f"w{i}" for i in range(25)])


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.integers(1, 30), st.lists(WORDS, min_size=1, max_size=12), min_size=2, max_size=30),
    st.floats(0.0, 1.0),
)
def test_shares_above_a_floor_are_exactly_the_full_lists_entries_above_it(
    sequences: dict[int, list[str]], floor: float
) -> None:
    index = index_of({k: [" ".join(ws)] for k, ws in sequences.items()})
    key = max(sequences)
    full = {k: s for k, s in index.shares(key) if s >= floor}
    pruned = {k: s for k, s in index.shares(key, floor) if s >= floor}
    assert pruned.keys() == full.keys()
    assert all(abs(pruned[k] - full[k]) < 1e-9 for k in full)
