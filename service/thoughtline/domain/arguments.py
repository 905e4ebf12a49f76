"""Tool arguments: the tools' limits, their ids, and parsing each call into a typed input.

Owns what the tools accept: sequence, branch and proposal ids, thread types and descriptions, and
the `sequentialthinking`, `get_thought_history` and `delete_thought_sequence` inputs. Reading one
field as a number, boolean, string or instant (and refusing it) is `domain/coercion.py`'s.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from thoughtline.domain.coercion import (
    coerce_bool,
    coerce_int,
    coerce_str,
    describe_value,
    one_of,
    reject_unknown,
)
from thoughtline.domain.thread_names import MAX_DESCRIPTION, MAX_NAME
from thoughtline.domain.thread_state import DerivedEventKind, TaggedEventKind
from thoughtline.domain.thread_types import TYPE_SETTINGS, TypeSetting
from thoughtline.domain.visible_text import check_label, describe_character, invisible_character, shows_something
from thoughtline.errors import invalid

MAX_THOUGHT_CHARS = 20_000
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


def _missing(field: str, hint: str) -> Exception:
    return invalid(f"'{field}' is required: {hint}.")


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


def parse_thread_type(value: object, field: str = "type") -> TypeSetting:
    """A thread type a user sets: work, case, relationship or topic, or auto (derived from its events again)."""
    return _TYPE_SETTING_OF[one_of(value, field, TYPE_SETTINGS)]


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
        raise invalid(f"'thought' must be a string; got {describe_value(thought)}.")
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
    raise invalid(f"'event' must be one of {', '.join(EVENT_KINDS)}; got {describe_value(value)}.")


def _parse_threads(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    # On purpose: clients send a lone name as a string as often as in a list, and it can mean only
    # that one thread (the schema's description says so).
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise invalid("'threads' must be a list of existing thread names, e.g. [\"billing-migration\"].")
    if len(value) > MAX_THREADS_PER_CALL:
        raise invalid(f"'threads' names {len(value)} threads; at most {MAX_THREADS_PER_CALL} per call.")
    # Said here, not as "does not exist ... create it first": no thread can have such a name.
    too_long = next((v for v in value if len(v.strip()) > MAX_NAME), None)
    if too_long is not None:
        raise invalid(
            f"'threads' names a thread of {len(too_long.strip())} characters; thread names are at most "
            f"{MAX_NAME} characters, so no thread has this one; name an existing thread or drop it from 'threads'."
        )
    return tuple(dict.fromkeys(v.strip() for v in value))


@dataclass(frozen=True)
class HistoryInput:
    """A validated `get_thought_history` call."""

    sequence_id: str
    cursor: str | None
    limit: int
    # None for either: not sent. Without a cursor that is ascending order and every thought; with
    # one, the order and branch the cursor was issued for (it carries both).
    order: Literal["asc", "desc"] | None
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
    order = args.get("order")
    if order not in (None, "asc", "desc"):
        raise invalid(f"'order' must be 'asc' (oldest first) or 'desc' (newest first); got {describe_value(order)}.")
    return HistoryInput(
        sequence_id=sequence_id,
        cursor=coerce_str(args, "cursor", max_chars=1024),
        limit=coerce_int(args, "limit", high=MAX_HISTORY_LIMIT) or DEFAULT_HISTORY_LIMIT,
        order=None if order is None else "desc" if order == "desc" else "asc",
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
