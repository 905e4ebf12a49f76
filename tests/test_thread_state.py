"""The pure thread rules: event kinds, open items, the state reducer's precedence, lifecycle boundaries."""

from __future__ import annotations

from typing import get_args

import pytest
from hypothesis import given
from hypothesis import strategies as st

from thoughtline.domain.thread_state import (
    DAY_MS,
    Event,
    EventKind,
    Lifecycle,
    State,
    clip,
    event_kind,
    first_sentence,
    headline,
    lifecycle,
    open_items,
    reduce_state,
)


def ev(kind: EventKind, seq: str = "a", at: int = 0, text: str = "") -> Event:
    return Event(kind, at, seq, 1, None, text or kind)


def timeline(*specs: str) -> list[Event]:
    """`"blocker@a"` = a blocker in sequence a; events get increasing times in the order given."""
    events = []
    for i, spec in enumerate(specs):
        kind, _, seq = spec.partition("@")
        events.append(ev(kind, seq or "a", at=i))  # type: ignore[arg-type]  # the table holds valid kinds
    return events


@pytest.mark.parametrize(
    ("explicit", "final", "revision", "expected"),
    [
        (None, False, False, None),
        (None, True, False, "conclusion"),
        (None, False, True, "update"),
        (None, True, True, "conclusion"),
        ("decision", True, True, "decision"),
        ("observation", False, False, "observation"),
    ],
)
def test_a_thought_is_an_event_by_its_tag_else_by_being_final_else_a_revision(
    explicit: str | None, final: bool, revision: bool, expected: str | None
) -> None:
    assert event_kind(explicit, final, revision) == expected


@pytest.mark.parametrize(
    ("specs", "blockers", "questions"),
    [
        (("blocker@a", "blocker@b", "blocker_cleared@a"), ["b"], []),
        (("blocker@a", "blocker@b", "blocker_cleared@c"), ["a"], []),
        (("blocker@a", "blocker@a", "blocker_cleared@a"), ["a"], []),
        (("blocker_cleared@a", "blocker@a"), ["a"], []),
        (("question@a", "question@b", "answer@b"), [], ["a"]),
        (("question@a", "answer@z", "answer@z"), [], []),
        (("blocker@a", "answer@a"), ["a"], []),
    ],
    ids=[
        "clear-closes-same-sequence",
        "clear-falls-back-to-thread-latest",
        "clear-closes-only-the-latest",
        "clear-before-any-blocker-does-nothing",
        "answer-closes-same-sequence",
        "extra-answers-are-harmless",
        "an-answer-does-not-clear-a-blocker",
    ],
)
def test_clearing_and_answering_close_the_latest_open_item_of_the_sequence_else_the_thread(
    specs: tuple[str, ...], blockers: list[str], questions: list[str]
) -> None:
    items = open_items(timeline(*specs))
    assert [b.sequence_id for b in items.blockers] == blockers
    assert [q.sequence_id for q in items.questions] == questions


def test_the_thread_wide_fallback_closes_the_most_recent_blocker() -> None:
    events = [ev("blocker", "a", 1, "first"), ev("blocker", "b", 2, "second"), ev("blocker_cleared", "c", 3)]
    assert [b.text for b in open_items(events).blockers] == ["first"]


@pytest.mark.parametrize(
    ("specs", "life", "expected"),
    [
        # resolved: the latest of resolution/blocker/question/setback is a resolution, nothing open
        (("blocker", "blocker_cleared", "resolution"), "active", "resolved"),
        (("resolution", "conclusion", "milestone"), "dormant", "resolved"),
        # a resolution with a blocker still open is blocked, not resolved
        (("blocker", "resolution"), "active", "blocked"),
        # a later setback outranks an earlier resolution
        (("resolution", "setback"), "active", "uncertain"),
        # blocked beats uncertain
        (("question", "blocker"), "active", "blocked"),
        (("blocker", "setback"), "closed", "blocked"),
        # uncertain: an open question, or the latest event of any kind is a setback
        (("question",), "active", "uncertain"),
        (("question",), "dormant", "uncertain"),
        (("milestone", "setback"), "dormant", "uncertain"),
        (("setback", "observation"), "active", "ongoing"),
        # stable: dormant or closed with nothing open
        (("decision",), "dormant", "stable"),
        ((), "closed", "stable"),
        (("question", "answer"), "dormant", "stable"),
        # ongoing: everything else
        ((), "active", "ongoing"),
        (("decision", "conclusion"), "active", "ongoing"),
        (("question", "answer"), "active", "ongoing"),
    ],
)
def test_state_is_the_first_matching_rule_in_precedence_order(
    specs: tuple[str, ...], life: Lifecycle, expected: State
) -> None:
    assert reduce_state(timeline(*specs), life) == expected


