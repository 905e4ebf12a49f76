"""Thread names: the rule for a valid name and the key that makes names unique.

Two names that look the same are one name: the key folds case and compatibility forms
(fullwidth letters, ligatures), and a name may not hold characters that show nothing (format
characters such as a zero-width space, a byte-order mark or a bidi override, controls, line and
paragraph separators), so `hiring`, `hi\u200bring` and `\ufeffhiring` cannot be three threads.
That last rule is `domain/visible_text.py`'s, which branch ids share. A thread is never given the
name `.` or `..` (`check_new_name`).
"""

from __future__ import annotations

import unicodedata

from thoughtline.domain.visible_text import check_label, is_invisible
from thoughtline.errors import DomainError

MAX_NAME = 64
MAX_DESCRIPTION = 2_000
# Dot segments (RFC 3986 §5.2.4): a browser resolves /library/threads/. and /library/threads/..
# to other pages before sending the request, even spelt %2E (WHATWG URL), so a thread with such
# a name could never be opened, renamed or deleted in the library pages.
_DOT_SEGMENTS = frozenset({".", ".."})


def name_key(name: str) -> str:
    """The comparison key of a name: its compatibility caseless form (fullwidth "HIRING" == "hiring").

    NFKC before and after casefold is Unicode's compatibility caseless match (§3.13), composed.
    """
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())


def check_name(name: object, field: str = "name") -> str:
    """A valid thread name as given, or `invalid_input` naming the field and the fix.

    Any name a thread may hold passes, so every stored thread can still be named; a name being
    given to a thread passes `check_new_name` too.
    """
    if not isinstance(name, str):
        raise DomainError("invalid_input", f"'{field}' must be a string: the thread's name, 1-64 characters.")
    if not name.strip():
        raise DomainError("invalid_input", f"'{field}' is empty; give the thread a name of 1-64 characters.")
    if len(name) > MAX_NAME:
        raise DomainError(
            "invalid_input", f"'{field}' is {len(name)} characters; a thread name is at most {MAX_NAME}, shorten it."
        )
    return check_label(name, field, "a thread name")


def check_new_name(name: object, field: str = "name") -> str:
    """A name a thread may be given (created or renamed to): `check_name`, and not `.` or `..`.

    Separate from `check_name` because stores may already hold such a thread, and it must stay
    reachable by its name (through configure_thread) to be renamed.
    """
    checked = check_name(name, field)
    if checked in _DOT_SEGMENTS:
        raise DomainError(
            "invalid_input",
            f"'{field}' is {checked!r}, which a browser reads as a step in the page's address: its library page "
            "could never be opened. Use other characters (e.g. 'dots').",
        )
    return checked


def repaired_name(name: str, rowid: int, taken: set[str]) -> str:
    """A valid name for a thread stored under an earlier rule, whose key is not in `taken`.

    Invisible characters are dropped; a name left empty becomes `thread <rowid>`, and one whose key
    another thread already holds gets ` (<rowid>)` appended, so every thread stays reachable.
    """
    kept = "".join(ch for ch in name if not is_invisible(ch)).strip()[:MAX_NAME].strip()
    base = kept or f"thread {rowid}"
    candidate, attempt = base, 0
    while name_key(candidate) in taken:
        attempt += 1
        suffix = f" ({rowid})" if attempt == 1 else f" ({rowid}-{attempt})"
        candidate = base[: MAX_NAME - len(suffix)].rstrip() + suffix
    return candidate
