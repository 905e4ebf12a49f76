"""The pure proposal rules: thread and sequence vectors, the blend, and the threshold-plus-margin pick."""

from __future__ import annotations

import numpy as np
import pytest

from thoughtline.library.proposals import (
    Tuning,
    best_thread,
    member_weight,
    pick,
    sequence_vector,
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


@pytest.mark.parametrize(
    ("sims", "expected"),
    [
        ({1: 0.60, 2: 0.30}, (1, 0.60)),
        ({1: 0.60, 2: 0.59}, None),  # too close to the runner-up: a near miss
        ({1: 0.40, 2: 0.10}, None),  # below the threshold
        ({7: 0.50}, (7, 0.50)),  # one thread: the threshold alone decides
        ({}, None),
    ],
)
def test_the_best_thread_needs_the_threshold_and_a_margin_over_the_runner_up(
    sims: dict[int, float], expected: tuple[int, float] | None
) -> None:
    assert best_thread(sims, Tuning(threshold=0.45, margin=0.05, blend_k=8.0)) == expected


def test_the_evidence_is_the_thought_closest_to_the_thread() -> None:
    threads = {1: v(1, 0, 0), 2: v(0, 0, 1)}
    thoughts = np.stack([v(0.2, 1, 0), v(1, 0.1, 0), v(0.5, 0.5, 0)])
    chosen = pick(threads, [11, 12, 13], thoughts, Tuning(threshold=0.5, margin=0.05, blend_k=8.0))
    assert chosen is not None
    assert (chosen.thread, chosen.evidence_thought) == (1, 12)
