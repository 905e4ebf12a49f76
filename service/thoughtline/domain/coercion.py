"""Field coercion: reading one tool argument as a number, boolean, string, instant or choice.

Clients often send integers and booleans as strings (`"3"`, `"true"`); those forms are accepted
(ASCII digits alone; true/false in any case). Every other problem is refused with `invalid_input`
naming the field and what it should be. The tools' own arguments are in `domain/arguments.py`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, time
from typing import Any

from thoughtline.domain.visible_text import describe_character, invisible_character, shows_something
from thoughtline.errors import invalid

MAX_NUMBER = 1_000_000

# ASCII digits only and nothing around them: `\d` and int() also read other scripts' digits
# (Arabic-Indic "\u0661", fullwidth "\uff15") and surrounding whitespace, none of which is the
# string form "3" a client means to send.
_INT_RE = re.compile(r"[0-9]{1,12}")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")


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
            f'alone ("3"); got {describe_value(value)}.'
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
        f"'{field}' must be true or false, as a boolean or that word alone in a string; got {describe_value(value)}."
    )


def coerce_str(args: Mapping[str, Any], field: str, *, max_chars: int, allow_control: bool = False) -> str | None:
    """An optional non-empty string field with a length limit."""
    value = args.get(field)
    if value is None:
        return None
    if not isinstance(value, str):
        raise invalid(f"'{field}' must be a string; got {describe_value(value)}.")
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


def one_of(value: object, field: str, choices: Sequence[str]) -> str:
    """`value` when it is one of `choices`, else `invalid_input` listing them (the one "must be one of" rule)."""
    if value is None:
        raise invalid(f"'{field}' is required: one of {', '.join(choices)}.")
    if not isinstance(value, str) or value not in choices:
        got = f"{value[:30]!r}" if isinstance(value, str) else describe_value(value)
        raise invalid(f"'{field}' must be one of {', '.join(choices)}; got {got}.")
    return value


def optional_one_of(args: Mapping[str, Any], field: str, choices: Sequence[str]) -> str | None:
    """An optional field that must be one of `choices` when present."""
    value = args.get(field)
    return None if value is None else one_of(value, field, choices)


def require_confirm(args: Mapping[str, Any], why: str) -> None:
    """A destructive call needs `confirm: true` (or the string "true"); `why` says what it destroys."""
    confirm = args.get("confirm")
    if confirm is not True and confirm != "true":
        raise invalid(f"'confirm' must be true: {why}, so it must be asked for explicitly.")


def reject_unknown(args: Mapping[str, Any], allowed: frozenset[str]) -> None:
    """Refuse misspelled or unsupported argument names instead of silently ignoring them.

    A null is the field left out (strict-mode clients send null for every unset field, including
    fields another action of the same tool takes), so only names with a value count.
    """
    unknown = sorted({name for name, value in args.items() if value is not None} - allowed)
    if unknown:
        expected = f"expected some of: {', '.join(sorted(allowed))}" if allowed else "this takes no arguments"
        # Names are cut and counted as values are: a client can send any number of names of any length.
        named = ", ".join(_clipped_name(u) for u in unknown[:_NAMES_SHOWN])
        more = f" and {len(unknown) - _NAMES_SHOWN} more" if len(unknown) > _NAMES_SHOWN else ""
        raise invalid(f"unknown argument{'s' if len(unknown) > 1 else ''} {named}{more}; {expected}.")


# How many unknown argument names an error lists, and how much of each it shows.
_NAMES_SHOWN = 5
_NAME_CHARS = 40


def _clipped_name(name: str) -> str:
    return repr(name[:_NAME_CHARS]) + ("…" if len(name) > _NAME_CHARS else "")


def describe_value(value: Any) -> str:
    """How an error names a refused value: a string cut to 20 characters, else its kind or repr."""
    if isinstance(value, str):
        return f"the string {value[:20]!r}" + ("…" if len(value) > 20 else "")
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return repr(value)[:30]
