"""Thread names: the rule for a valid name and the key that makes names unique.

Two names that look the same are one name: the key folds case and compatibility forms
(fullwidth letters, ligatures), and a name may not hold characters that show nothing (format
characters such as a zero-width space, a byte-order mark or a bidi override, controls, line and
paragraph separators), so `hiring`, `hi\u200bring` and `\ufeffhiring` cannot be three threads.
"""

from __future__ import annotations

import unicodedata

from thoughtline.errors import DomainError

MAX_NAME = 64
MAX_DESCRIPTION = 2_000
# Cc controls, Cf format characters (zero-width space and joiners, BOM, bidi overrides and
# isolates, soft hyphen), Cs lone surrogates, Zl / Zp line and paragraph separators.
_INVISIBLE = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def name_key(name: str) -> str:
    """The comparison key of a name: its compatibility caseless form (fullwidth "HIRING" == "hiring").

    NFKC before and after casefold is Unicode's compatibility caseless match (§3.13), composed.
    """
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())


def invisible_character(name: str) -> str | None:
    """The first character of `name` that shows nothing, or None."""
    return next((ch for ch in name if unicodedata.category(ch) in _INVISIBLE), None)


def _describe(ch: str) -> str:
    what = unicodedata.name(ch, "") or ("a control character" if unicodedata.category(ch) == "Cc" else "unnamed")
    return f"U+{ord(ch):04X} ({what})"


def check_name(name: object, field: str = "name") -> str:
    """A valid thread name as given, or `invalid_input` naming the field and the fix."""
    if not isinstance(name, str):
        raise DomainError("invalid_input", f"'{field}' must be a string: the thread's name, 1-64 characters.")
    if not name.strip():
        raise DomainError("invalid_input", f"'{field}' is empty; give the thread a name of 1-64 characters.")
    if len(name) > MAX_NAME:
        raise DomainError(
            "invalid_input", f"'{field}' is {len(name)} characters; a thread name is at most {MAX_NAME}, shorten it."
        )
    if name != name.strip():
        raise DomainError("invalid_input", f"'{field}' starts or ends with whitespace; remove it ({name.strip()!r}).")
    hidden = invisible_character(name)
    if hidden is not None:
        raise DomainError(
            "invalid_input",
            f"'{field}' contains {_describe(hidden)}, a character that shows nothing: a thread name is visible "
            "text only, remove it.",
        )
    return name


def repaired_name(name: str, rowid: int, taken: set[str]) -> str:
    """A valid name for a thread stored under an earlier rule, whose key is not in `taken`.

    Invisible characters are dropped; a name left empty becomes `thread <rowid>`, and one whose key
    another thread already holds gets ` (<rowid>)` appended, so every thread stays reachable.
    """
    kept = "".join(ch for ch in name if unicodedata.category(ch) not in _INVISIBLE).strip()[:MAX_NAME].strip()
    base = kept or f"thread {rowid}"
    candidate, attempt = base, 0
    while name_key(candidate) in taken:
        attempt += 1
        suffix = f" ({rowid})" if attempt == 1 else f" ({rowid}-{attempt})"
        candidate = base[: MAX_NAME - len(suffix)].rstrip() + suffix
    return candidate
