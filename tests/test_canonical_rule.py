"""The canonical-style continuation rule, tested directly as the pure function it is."""

from __future__ import annotations

from thoughtline.domain.canonical import CONTINUE_WINDOW_MS, MAX_COUNTED, Candidate, choose, explain_refusal, fits
from thoughtline.domain.thinking import Status

NOW = 10_000_000_000


def candidate(
    sid: str = "seq_a",
    *,
    status: Status = "active",
    age_ms: int = 1_000,
    highest: int = 2,
    origin: str | None = None,
) -> Candidate:
    return Candidate(sid, status, NOW - age_ms, highest, origin)


def test_the_one_open_recent_sequence_ending_at_n_minus_1_is_continued_with_a_note_naming_it() -> None:
    decision = choose(3, None, [candidate(), candidate("seq_b", highest=5)], NOW)
    assert decision.continued
    assert decision.sequence_id == "seq_a"
    assert decision.note is not None
    assert "seq_a" in decision.note
    assert "Pass sequenceId: seq_a" in decision.note


def test_thought_number_1_always_starts_a_new_sequence_without_a_note() -> None:
    decision = choose(1, None, [candidate(highest=0)], NOW)
    assert not decision.continued
    assert decision.note is None


def test_two_matching_sequences_are_ambiguous_and_start_a_new_one_saying_why() -> None:
    decision = choose(3, None, [candidate("seq_a"), candidate("seq_b")], NOW)
    assert not decision.continued
    assert decision.note is not None
    assert decision.note.startswith("Note: thought 3 started a new sequence")
    assert "2 of your open sequences end at thought 2" in decision.note
    assert "pass its sequenceId" in decision.note


def test_the_note_counts_every_matching_sequence_up_to_the_cap_and_says_more_than_past_it() -> None:
    five = [candidate(f"seq_{n}") for n in range(5)]
    assert "5 of your open sequences end at thought 2" in str(choose(3, None, five, NOW).note)
    at_cap = [candidate(f"seq_{n}") for n in range(MAX_COUNTED)]
    assert f"{MAX_COUNTED} of your open sequences" in str(choose(3, None, at_cap, NOW).note)
    past = [candidate(f"seq_{n}") for n in range(MAX_COUNTED + 1)]
    assert f"more than {MAX_COUNTED} of your open sequences end at thought 2" in str(choose(3, None, past, NOW).note)


def test_no_match_starts_a_new_sequence_and_says_how_to_continue_one() -> None:
    decision = choose(4, None, [], NOW)
    assert not decision.continued
    assert decision.note is not None
    assert "thought 4 started a new sequence" in decision.note
    assert "last 30 minutes" in decision.note


def test_completed_and_abandoned_sequences_are_not_continued_but_paused_ones_are() -> None:
    assert not fits(candidate(status="completed"), 3, None, NOW)
    assert not fits(candidate(status="abandoned"), 3, None, NOW)
    assert fits(candidate(status="paused"), 3, None, NOW)


def test_a_sequence_idle_longer_than_30_minutes_is_not_continued() -> None:
    assert fits(candidate(age_ms=CONTINUE_WINDOW_MS), 3, None, NOW)
    assert not fits(candidate(age_ms=CONTINUE_WINDOW_MS + 1), 3, None, NOW)


def test_only_the_number_right_after_the_highest_one_continues() -> None:
    assert not fits(candidate(highest=2), 2, None, NOW)
    assert not fits(candidate(highest=2), 4, None, NOW)


def test_only_sequences_started_by_the_same_oauth_client_count() -> None:
    assert not fits(candidate(origin="client-a"), 3, "client-b", NOW)
    assert not fits(candidate(origin="client-a"), 3, None, NOW)
    assert not fits(candidate(origin=None), 3, "client-a", NOW)
    decision = choose(3, "client-a", [candidate("seq_a", origin="client-a"), candidate("seq_b")], NOW)
    assert decision.sequence_id == "seq_a"


def test_a_refusal_of_a_call_that_continued_nothing_explains_why() -> None:
    decision = choose(3, None, [], NOW)
    explained = explain_refusal(decision, "thought 1 is not visible.")
    assert explained.startswith("thought 1 is not visible. No sequenceId was sent and none of your open sequences")
    assert explain_refusal(choose(1, None, [], NOW), "as is.") == "as is."


def test_in_strict_mode_even_the_one_fitting_sequence_is_not_continued_and_the_note_says_to_send_the_id() -> None:
    decision = choose(3, None, [candidate()], NOW, strict=True)
    assert not decision.continued
    assert decision.note is not None
    assert "only a sequence whose sequenceId is sent" in decision.note
