"""Argument coercion and limits: string forms accepted, everything else refused by name."""

from __future__ import annotations

from typing import Any

import pytest

from thoughtline.domain.arguments import parse_delete, parse_history, parse_thought
from thoughtline.domain.coercion import parse_instant
from thoughtline.errors import DomainError

BASE: dict[str, Any] = {"thought": "x", "nextThoughtNeeded": True, "thoughtNumber": 1, "totalThoughts": 2}
SEQ = "seq_" + "a" * 32


def refused(fn: Any, args: dict[str, Any]) -> str:
    with pytest.raises(DomainError) as err:
        fn(args)
    assert err.value.code == "invalid_input"
    return err.value.message


def test_string_numbers_and_booleans_are_accepted() -> None:
    inp = parse_thought({**BASE, "thoughtNumber": "3", "totalThoughts": "4", "nextThoughtNeeded": "false"})
    assert (inp.thought_number, inp.total_thoughts, inp.next_thought_needed) == (3, 4, False)
    assert parse_thought({**BASE, "isRevision": "TRUE", "revisesThought": "1"}).is_revision is True
    assert parse_thought({**BASE, "nextThoughtNeeded": "True"}).next_thought_needed is True
    assert parse_thought({**BASE, "thoughtNumber": 2.0}).thought_number == 2


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("thoughtNumber", "\u0661"),  # ARABIC-INDIC DIGIT ONE: int() reads it as 1
        ("totalThoughts", "\uff15\n"),  # fullwidth 5 and a newline
        ("totalThoughts", " 4 "),
        ("thoughtNumber", "+3"),
        ("revisesThought", "\u00b2"),  # superscript two: isdigit() says yes
        ("nextThoughtNeeded", " TRUE "),
        ("nextThoughtNeeded", "false\n"),
        ("isRevision", "\uff54rue"),  # fullwidth t
    ],
)
def test_string_numbers_and_booleans_are_ascii_digits_or_words_with_nothing_around_them(field: str, value: str) -> None:
    message = refused(parse_thought, {**BASE, "isRevision": True, "revisesThought": 1, field: value})
    assert f"'{field}'" in message
    assert repr(value) in message


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("thoughtNumber", 0),
        ("thoughtNumber", 1_000_001),
        ("thoughtNumber", "three"),
        ("thoughtNumber", True),
        ("thoughtNumber", 1.5),
        ("totalThoughts", None),
        ("nextThoughtNeeded", "yes"),
        ("nextThoughtNeeded", 1),
        ("thought", ""),
        ("thought", "   "),
        ("thought", 5),
        ("thought", "x" * 20_001),
        ("branchId", "b" * 129),
        ("branchId", "main"),
        ("branchId", "bad\nname"),
        ("sequenceId", "seq_123"),
        ("sequenceId", "../../etc/passwd"),
        ("requestId", ""),
        ("threads", "  "),
        ("threads", [1, 2]),
    ],
)
def test_bad_thought_arguments_are_refused_naming_the_field(field: str, value: Any) -> None:
    args = {**BASE, field: value}
    if value is None:
        del args[field]
    assert field in refused(parse_thought, args)


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("\u200b", "U+200B (ZERO WIDTH SPACE), a character that shows nothing"),
        ("a\u202eb", "U+202E (RIGHT-TO-LEFT OVERRIDE)"),
        ("alt\u00ad", "U+00AD (SOFT HYPHEN)"),
        (" x ", "starts or ends with whitespace; remove it ('x')"),
        ("x\u00a0", "starts or ends with whitespace"),
    ],
)
@pytest.mark.parametrize("field", ["branchId", "branchFromBranchId"])
def test_a_written_branch_id_must_read_as_typed(field: str, value: str, said: str) -> None:
    # " x " beside "x" would be two branches that print alike; "\u200b" one that prints as nothing.
    message = refused(parse_thought, {**BASE, "branchId": "b", "branchFromThought": 1, field: value})
    assert message.startswith(f"'{field}' ")
    assert said in message


