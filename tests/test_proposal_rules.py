"""The pure proposal rules: thread and sequence vectors, the words, the blend, and each thread's own judgement."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from thoughtline.library.proposals import (
    MIN_TERMS,
    ThreadProfile,
    Tuning,
    closest_thought,
    embedding_part,
    enough_words,
    member_weight,
    picks,
    sequence_vector,
    similarity,
    term_cosine,
    term_vector,
    thread_terms,
    thread_vector,
    unit,
)


def v(*xs: float) -> np.ndarray:
    out = unit(np.array(xs, dtype=np.float32))
    assert out is not None
    return out


def test_members_weigh_more_as_they_grow() -> None:
    weights = [member_weight(n, 8.0) for n in range(0, 40, 4)]
    assert weights[0] == 0.0
    assert weights == sorted(weights)
    assert len(set(weights)) == len(weights)
    assert member_weight(8, 8.0) == pytest.approx(0.5)
    assert weights[-1] < 1.0


def test_a_thread_vector_blends_description_and_member_centroid() -> None:
    description, member = v(1, 0), v(0, 1)
    alone = thread_vector(description, [], 8.0)
    members_only = thread_vector(None, [member, member], 8.0)
    assert alone is not None
    assert members_only is not None
    assert np.allclose(alone, description)
    assert np.allclose(members_only, member)
    blended = thread_vector(description, [member] * 8, 8.0)
    assert blended is not None
    assert blended @ description == pytest.approx(blended @ member)
    assert thread_vector(None, [], 8.0) is None


def test_a_sequence_vector_is_the_unit_mean_of_its_thoughts() -> None:
    got = sequence_vector(np.stack([v(1, 0), v(0, 1)]))
    assert got is not None
    assert np.allclose(got, v(1, 1))
    assert sequence_vector(np.zeros((0, 2), dtype=np.float32)) is None


def test_a_word_every_thought_uses_weighs_least_and_a_rare_one_most() -> None:
    words = term_vector(Counter({"the": 1, "pgbouncer": 1, "queri": 1}), {"the": 100, "queri": 30}, 100)
    assert words["pgbouncer"] > words["queri"] > words["the"] > 0
    assert math.fsum(w * w for w in words.values()) == pytest.approx(1.0)
    # A young store: every word still counts, so its words are compared at all.
    assert term_vector(Counter({"hose": 2}), {"hose": 1}, 1) == {"hose": pytest.approx(1.0)}
    assert term_vector(Counter(), {}, 0) == {}


def test_a_threads_words_blend_description_and_members_like_its_vector() -> None:
    description = {"index": 1.0}
    member = {"vacuum": 1.0}
    assert thread_terms(description, [], 1.0) == description
    assert thread_terms({}, [member, member], 1.0) == pytest.approx(member)
    blended = thread_terms(description, [member], 1.0)  # one member weighs 1 / (1 + 1)
    assert blended["index"] == pytest.approx(blended["vacuum"])
    assert term_cosine(blended, description) == pytest.approx(math.sqrt(0.5))
    assert term_cosine({}, description) == 0.0


def test_the_similarity_weighs_the_words_by_their_share() -> None:
    assert similarity(0.6, 0.2, Tuning(threshold=0.5, words=0.0)) == pytest.approx(0.6)
    assert similarity(0.6, 0.2, Tuning(threshold=0.5, words=0.25)) == pytest.approx(0.5)


def test_each_thread_judges_the_sequence_on_its_own() -> None:
    # Two threads close to each other and to the sequence: both are proposed (no runner-up rule).
    threads = {1: ThreadProfile(v(1, 0.1, 0), {}), 2: ThreadProfile(v(1, 0, 0.1), {}), 3: ThreadProfile(v(0, 0, 1), {})}
    thoughts = np.stack([v(1, 0.05, 0.05)])
    chosen = picks(threads, [11], thoughts, {}, Tuning(threshold=0.5, words=0.0))
    assert [p.thread for p in chosen] == [1, 2]
    assert all(p.similarity >= 0.5 for p in chosen)


def test_shared_rare_words_lift_a_thread_over_the_threshold() -> None:
    thread = {1: ThreadProfile(v(1, 1, 0), {"pgbouncer": 0.8, "pool": 0.6})}
    thoughts = np.stack([v(1, 0, 0)])  # cosine 0.71 with the thread's vector
    words = {"pgbouncer": 1.0}
    assert picks(thread, [5], thoughts, {}, Tuning(threshold=0.7, words=0.3)) == []
    (lifted,) = picks(thread, [5], thoughts, words, Tuning(threshold=0.7, words=0.3))
    assert lifted.similarity == pytest.approx(0.7 * math.sqrt(0.5) + 0.3 * 0.8, abs=1e-4)


def test_a_thread_without_a_vector_is_never_matched() -> None:
    threads = {1: ThreadProfile(None, {"hose": 1.0})}
    assert picks(threads, [1], np.stack([v(1, 0)]), {"hose": 1.0}, Tuning(threshold=0.1, words=0.9)) == []


def test_the_evidence_is_the_thought_closest_to_the_thread() -> None:
    threads = {1: ThreadProfile(v(1, 0, 0), {}), 2: ThreadProfile(v(0, 0, 1), {})}
    thoughts = np.stack([v(0.2, 1, 0), v(1, 0.1, 0), v(0.5, 0.5, 0)])
    (chosen,) = picks(threads, [11, 12, 13], thoughts, {}, Tuning(threshold=0.5, words=0.0))
    assert (chosen.thread, chosen.evidence_thought) == (1, 12)


def test_a_thought_squarely_on_the_thread_lifts_a_member_over_a_stranger_near_it_everywhere() -> None:
    thread = v(1, 0, 0, 0)
    member = np.stack([v(1, 0, 0, 0), v(0, 1, 0, 0)])  # one thought on the thread, one elsewhere
    stranger = np.stack([v(1, 0, 1, 0), v(1, 0, 0, 1)])  # every thought half way there
    mean_only, blended = Tuning(threshold=0.5, best_thought=0.0), Tuning(threshold=0.5, best_thought=0.5)

    def part(thoughts: np.ndarray, tuning: Tuning) -> float:
        seq = sequence_vector(thoughts)
        assert seq is not None
        return embedding_part(seq, thoughts, thread, tuning)

    assert part(stranger, mean_only) > part(member, mean_only)
    assert part(member, blended) > part(stranger, blended)
    assert part(member, blended) == pytest.approx(0.5 * math.sqrt(0.5) + 0.5 * 1.0)
    assert closest_thought(member, thread) == 0  # the evidence


def test_a_sequence_of_fewer_than_eight_distinct_words_is_not_enough_to_propose() -> None:
    assert not enough_words({})
    assert not enough_words({f"w{i}": 1.0 for i in range(MIN_TERMS - 1)})
    assert enough_words({f"w{i}": 1.0 for i in range(MIN_TERMS)})
