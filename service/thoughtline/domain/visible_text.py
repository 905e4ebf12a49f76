"""Visible text: which characters show nothing, and the rule for a label a person reads and types.

A thread name and a branch id are printed in transcripts and pages and typed back by agents and
people. A label that holds a character that shows nothing (a zero-width space, a bidi override)
renders as something else than it is, and one with whitespace at an end looks like its trimmed
twin, so both are refused rather than stored.
"""

from __future__ import annotations

import unicodedata

from thoughtline.errors import invalid

# Cc controls, Cf format characters (zero-width space and joiners, BOM, bidi overrides and
# isolates, soft hyphen), Cs lone surrogates, Zl / Zp line and paragraph separators.
_INVISIBLE = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
# Letters and symbols that render blank: the Hangul fillers (Default_Ignorable, category Lo) and
# the blank Braille pattern (So). Variation selectors are left out: emoji labels carry U+FE0F.
_BLANK = frozenset("\u115f\u1160\u3164\uffa0\u2800")
# Combining marks: they show only on a base character, so text of marks alone shows nothing.
_MARKS = frozenset({"Mn", "Mc", "Me"})


def is_invisible(ch: str) -> bool:
    """Whether the character `ch` shows nothing (or moves what follows) when printed."""
    return ch in _BLANK or unicodedata.category(ch) in _INVISIBLE


def invisible_character(text: str) -> str | None:
    """The first character of `text` that shows nothing, or None."""
    return next((ch for ch in text if is_invisible(ch)), None)


def shows_something(text: str) -> bool:
    """Whether `text` holds at least one character that is neither whitespace, invisible nor a
    combining mark (a mark alone has no base character to show on)."""
    return any(not ch.isspace() and not is_invisible(ch) and unicodedata.category(ch) not in _MARKS for ch in text)


def describe_character(ch: str) -> str:
    """`U+200B (ZERO WIDTH SPACE)`: a character named so a person can find it."""
    what = unicodedata.name(ch, "") or ("a control character" if unicodedata.category(ch) == "Cc" else "unnamed")
    return f"U+{ord(ch):04X} ({what})"


def check_label(value: str, field: str, what: str) -> str:
    """`value` when it reads as typed, else `invalid_input` naming the field and the fix.

    `what` names the kind of label in the message ("a thread name", "a branch id").
    """
    if not value.strip():
        raise invalid(f"'{field}' is empty; {what} needs at least one visible character.")
    if value != value.strip():
        raise invalid(f"'{field}' starts or ends with whitespace; remove it ({value.strip()!r}).")
    hidden = invisible_character(value)
    if hidden is not None:
        raise invalid(
            f"'{field}' contains {describe_character(hidden)}, a character that shows nothing: {what} is "
            "visible text only, remove it."
        )
    if not shows_something(value):
        raise invalid(
            f"'{field}' holds only combining marks such as {describe_character(value[0])}, which show nothing "
            f"without a letter; {what} needs at least one visible character."
        )
    return value
