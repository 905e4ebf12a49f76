"""Tool arguments: coercion, limits and parsing into typed inputs.

Clients often send integers and booleans as strings (`"3"`, `"true"`); those forms are accepted
(ASCII digits alone; true/false in any case). Every other problem is refused with `invalid_input`
naming the field and what it should be.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from typing import Any, Literal, get_args

from thoughtline.domain.thread_names import MAX_DESCRIPTION
from thoughtline.domain.thread_state import DerivedEventKind, TaggedEventKind
from thoughtline.domain.thread_types import TYPE_SETTINGS, TypeSetting
from thoughtline.domain.visible_text import check_label, describe_character, invisible_character, shows_something
from thoughtline.errors import invalid

MAX_THOUGHT_CHARS = 20_000
MAX_NUMBER = 1_000_000
MAX_BRANCH_ID_CHARS = 128
# Branches one sequence may hold: every write result and history header lists them, so an
# unbounded count made a one-thought page megabytes long (probe A §3).
MAX_BRANCHES = 100
# Branch ids a write result lists: the branch written and the newest others (history lists all).
LISTED_BRANCHES = 20
MAX_REQUEST_ID_CHARS = 128
MAX_HISTORY_LIMIT = 100
DEFAULT_HISTORY_LIMIT = 50
MAX_HISTORY_CHARS = 250_000
DEFAULT_HISTORY_CHARS = 60_000
MAX_THREADS_PER_CALL = 16
MAX_KIND_CHARS = 64
MAIN_BRANCH = "main"
PROPOSAL_PREFIX = "prp_"
# A proposal id is prp_ and at most 18 digits: the one bound the tools' pattern, import's counter
# and the store's issuing all keep, so every id the store lists can be accepted or rejected.
PROPOSAL_ID_DIGITS = 18
MAX_PROPOSAL_ID = 10**PROPOSAL_ID_DIGITS - 1
# Thought-level events a caller may tag (SPEC §5.3); `conclusion` and `update` are derived only.
EVENT_KINDS: tuple[str, ...] = get_args(TaggedEventKind)
DERIVED_EVENT_KINDS: tuple[str, ...] = get_args(DerivedEventKind)

_TYPE_SETTING_OF: dict[str, TypeSetting] = {kind: kind for kind in get_args(TypeSetting)}

SEQUENCE_ID_RE = re.compile(r"^seq_[0-9a-f]{32}$")
# ASCII digits only and nothing around them: `\d` and int() also read other scripts' digits
# (Arabic-Indic "\u0661", fullwidth "\uff15") and surrounding whitespace, none of which is the
# string form "3" a client means to send.
_INT_RE = re.compile(r"[0-9]{1,12}")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")


def _missing(field: str, hint: str) -> Exception:
    return invalid(f"'{field}' is required: {hint}.")


def coerce_int(args: Mapping[str, Any], field: str, *, low: int = 1, high: int = MAX_NUMBER) -> int | None:
    """An optional integer field; accepts ints, integral floats and digit strings."""
    value = sent = args.get(field)
    if value is None:
        return None
    if isinstance(value, bool):
        raise invalid(f"'{field}' must be a whole number from {low} to {high}, not a boolean.")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and _INT_RE.fullmatch(value):
        value = int(value)
    if not isinstance(value, int):
        raise invalid(
            f"'{field}' must be a whole number from {low} to {high}, as a number or a string of the digits 0-9 "
            f'alone ("3"); got {_describe(value)}.'
        )
    if not low <= value <= high:
        raise invalid(f"'{field}' must be from {low} to {high}; got {_clipped_number(sent)}.")
    return value


def _clipped_number(value: object) -> str:
    """A refused number as sent, cut to 20 characters: a 4,000-digit value must not fill the error."""
    try:
        shown = str(value)
    except ValueError:  # an int past Python's digit limit for str() (sys.get_int_max_str_digits)
        return "a number too long to show"
    return shown if len(shown) <= 20 else shown[:20] + "…"


def coerce_bool(args: Mapping[str, Any], field: str) -> bool | None:
    """An optional boolean field; accepts true/false and the strings "true"/"false" in any case ("True")."""
    value = args.get(field)
    if value is None or isinstance(value, bool):
        return value
    # Case is forgiven (Python-minded clients send "True"); padding is not, as for numbers.
    if isinstance(value, str) and value.isascii() and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise invalid(
        f"'{field}' must be true or false, as a boolean or that word alone in a string; got {_describe(value)}."
    )


def coerce_str(args: Mapping[str, Any], field: str, *, max_chars: int, allow_control: bool = False) -> str | None:
    """An optional non-empty string field with a length limit."""
    value = args.get(field)
    if value is None:
        return None
    if not isinstance(value, str):
        raise invalid(f"'{field}' must be a string; got {_describe(value)}.")
    if not value.strip():
        raise invalid(f"'{field}' is empty; send a value or leave the field out.")
    if len(value) > max_chars:
        raise invalid(f"'{field}' is {len(value)} characters; the limit is {max_chars}, shorten it.")
    if not allow_control and _CONTROL_RE.search(value):
        raise invalid(f"'{field}' contains control characters; use printable text.")
    return value


def coerce_search_text(args: Mapping[str, Any], field: str, *, max_chars: int) -> str | None:
    """An optional text to search for: a string with at least one visible character.

    A query of only zero-width spaces or bidi controls is empty to a person, yet the vector side
    would still find its "nearest" thoughts and report them as matches.
    """
    value = coerce_str(args, field, max_chars=max_chars)
    if value is not None and not shows_something(value):
        # Not whitespace alone (coerce_str refused that): an invisible character, or else a combining mark.
        hidden = invisible_character(value) or value.strip()[0]
        raise invalid(
            f"'{field}' is empty to a reader: besides whitespace it holds only characters that show nothing, "
            f"such as {describe_character(hidden)}; send words to search for."
        )
    return value


_FIRST_INSTANT_MS = int(datetime(1, 1, 1, tzinfo=UTC).timestamp() * 1000)
_LAST_INSTANT_MS = int(datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC).timestamp() * 1000)


def parse_instant(args: Mapping[str, Any], field: str, *, end_of_day: bool = False) -> int | None:
    """An optional ISO-8601 date or time field as epoch milliseconds; no zone means UTC.

    With `end_of_day` (an inclusive upper bound such as a search's `until`) a date without a
    time stands for that day's last millisecond, so "until 2026-12-03" includes the 3rd.
    """
    raw = coerce_str(args, field, max_chars=64)
    if raw is None:
        return None
    text = raw.strip()
    if end_of_day:
        try:
            day = date.fromisoformat(text)
        except ValueError:
            pass  # not a bare date: read as a time below
        else:
            return int(datetime.combine(day, time.max, tzinfo=UTC).timestamp() * 1000)
    # Python 3.11's fromisoformat reads a trailing Z, but not a lowercase z; RFC 3339 allows both.
    try:
        parsed = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    except ValueError:
        raise invalid(
            f"'{field}' must be an ISO-8601 date or time such as 2026-03-01 or 2026-03-01T12:00:00Z; got {text[:40]!r}."
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    ms = int(parsed.timestamp() * 1000)
    # An offset can push the first or last day of the calendar outside it in UTC
    # (0001-01-01T00:00:00+23:59), where no answer could print the instant back.
    if not _FIRST_INSTANT_MS <= ms <= _LAST_INSTANT_MS:
        raise invalid(
            f"'{field}' is {text[:40]!r}, which in UTC falls outside the years 1-9999; send a time inside them."
        )
    return ms


def coerce_sequence_id(args: Mapping[str, Any], field: str) -> str | None:
    """An optional sequence id; must look like the ids this server hands out."""
    value = coerce_str(args, field, max_chars=64)
    if value is not None and not SEQUENCE_ID_RE.match(value):
        raise invalid(
            f"'{field}' must be a sequence id as returned by sequentialthinking (seq_ followed by 32 hex "
            "characters); omit it to start a new sequence."
        )
    return value


def require_sequence_id(args: Mapping[str, Any], field: str = "sequenceId") -> str:
    """A required sequence id."""
    value = coerce_sequence_id(args, field)
    if value is None:
        raise _missing(field, "the id sequentialthinking returned (seq_ followed by 32 hex characters)")
    return value


def coerce_branch_id(args: Mapping[str, Any], field: str, *, allow_main: bool, stored: bool = False) -> str | None:
    """An optional branch id; `main` is reserved for the main path.

    A written id must read as typed (`check_label`: no edge whitespace, no character that shows
    nothing), so `" x "` and `"x"` cannot be two branches. `stored` is for a filter naming a branch
    already in the store: earlier versions wrote such ids, and they stay readable.
    """
    value = coerce_str(args, field, max_chars=MAX_BRANCH_ID_CHARS)
    if value is None:
        return None
    if value == MAIN_BRANCH and not allow_main:
        raise invalid(f"'{field}' cannot be 'main': that name is reserved for the main path; pick another.")
    return value if stored else check_label(value, field, "a branch id")


def one_of(value: object, field: str, choices: Sequence[str]) -> str:
    """`value` when it is one of `choices`, else `invalid_input` listing them (the one "must be one of" rule)."""
    if not isinstance(value, str) or value not in choices:
        raise invalid(f"'{field}' must be one of {', '.join(choices)}; got {str(value)[:30]!r}.")
    return value


def optional_one_of(args: Mapping[str, Any], field: str, choices: Sequence[str]) -> str | None:
    """An optional field that must be one of `choices` when present."""
    value = args.get(field)
    return None if value is None else one_of(value, field, choices)


def parse_thread_type(value: object, field: str = "type") -> TypeSetting:
    """A thread type a user sets: work, case, relationship or topic, or auto (derived from its events again)."""
    return _TYPE_SETTING_OF[one_of(value, field, TYPE_SETTINGS)]


def require_confirm(args: Mapping[str, Any], why: str) -> None:
    """A destructive call needs `confirm: true` (or the string "true"); `why` says what it destroys."""
    confirm = args.get("confirm")
    if confirm is not True and confirm != "true":
        raise invalid(f"'confirm' must be true: {why}, so it must be asked for explicitly.")


def parse_description(args: Mapping[str, Any], *, required: bool) -> str | None:
    """A thread's description (≤ 2,000 printable characters, newlines fine), stripped; None when absent."""
    value = args.get("description")
    if value is None:
        if required:
            raise invalid("'description' is required: a sentence or two on what the thread is about.")
        return None
    if not isinstance(value, str):
        raise invalid("'description' must be a string: what the thread is about.")
    if len(value) > MAX_DESCRIPTION:
        raise invalid(f"'description' is {len(value)} characters; the limit is {MAX_DESCRIPTION}, shorten it.")
    if any(ch not in "\n\t" and (ord(ch) < 32 or ord(ch) == 0x7F) for ch in value):
        raise invalid("'description' contains control characters; use printable text (newlines are fine).")
    return value.strip()


def parse_proposal_id(args: Mapping[str, Any]) -> int:
    """The row a `proposalId` (prp_123, from review_proposals 'list') names."""
    raw = coerce_str(args, "proposalId", max_chars=40)
    if raw is None:
        raise invalid("'proposalId' is required: the id review_proposals action 'list' returned.")
    text = raw.strip()
    digits = text[len(PROPOSAL_PREFIX) :] if text.startswith(PROPOSAL_PREFIX) else ""
    if not digits.isascii() or not digits.isdigit() or len(digits) > PROPOSAL_ID_DIGITS or int(digits) == 0:
        raise invalid(f"'proposalId' must look like prp_123 (from action 'list'); got {raw[:40]!r}.")
    return int(digits)


def reject_unknown(args: Mapping[str, Any], allowed: frozenset[str]) -> None:
    """Refuse misspelled or unsupported argument names instead of silently ignoring them.

    A null is the field left out (strict-mode clients send null for every unset field, including
    fields another action of the same tool takes), so only names with a value count.
    """
    unknown = sorted({name for name, value in args.items() if value is not None} - allowed)
    if unknown:
        expected = f"expected some of: {', '.join(sorted(allowed))}" if allowed else "this takes no arguments"
        raise invalid(
            f"unknown argument{'s' if len(unknown) > 1 else ''} {', '.join(repr(u) for u in unknown)}; {expected}."
        )


def _describe(value: Any) -> str:
    if isinstance(value, str):
        return f"the string {value[:20]!r}" + ("…" if len(value) > 20 else "")
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return repr(value)[:30]


@dataclass(frozen=True)
class ThoughtInput:
    """A validated `sequentialthinking` call."""

    thought: str
    next_thought_needed: bool
    thought_number: int
    total_thoughts: int
    sequence_id: str | None = None
    is_revision: bool | None = None
    revises_thought: int | None = None
    branch_from_thought: int | None = None
    branch_id: str | None = None
    branch_from_branch_id: str | None = None
    needs_more_thoughts: bool | None = None
    request_id: str | None = None
    threads: tuple[str, ...] = ()
    parent_sequence_id: str | None = None
    kind: str | None = None
    event: str | None = None


THOUGHT_FIELDS = frozenset(
    {
        "thought",
        "nextThoughtNeeded",
        "thoughtNumber",
        "totalThoughts",
        "sequenceId",
        "isRevision",
        "revisesThought",
        "branchFromThought",
        "branchId",
        "branchFromBranchId",
        "needsMoreThoughts",
        "requestId",
        "threads",
        "parentSequenceId",
        "kind",
        "event",
    }
)


def _label(value: str | None, field: str, what: str) -> str | None:
    return None if value is None else check_label(value, field, what)


def parse_thought(args: Mapping[str, Any]) -> ThoughtInput:
    """Validate and coerce `sequentialthinking` arguments."""
    reject_unknown(args, THOUGHT_FIELDS)
    thought = args.get("thought")
    if thought is None:
        raise _missing("thought", "the text of this reasoning step")
    if not isinstance(thought, str):
        raise invalid(f"'thought' must be a string; got {_describe(thought)}.")
    if not thought.strip():
        raise invalid("'thought' is empty; send the text of this reasoning step.")
    if not shows_something(thought):
        # A thought of zero-width or blank characters is empty to a reader (and becomes a blank title).
        raise invalid(
            "'thought' shows nothing: besides whitespace it holds only characters that render blank, such as "
            f"{describe_character(invisible_character(thought) or thought.strip()[0])}; send the text of this "
            "reasoning step."
        )
    if len(thought) > MAX_THOUGHT_CHARS:
        raise invalid(
            f"'thought' is {len(thought)} characters; the limit is {MAX_THOUGHT_CHARS}. Split it into several thoughts."
        )
    next_needed = coerce_bool(args, "nextThoughtNeeded")
    if next_needed is None:
        raise _missing("nextThoughtNeeded", "true if another thought follows, false if this one ends it")
    number = coerce_int(args, "thoughtNumber")
    if number is None:
        raise _missing("thoughtNumber", "the number of this thought, starting at 1")
    total = coerce_int(args, "totalThoughts")
    if total is None:
        raise _missing("totalThoughts", "your current estimate of how many thoughts this takes")
    threads = _parse_threads(args.get("threads"))
    return ThoughtInput(
        thought=thought,
        next_thought_needed=next_needed,
        thought_number=number,
        total_thoughts=total,
        sequence_id=coerce_sequence_id(args, "sequenceId"),
        is_revision=coerce_bool(args, "isRevision"),
        revises_thought=coerce_int(args, "revisesThought"),
        branch_from_thought=coerce_int(args, "branchFromThought"),
        branch_id=coerce_branch_id(args, "branchId", allow_main=False),
        branch_from_branch_id=coerce_branch_id(args, "branchFromBranchId", allow_main=True),
        needs_more_thoughts=coerce_bool(args, "needsMoreThoughts"),
        request_id=coerce_str(args, "requestId", max_chars=MAX_REQUEST_ID_CHARS),
        threads=threads,
        parent_sequence_id=coerce_sequence_id(args, "parentSequenceId"),
        kind=_label(coerce_str(args, "kind", max_chars=MAX_KIND_CHARS), "kind", "a kind"),
        event=parse_event(args.get("event")),
    )


def parse_event(value: Any) -> str | None:
    """An optional thought-level event kind; the derived kinds are refused as input."""
    if value is None:
        return None
    if isinstance(value, str) and value in EVENT_KINDS:
        return value
    if value in DERIVED_EVENT_KINDS:
        raise invalid(
            f"'event' cannot be {value!r}: conclusion and update are derived (a final thought is a conclusion, "
            f"a revision an update); omit 'event' or use one of: {', '.join(EVENT_KINDS)}."
        )
    raise invalid(f"'event' must be one of {', '.join(EVENT_KINDS)}; got {_describe(value)}.")


def _parse_threads(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise invalid("'threads' must be a list of existing thread names, e.g. [\"billing-migration\"].")
    if len(value) > MAX_THREADS_PER_CALL:
        raise invalid(f"'threads' names {len(value)} threads; at most {MAX_THREADS_PER_CALL} per call.")
    return tuple(dict.fromkeys(v.strip() for v in value))


@dataclass(frozen=True)
class HistoryInput:
    """A validated `get_thought_history` call."""

    sequence_id: str
    cursor: str | None
    limit: int
    order: Literal["asc", "desc"]
    branch_id: str | None
    max_characters: int


HISTORY_FIELDS = frozenset({"sequenceId", "cursor", "limit", "order", "branchId", "maxCharacters"})


def parse_history(args: Mapping[str, Any]) -> HistoryInput:
    """Validate `get_thought_history` arguments; limits are refused, never clamped."""
    reject_unknown(args, HISTORY_FIELDS)
    sequence_id = coerce_sequence_id(args, "sequenceId")
    if sequence_id is None:
        raise _missing("sequenceId", "the id returned by sequentialthinking")
    # null is the field left out, as for every optional field (clients in strict modes send null).
    order = "asc" if args.get("order") is None else args["order"]
    if order not in ("asc", "desc"):
        raise invalid(f"'order' must be 'asc' (oldest first) or 'desc' (newest first); got {_describe(order)}.")
    return HistoryInput(
        sequence_id=sequence_id,
        cursor=coerce_str(args, "cursor", max_chars=1024),
        limit=coerce_int(args, "limit", high=MAX_HISTORY_LIMIT) or DEFAULT_HISTORY_LIMIT,
        order="desc" if order == "desc" else "asc",
        branch_id=coerce_branch_id(args, "branchId", allow_main=True, stored=True),
        max_characters=coerce_int(args, "maxCharacters", high=MAX_HISTORY_CHARS) or DEFAULT_HISTORY_CHARS,
    )


@dataclass(frozen=True)
class DeleteInput:
    """A validated `delete_thought_sequence` call."""

    sequence_id: str


def parse_delete(args: Mapping[str, Any]) -> DeleteInput:
    """Deletion needs the id and an explicit `confirm: true`."""
    reject_unknown(args, frozenset({"sequenceId", "confirm"}))
    sequence_id = coerce_sequence_id(args, "sequenceId")
    if sequence_id is None:
        raise _missing("sequenceId", "the id of the sequence to delete")
    confirm = args.get("confirm")
    if confirm is not True and confirm != "true":
        raise invalid("'confirm' must be true: deletion is permanent, so it must be asked for explicitly.")
    return DeleteInput(sequence_id=sequence_id)
