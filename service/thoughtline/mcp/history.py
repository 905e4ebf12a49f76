"""Paged reading of a sequence: cursors, page assembly, and the readable transcript.

Cursors are opaque strings signed with the store's own secret, so a cursor that was edited, or
that belongs to another sequence or another user's store, is refused rather than misread. Pages
are keyed on the thought's position, so paging never skips or repeats a thought, and thoughts
written while a client pages (ascending) appear on its later pages.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import apsw
from itsdangerous import BadSignature, URLSafeSerializer

from thoughtline.domain.arguments import HistoryInput
from thoughtline.domain.wording import counted
from thoughtline.errors import DomainError, invalid
from thoughtline.storage import history as history_store
from thoughtline.storage import thoughts as store

_SALT = "thoughtline.mcp.history.v1"


def _serializer(secret: str) -> URLSafeSerializer:
    return URLSafeSerializer(secret, salt=_SALT)


def encode_cursor(secret: str, inp: HistoryInput, last_position: int) -> str:
    """A cursor that continues after `last_position` with the same sequence, branch and order."""
    return str(_serializer(secret).dumps([inp.sequence_id, inp.branch_id, inp.order, last_position]))


def decode_cursor(secret: str, inp: HistoryInput) -> int | None:
    """The position a cursor continues after; refuses tampered or foreign cursors."""
    if inp.cursor is None:
        return None
    try:
        payload = _serializer(secret).loads(inp.cursor)
    except BadSignature:
        raise invalid(
            "'cursor' is not a cursor this server issued for your store (edited or foreign); "
            "start again without a cursor."
        ) from None
    if not (isinstance(payload, list) and len(payload) == 4 and isinstance(payload[3], int)):
        raise invalid("'cursor' is malformed; start again without a cursor.")
    sequence_id, branch_id, order, position = payload
    if sequence_id != inp.sequence_id:
        raise invalid("'cursor' belongs to another sequence; use the cursor from this sequence's last page.")
    if (branch_id, order) != (inp.branch_id, inp.order):
        raise invalid(
            f"'cursor' was issued for branchId={branch_id!r}, order={order!r}; pass the same values, "
            "or start again without a cursor."
        )
    return int(position)


@dataclass(frozen=True)
class HistoryPage:
    """One page of history: structured content and the readable transcript."""

    structured: dict[str, Any]
    text: str


def read_page(conn: apsw.Connection, inp: HistoryInput) -> HistoryPage:
    """Read one page (inside a read transaction)."""
    seq = store.get_sequence(conn, inp.sequence_id)
    if seq is None:
        raise DomainError(
            "sequence_not_found",
            f"no sequence {inp.sequence_id} in your store; check the id returned by sequentialthinking.",
        )
    secret = store.cursor_secret(conn)
    after = decode_cursor(secret, inp)
    branch: int | bool | None = True
    if inp.branch_id is not None:
        branch = history_store.branch_key_for(conn, seq.rowid, inp.branch_id)
        if branch is False:
            names = [b.name for b in history_store.branch_summaries(conn, seq.rowid)]
            raise DomainError(
                "branch_not_found",
                f"branch '{inp.branch_id}' is not in this sequence (branches: {', '.join(names) or 'none'}); "
                "use 'main' for the main path or omit branchId for everything.",
            )
    rows = history_store.history_rows(conn, seq.rowid, branch, after, inp.order, inp.limit + 1)
    page: list[history_store.ThoughtRow] = []
    chars = 0
    for row in rows[: inp.limit]:
        if page and chars + len(row.body) > inp.max_characters:
            break
        page.append(row)
        chars += len(row.body)
    more = len(page) < len(rows)
    next_cursor = encode_cursor(secret, inp, page[-1].position) if more and page else None
    branches = history_store.branch_summaries(conn, seq.rowid)
    sequence = {
        "sequenceId": seq.public_id,
        "title": seq.title,
        "status": seq.status,
        "completed": seq.status == "completed",
        "thoughtHistoryLength": seq.thought_count,
        "lastThoughtNumber": seq.last_thought_number,
        "totalThoughts": seq.total_thoughts,
        "createdAt": store.iso(seq.created_at),
        "updatedAt": store.iso(seq.updated_at),
        "parentSequenceId": seq.parent_public_id,
        "childSequenceIds": history_store.child_sequence_ids(conn, seq.public_id),
        "threads": history_store.thread_names(conn, seq.rowid),
        "branches": [
            {
                "branchId": b.name,
                "parentBranchId": b.parent_name,
                "branchFromThought": b.from_thought,
                "forkIndex": b.fork_position,
            }
            for b in branches
        ],
    }
    thoughts = [_thought_dict(row) for row in page]
    structured = {"sequence": sequence, "thoughts": thoughts, "nextCursor": next_cursor}
    return HistoryPage(structured=structured, text=render_transcript(sequence, thoughts, next_cursor))


def _thought_dict(row: history_store.ThoughtRow) -> dict[str, Any]:
    item: dict[str, Any] = {
        "index": row.position,
        "thoughtNumber": row.number,
        "totalThoughts": row.total,
        "nextThoughtNeeded": row.next_needed,
        "thought": row.body,
        "createdAt": store.iso(row.created_at),
    }
    if row.branch_name is not None:
        item["branchId"] = row.branch_name
    # As the caller sent them (SPEC §2.2); the header's `branches` shows the resolved parent.
    if row.branch_from_thought is not None:
        item["branchFromThought"] = row.branch_from_thought
    if row.branch_from_branch_id is not None:
        item["branchFromBranchId"] = row.branch_from_branch_id
    if row.is_revision:
        item["isRevision"] = True
        item["revisesThought"] = row.revises_number
        item["revisesIndex"] = row.revises_position
    elif row.flags & store.FLAG_SENT_NOT_REVISION:
        item["isRevision"] = False
    if row.needs_more is not None:
        item["needsMoreThoughts"] = row.needs_more
    if row.flags & store.FLAG_REOPENED:
        item["reopened"] = True
    if row.flags & store.FLAG_NUMBER_REUSED:
        item["thoughtNumberReused"] = True
    if row.event is not None:
        item["event"] = row.event
    return item


def render_transcript(sequence: dict[str, Any], thoughts: list[dict[str, Any]], next_cursor: str | None) -> str:
    """A readable transcript: title, status, branch list, one block per thought."""
    lines = [
        f"{sequence['title']}",
        f"Sequence {sequence['sequenceId']} · {sequence['status']} · "
        + counted(sequence["thoughtHistoryLength"], "thought"),
    ]
    for b in sequence["branches"]:
        parent = f"branch {b['parentBranchId']}" if b["parentBranchId"] else "main path"
        lines.append(f"Branch {b['branchId']}: from thought {b['branchFromThought']} of the {parent}")
    for t in thoughts:
        tags = [f"#{t['index']}", f"Thought {t['thoughtNumber']}/{t['totalThoughts']}"]
        if "branchId" in t:
            tags.append(f"branch {t['branchId']}")
        if t.get("isRevision"):
            tags.append(f"revises {t['revisesThought']}")
        if not t["nextThoughtNeeded"]:
            tags.append("final")
        if "event" in t:
            tags.append(t["event"])
        lines += ["", " · ".join(tags), t["thought"]]
    if next_cursor:
        lines += ["", f"More thoughts follow; pass cursor={next_cursor} to continue."]
    return "\n".join(lines)
