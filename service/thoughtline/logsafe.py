"""Log lines that user-controlled text cannot forge: control characters are shown escaped, never raw.

A request path like `/x%0a2026-01-01 INFO granted access` is decoded by the server before we see
it; written raw, it would start a real-looking log line (issue 11, F6). Escape C0/C1 controls, DEL,
the Unicode line and paragraph separators, bidi overrides and the backslash itself (so an escape
in the log is always ours), and cut very long values.
"""

from __future__ import annotations

import logging
import re

MAX_FIELD = 300
_CONTROLS = "\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069"
_UNSAFE = re.compile(f"[{_CONTROLS}\\\\]")
_CONTROL = re.compile(f"[{_CONTROLS}]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def log_safe(value: object, limit: int = MAX_FIELD) -> str:
    """`value` as one printable line: unsafe characters escaped, at most `limit` characters kept."""
    text = str(value)
    cut = len(text) > limit
    text = _UNSAFE.sub(_escape, text[:limit])
    return text + "…" if cut else text


class SafeFormatter(logging.Formatter):
    """Escapes control characters in every record's message (fields already passed through
    `log_safe` stay as they are); tracebacks keep their own newlines."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = _CONTROL.sub(_escape, record.message)
        return super().formatMessage(record)