NOW = 1_800_000_000_000


@pytest.mark.parametrize(
    ("archived", "idle_days", "dormant", "closed", "expected"),
    [
        (False, 0, 14, 45, "active"),
        (False, 13.999, 14, 45, "active"),
        (False, 14, 14, 45, "dormant"),
        (False, 44.999, 14, 45, "dormant"),
        (False, 45, 14, 45, "closed"),
        (False, 400, 14, 45, "closed"),
        (True, 0, 14, 45, "closed"),
        (False, 0.5, 0.5, 1.5, "dormant"),
        (False, 0.49, 0.5, 1.5, "active"),
        (False, 1.5, 0.5, 1.5, "closed"),
        (False, 3, 2, 2, "closed"),
    ],
)
def test_lifecycle_follows_the_idle_time_against_the_dormant_and_closed_periods(
    archived: bool, idle_days: float, dormant: float, closed: float, expected: Lifecycle
) -> None:
    last = NOW - int(idle_days * DAY_MS)
    assert lifecycle(archived, last, NOW, dormant, closed) == expected


@pytest.mark.parametrize(
    ("description", "events", "expected"),
    [
        ("Moving billing to Postgres 16. Owner: me.", [], "Moving billing to Postgres 16."),
        ("No full stop here", [], "No full stop here"),
        ("v1.2 rollout is done! Next?", [], "v1.2 rollout is done!"),
        (
            "",
            [ev("decision", text="Use logical replication"), ev("conclusion", text="Cut over Friday")],
            "Cut over Friday",
        ),
        ("", [ev("conclusion", text="Done"), ev("decision", text="Revisit in May")], "Revisit in May"),
        ("", [ev("observation", text="noise")], "fallback"),
    ],
)
def test_headline_is_the_first_sentence_else_the_latest_conclusion_or_decision(
    description: str, events: list[Event], expected: str
) -> None:
    assert headline(description, events, "fallback") == expected


def test_texts_are_collapsed_and_clipped_with_an_ellipsis() -> None:
    assert clip("a  b\n\nc", 10) == "a b c"
    cut = clip("x" * 300, 280)
    assert len(cut) == 280
    assert cut.endswith("…")
    assert len(headline("y" * 500, [], "f")) == 160
    assert first_sentence("  Hello   world. More ") == "Hello world."


_KINDS: list[EventKind] = list(get_args(EventKind))


def test_the_kinds_are_the_nine_tagged_ones_then_the_two_derived_ones() -> None:
    assert _KINDS[-2:] == ["conclusion", "update"]
    assert len(_KINDS) == len(set(_KINDS)) == 11


@given(
    st.lists(st.tuples(st.sampled_from(_KINDS), st.sampled_from(["a", "b", "c"])), max_size=30),
    st.sampled_from(["active", "dormant", "closed"]),
)
def test_any_timeline_reduces_to_a_state_consistent_with_its_open_items(
    specs: list[tuple[EventKind, str]], life: Lifecycle
) -> None:
    events = [ev(kind, seq, at=i) for i, (kind, seq) in enumerate(specs)]
    items = open_items(events)
    state = reduce_state(events, life)
    opened = sum(e.kind == "blocker" for e in events), sum(e.kind == "question" for e in events)
    assert len(items.blockers) <= opened[0]
    assert len(items.questions) <= opened[1]
    assert (state == "blocked") == bool(items.blockers)
    if state == "resolved":
        assert items.nothing_open
    if state in ("stable", "ongoing"):
        assert items.nothing_open
        assert not events or events[-1].kind != "setback"
    assert state == reduce_state(events, life, items)
