"""Signed paging cursors: one signer, a salt per purpose (history, proposals, sequence and thread listing).

A cursor is an opaque string signed with the store's own secret (`storage.rows.cursor_secret`)
and a salt that names what it pages, so a cursor that was edited, that comes from another user's
store, or that pages something else is refused rather than misread. The history and proposal
salts are the ones their cursors were first issued with, so cursors a client holds keep working.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from itsdangerous import BadSignature, URLSafeSerializer

from thoughtline.errors import invalid


class Purpose(Enum):
    """What a cursor pages; the value is its signing salt (never change one: held cursors would break)."""

    HISTORY = "thoughtline.mcp.history.v1"
    PROPOSALS = "thoughtline.mcp.proposals.v1"
    SEQUENCES = "thoughtline.sequences.v1"  # the sequence list, most recently updated first
    SEQUENCES_CREATED = "thoughtline.sequences.created.v1"  # the sequence list, oldest created first
    THREADS = "thoughtline.threads.v1"  # the thread list, by name


def issue(secret: str, purpose: Purpose, payload: list[Any]) -> str:
    """A cursor carrying `payload` (JSON values) for `purpose`."""
    return str(URLSafeSerializer(secret, salt=purpose.value).dumps(payload))


def issued_for(secret: str, purpose: Purpose, token: str) -> bool:
    """Whether `token` is a cursor issued for `purpose` (so a refusal can name what it was issued for)."""
    try:
        URLSafeSerializer(secret, salt=purpose.value).loads(token)
    except BadSignature:
        return False
    return True


def read(secret: str, purpose: Purpose, token: str, length: int) -> list[Any]:
    """The payload of a cursor issued for `purpose`: a list of `length` items whose last is an integer.

    Refuses (`invalid_input`) a cursor that is tampered, foreign, of another purpose, or malformed.
    """
    try:
        payload = URLSafeSerializer(secret, salt=purpose.value).loads(token)
    except BadSignature:
        if any(issued_for(secret, other, token) for other in Purpose if other is not purpose):
            raise invalid(
                "'cursor' was issued for another tool or list, not this one; pass the nextCursor this one "
                "returned, or start again without one."
            ) from None
        raise invalid(
            "'cursor' is not a cursor this server issued for your store (edited or foreign); start again without one."
        ) from None
    if not (
        isinstance(payload, list)
        and len(payload) == length
        and isinstance(payload[-1], int)
        and not isinstance(payload[-1], bool)
    ):
        raise invalid("'cursor' is malformed; start again without a cursor.")
    return payload
