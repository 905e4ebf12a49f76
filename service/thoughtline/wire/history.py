"""The JSON of a history page (SPEC §2.2): the sequence header and every thought as it was sent."""

from __future__ import annotations

from typing import Any

from thoughtline.library.history import HistoryPage, SequenceHeader
from thoughtline.storage import thoughts as store
from thoughtline.storage.history import ThoughtRow
from thoughtline.storage.rows import iso


def header_json(header: SequenceHeader) -> dict[str, Any]:
    """The `sequence` object of a history page."""
    seq = header.sequence
    return {
        "sequenceId": seq.public_id,
        "title": seq.title,
        "status": seq.status,
        "completed": seq.status == "completed",
        "thoughtHistoryLength": seq.thought_count,
        "lastThoughtNumber": seq.last_thought_number,
        "totalThoughts": seq.total_thoughts,
        "createdAt": iso(seq.created_at),
        "updatedAt": iso(seq.updated_at),
        "parentSequenceId": seq.parent_public_id,
        # Only when set, like the thought flags: the parent was deleted, the link stays (set once).
        **({"parentDeleted": True} if header.parent_deleted else {}),
        "kind": seq.kind,
        "childSequenceIds": list(header.child_sequence_ids),
        "childSequenceCount": header.child_sequence_count,
        "threads": list(header.threads),
        "threadCount": header.thread_count,
        "branches": [
            {
                "branchId": b.name,
                "parentBranchId": b.parent_name,
                "branchFromThought": b.from_thought,
                "forkIndex": b.fork_position,
            }
            for b in header.branches
        ],
    }


def thought_json(row: ThoughtRow) -> dict[str, Any]:
    """One thought; optional fields only when set, every argument as the caller sent it."""
    item: dict[str, Any] = {
        "index": row.position,
        "thoughtNumber": row.number,
        "totalThoughts": row.total,
        "nextThoughtNeeded": row.next_needed,
        "thought": row.body,
        "createdAt": iso(row.created_at),
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


def history_json(page: HistoryPage) -> dict[str, Any]:
    """`get_thought_history`'s structured content."""
    return {
        "sequence": header_json(page.header),
        "thoughts": [thought_json(t) for t in page.thoughts],
        "nextCursor": page.next_cursor,
    }
