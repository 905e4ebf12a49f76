"""Idempotent writes: a `sequentialthinking` call with a requestId, recorded and replayed.

A retry with the same requestId and the same arguments gets back what the caller recorded for the
original call (`Replayed`); the same requestId with other arguments is refused. Keys are per client.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import apsw

from thoughtline.domain.arguments import ThoughtInput
from thoughtline.errors import DomainError
from thoughtline.storage.rows import rows


def _fingerprint(inp: ThoughtInput) -> str:
    fields = asdict(inp)
    fields.pop("request_id")
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class Replayed:
    """A retry (same requestId, same arguments): what the caller recorded for the original call."""

    recorded: dict[str, Any]


def _request_client(origin: str | None) -> str:
    """The `requests.client` of a caller: its OAuth client id, '' for the static token."""
    return origin or ""


def replay(conn: apsw.Connection, inp: ThoughtInput, origin: str | None) -> dict[str, Any] | None:
    """What the caller recorded for an earlier call with this requestId (None: no such call, or no requestId)."""
    if inp.request_id is None:
        return None
    # Keyed by (client, requestId) like continuation: another client's key is not this one's.
    found = rows(
        conn,
        "SELECT fingerprint, result FROM requests WHERE client = ? AND request_id = ?",
        (_request_client(origin), inp.request_id),
    )
    if not found:
        return None
    if found[0][0] != _fingerprint(inp):
        raise DomainError(
            "idempotency_conflict",
            f"requestId '{inp.request_id}' was already used with different arguments; "
            "use a new requestId for a new thought, or resend the original arguments to get the original result.",
        )
    replayed: dict[str, Any] = json.loads(found[0][1])
    return replayed


def record_request(
    conn: apsw.Connection,
    inp: ThoughtInput,
    origin: str | None,
    seq_rowid: int,
    record: Mapping[str, Any],
    now_ms: int,
) -> None:
    """Keep what a call with requestId answered, in the write's own transaction, for its retries."""
    conn.execute(
        "INSERT INTO requests(client, request_id, sequence_id, fingerprint, result, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (_request_client(origin), inp.request_id, seq_rowid, _fingerprint(inp), json.dumps(record), now_ms),
    )
