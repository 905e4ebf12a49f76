"""Typed reads of one exported record's fields, each refusing with the record's label.

The vocabulary `domain/export_rules.py` states its rules in: whole numbers in a range (never
booleans or floats), choices, text with a length limit and no lone surrogates, and times that
a clock bounds. Messages describe a wrong value by its kind and size, never by its text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from thoughtline.domain.coercion import MAX_NUMBER

MAX_ID = 2**62
_CONTROL = {chr(c) for c in range(32)} | {"\x7f"}


class RecordProblem(Exception):
    """A record breaks a rule; `ref` is what its reader gave to point back at it (an import's line)."""

    def __init__(self, message: str, ref: int) -> None:
        super().__init__(message)
        self.message = message
        self.ref = ref


class Fields:
    """Typed reads of one record's fields, each refusing with the record's label."""

    def __init__(
        self, rec: Mapping[str, Any], label: str, ref: int, now_ms: int, clamp: bool, slack_ms: int = 0
    ) -> None:
        self.rec, self.label, self.ref, self.now_ms, self.clamp = rec, label, ref, now_ms, clamp
        self.slack_ms = slack_ms

    def problem(self, what: str) -> RecordProblem:
        """A refusal of this record: its label, then what is wrong."""
        return RecordProblem(f"{self.label}: {what}", self.ref)

    def raw(self, key: str, *, required: bool = True) -> Any:
        """The field as sent (None when absent and not required)."""
        if key not in self.rec:
            if required:
                raise self.problem(f"lacks '{key}'")
            return None
        return self.rec[key]

    def integer(self, key: str, low: int, high: int, *, required: bool = True) -> int | None:
        """A whole number in [low, high]; None only when the field may be absent or null."""
        value = self.raw(key, required=required)
        if value is None and not required:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.problem(f"'{key}' must be a whole number from {low} to {high}, got {kind_of(value)}")
        if not low <= value <= high:
            raise self.problem(f"'{key}' is {value}, outside {low}-{high}")
        return value

    def number(self, key: str, *, required: bool = True) -> int | None:
        """A thought number, total or fork number: 1-1,000,000 as the tools take them."""
        return self.integer(key, 1, MAX_NUMBER, required=required)

    def ident(self, key: str) -> int:
        """A row id or position: a positive whole number."""
        return int(self.integer(key, 1, MAX_ID) or 0)

    def flag(self, key: str, *, required: bool = True) -> int | None:
        """A stored boolean: 0 or 1."""
        return self.integer(key, 0, 1, required=required)

    def choice(self, key: str, choices: tuple[str, ...], default: str | None = None) -> str:
        """One of `choices`; `default` when the field is absent (a column with a default)."""
        value = self.raw(key, required=default is None)
        if value is None and default is not None:
            return default
        if value not in choices:
            raise self.problem(f"'{key}' must be one of {', '.join(choices)}, got {kind_of(value)}")
        return str(value)

    def text(
        self, key: str, max_chars: int, *, required: bool = True, keep: str = "", any_control: bool = False
    ) -> str | None:
        """A string of at most `max_chars` without control characters (but `keep`, or any with `any_control`)."""
        value = self.raw(key, required=required)
        if value is None and not required:
            return None
        if not isinstance(value, str):
            raise self.problem(f"'{key}' must be a string, got {kind_of(value)}")
        if len(value) > max_chars:
            raise self.problem(f"'{key}' is {len(value):,} characters; the limit is {max_chars:,}")
        if not any_control and any(ch in _CONTROL and ch not in keep for ch in value):
            raise self.problem(f"'{key}' contains control characters")
        if any("\ud800" <= ch <= "\udfff" for ch in value):  # JSON can spell them; SQLite cannot store them
            raise self.problem(f"'{key}' contains a lone UTF-16 surrogate, which is not text")
        return value

    def time(self, key: str) -> int:
        """Unix milliseconds, not before 1970; a future time is moved to now, or refused without `clamp`."""
        value = self.raw(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self.problem(f"'{key}' must be a time in milliseconds since 1970, got {kind_of(value)}")
        if value > self.now_ms:
            if not self.clamp:
                raise self.problem(f"'{key}' is in the future ({value} ms since 1970)")
            return self.now_ms
        return value

    def not_before(self, key: str, value: int, floor: int, what: str) -> int:
        """A time (read by `time`) that must not come before `floor`, which `what` names, in write order.

        With `clamp` it is moved forward to `floor`: a server clock that stepped back, or an older
        Thoughtline, can leave a time a little out of order, and the order is what matters. Without
        `clamp` (`thoughtline check`) up to `slack_ms` earlier passes, as a clock's skew does.
        """
        if value >= floor:
            return value
        if self.clamp:
            return floor
        if floor - value <= self.slack_ms:
            return value
        raise self.problem(
            f"'{key}' ({value} ms since 1970) is {floor - value} ms before {what}; the tools write times in order"
        )


def is_id(value: Any) -> bool:
    """Whether a JSON value is a whole number (JSON `true` is not, though Python's bool is an int)."""
    return isinstance(value, int) and not isinstance(value, bool)


def kind_of(value: Any) -> str:
    """A wrong value described by its kind and size, never by its text."""
    if isinstance(value, bool) or value is None:
        return repr(value).lower() if value is not None else "null"
    if isinstance(value, int | float):
        return repr(value)[:24]
    if isinstance(value, str):
        return f"a string of {len(value)} characters"
    return f"a JSON {'array' if isinstance(value, list) else 'object'}"
