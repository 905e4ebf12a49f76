"""The rule of related earlier reasoning, directly: the word-share evidence and the choice (SPEC §5.4)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.related_notes import BREAD, INVOICE, LEAK, NUMBERED, OPENING, RESTATED, UNRELATED
from thoughtline.library.related import MIN_EVIDENCE, THRESHOLD, TermIndex, choose, terms


def index_of(sequences: dict[int, list[str]]) -> TermIndex:
    index = TermIndex()
    pairs = ((k, t) for k, ts in sequences.items() for t in ts)
    rows = [(i, key, f"seq_{key}", text) for i, (key, text) in enumerate(pairs, 1)]
    index.fold(rows)
    return index


def test_a_sequence_sharing_the_rare_words_of_an_opening_is_chosen_and_a_common_word_is_not_enough() -> None:
    # The loaf and the paint share a word or two with the opening ("take", "same"), the leak its names.
    index = index_of({1: LEAK, 2: BREAD, 3: UNRELATED, 4: OPENING})
    chosen = choose(index.shares(4, THRESHOLD))
    assert [key for key, _ in chosen] == [1]
    assert all(key != 4 for key, _ in index.shares(4))  # never itself


def test_an_opening_of_reasoning_scaffolding_names_nothing_though_an_earlier_sequence_holds_every_word() -> None:
    index = index_of({1: INVOICE, 2: RESTATED})
    assert index.shares(2) == []
    index = index_of({1: INVOICE, 2: RESTATED, 3: ["first step, check the garden hose"], 4: NUMBERED})
    assert index.shares(4) == []


def test_a_short_opening_that_an_earlier_sequence_holds_whole_is_still_too_little_evidence() -> None:
    # Both words of the opening are in one earlier sequence and in no other: all of it, but two words.
    index = index_of({1: ["invoice CSV export drops rows"], 2: BREAD, 3: UNRELATED, 4: ["invoice CSV"]})
    ((key, share),) = index.shares(4)
    assert key == 1
    assert share <= 2 / MIN_EVIDENCE < THRESHOLD


def test_nothing_is_chosen_when_no_sequence_is_strong_enough() -> None:
    assert choose([(1, THRESHOLD - 0.01), (2, 0.05)]) == []
    assert choose([(k, 0.9) for k in range(10)]) == [(k, 0.9) for k in range(3)]


def test_words_are_folded_without_stopwords_single_letters_or_plural_s() -> None:
    assert terms("The runbooks of a Class, and 2 RUNBOOK x") == {"runbook", "class"}


def test_scaffolding_words_and_the_plurals_of_stopwords_and_scaffolding_are_no_evidence() -> None:
    assert terms("Let me restate the problem. Next, list the constraints.") == set()
    assert terms("First the options, the others and the trade-offs; the hypotheses don't hold") == {"trade", "hold"}


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


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.integers(1, 30), st.lists(WORDS, min_size=1, max_size=12), min_size=2, max_size=30))
def test_a_share_is_never_more_than_the_words_shared_over_the_least_evidence(sequences: dict[int, list[str]]) -> None:
    index = index_of({k: [" ".join(ws)] for k, ws in sequences.items()})
    key = max(sequences)
    for other, share in index.shares(key):
        shared = index.terms_of[key] & index.terms_of[other]
        assert 0.0 < share <= len(shared) / MIN_EVIDENCE + 1e-9