def test_a_history_filter_still_names_a_branch_stored_before_branch_ids_had_to_read_as_typed() -> None:
    assert parse_history({"sequenceId": SEQ, "branchId": " x "}).branch_id == " x "


def test_unknown_arguments_are_refused_not_ignored() -> None:
    assert "'branchID'" in refused(parse_thought, {**BASE, "branchID": "x"})


def test_thought_of_exactly_the_limit_is_accepted() -> None:
    assert len(parse_thought({**BASE, "thought": "y" * 20_000}).thought) == 20_000


def test_history_limits_are_refused_not_clamped() -> None:
    assert "limit" in refused(parse_history, {"sequenceId": SEQ, "limit": 101})
    assert "maxCharacters" in refused(parse_history, {"sequenceId": SEQ, "maxCharacters": 250_001})
    assert "order" in refused(parse_history, {"sequenceId": SEQ, "order": "newest"})
    page = parse_history({"sequenceId": SEQ})
    # An order left out stays None: ascending without a cursor, the cursor's own order with one.
    assert (page.limit, page.max_characters, page.order) == (50, 60_000, None)
    assert parse_history({"sequenceId": SEQ, "order": "desc"}).order == "desc"


@pytest.mark.parametrize("confirm", [None, False, "yes", 1, "TRUE ", []])
def test_delete_requires_an_explicit_true(confirm: Any) -> None:
    args: dict[str, Any] = {"sequenceId": SEQ, "confirm": confirm}
    assert "confirm" in refused(parse_delete, args)


def test_delete_accepts_true_and_the_string_true() -> None:
    assert parse_delete({"sequenceId": SEQ, "confirm": True}).sequence_id == SEQ
    assert parse_delete({"sequenceId": SEQ, "confirm": "true"}).sequence_id == SEQ


@pytest.mark.parametrize(
    ("sent", "ms"),
    [
        ("2026-03-01", 1_772_323_200_000),
        ("2026-03-01T12:00:00Z", 1_772_366_400_000),
        ("2026-03-01T12:00:00z", 1_772_366_400_000),
        ("2026-03-01T14:00:00+02:00", 1_772_366_400_000),
        (" 2026-03-01T12:00:00 ", 1_772_366_400_000),
    ],
)
def test_an_instant_is_iso_8601_and_a_missing_zone_means_utc(sent: str, ms: int) -> None:
    assert parse_instant({"since": sent}, "since") == ms


def test_an_absent_instant_is_none() -> None:
    assert parse_instant({}, "since") is None


@pytest.mark.parametrize("sent", ["yesterday", "2026-13-01", "", 1772323200, "2026-03-01T25:00"])
def test_a_bad_instant_is_refused_naming_the_field(sent: Any) -> None:
    with pytest.raises(DomainError, match="'until'") as refused:
        parse_instant({"until": sent}, "until")
    assert refused.value.code == "invalid_input"


@pytest.mark.parametrize("body", ["\u200b\u200b", "\u115f" * 4, "\u3164 \u3164", "\u2800", "\uffa0", "\u0301\u0301"])
def test_a_thought_that_renders_blank_is_refused_like_an_empty_one(body: str) -> None:
    assert "'thought' shows nothing" in refused(parse_thought, {**BASE, "thought": body})


@pytest.mark.parametrize("kind", ["\u200b", " plan ", "\u3164", "\u0301"])
def test_a_kind_follows_the_visible_label_rule(kind: str) -> None:
    assert "'kind'" in refused(parse_thought, {**BASE, "kind": kind})


@pytest.mark.parametrize("branch", ["\u3164\u3164", "\u115f", "\u2800\u2800", "\u0301\u0301"])
def test_a_branch_id_that_renders_blank_is_refused(branch: str) -> None:
    args = {**BASE, "sequenceId": SEQ, "branchId": branch, "branchFromThought": 1}
    assert "'branchId'" in refused(parse_thought, args)


def test_text_with_marks_on_letters_and_emoji_selectors_still_reads() -> None:
    inp = parse_thought({**BASE, "thought": "cafe\u0301 \u2764\ufe0f", "kind": "re\u0301sume\u0301"})
    assert inp.kind == "re\u0301sume\u0301"
