"""What a storage failure means for the caller: its kind, and the words that say what to do next.

A tool call that fails in the store tells the model three different things depending on the
fault: a busy or briefly failing disk (nothing was written; retry shortly), a damaged or missing
store (nothing was written; retrying will not help, the operator must act), or a failure at the
commit point itself (the write may or may not be stored; retry with the same `requestId`).
"""

from __future__ import annotations

from typing import Literal

import apsw

from thoughtline.errors import ThoughtlineError

FaultKind = Literal["transient", "damaged", "unknown_outcome"]

ADVICE: dict[FaultKind, str] = {
    "transient": "Nothing was written; retry shortly.",
    "damaged": "Nothing was written, and retrying will not help until the server's operator acts "
    "(see `thoughtline check` and docs/operations.md).",
    "unknown_outcome": "The write may or may not have been stored: the disk failed at the commit point. "
    "Retry with the same requestId, which returns the stored result or writes the thought exactly once; "
    "without a requestId, read the sequence with get_thought_history before retrying.",
}

# Errors that say the file itself is bad: retrying the same call cannot succeed.
_DAMAGED: tuple[type[apsw.Error], ...] = (apsw.CorruptError, apsw.NotADBError, apsw.FormatError)


class StorageError(ThoughtlineError):
    """The database could not do what was asked (locked too long, disk full, corrupt, …).

    `kind` says whether anything may have been written and whether a retry can help; `message`
    (what a caller reads after `storage_error: `) is the fault and then that advice, while
    `str()` stays the bare fault, as the CLI and `thoughtline check` print it.
    """

    def __init__(self, message: str, kind: FaultKind = "transient") -> None:
        super().__init__("storage_error", f"{message.rstrip('.')}. {ADVICE[kind]}")
        self.args = (message,)
        self.kind: FaultKind = kind

    def __str__(self) -> str:
        return str(self.args[0])


def kind_of(exc: BaseException) -> FaultKind:
    """Transient unless the error says the database file itself is damaged."""
    return "damaged" if isinstance(exc, _DAMAGED) else "transient"


def storage_failure(exc: BaseException, doing: str) -> StorageError:
    """Wrap a raw apsw error (or pass a StorageError through) with what was being done."""
    if isinstance(exc, StorageError):
        return exc
    return StorageError(f"{doing} failed: {type(exc).__name__}", kind_of(exc))


def caller_text(exc: BaseException) -> str:
    """The `storage_error` message for any storage failure that reached a tool."""
    return storage_failure(exc, "the database operation").message
