"""Thread names: the rule for a valid name and the key that makes names unique case-insensitively."""

from __future__ import annotations

import unicodedata

from thoughtline.errors import DomainError

MAX_NAME = 64


def name_key(name: str) -> str:
    """The comparison key of a name: Unicode canonical caseless form (so "Straße" == "STRASSE")."""
    # NFD before and NFC after casefold is Unicode's canonical caseless match (§3.13).
    return unicodedata.normalize("NFC", unicodedata.normalize("NFD", name).casefold())


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
    if any(unicodedata.category(ch) == "Cc" for ch in name):
        raise DomainError("invalid_input", f"'{field}' contains a control character; use printable text only.")
    return name
