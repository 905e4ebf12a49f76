"""The JSON of sequence listings, lifecycle actions and deletions (SPEC §2.3, §5.2)."""

from __future__ import annotations

from typing import Any

from thoughtline.library.sequences import Deletion, SequencePage, Transition
from thoughtline.storage.lifecycle import SequenceSummary
from thoughtline.storage.rows import iso


def summary_json(s: SequenceSummary) -> dict[str, Any]:
    """One sequence as a listing shows it."""
    return {
        "sequenceId": s.sequence_id,
        "title": s.title,
        "status": s.status,
        "thoughtHistoryLength": s.thought_count,
        "parentSequenceId": s.parent_sequence_id,
        **({"parentDeleted": True} if s.parent_deleted else {}),
        "kind": s.kind,
        "createdAt": iso(s.created_at),
        "updatedAt": iso(s.updated_at),
    }


def page_json(page: SequencePage) -> dict[str, Any]:
    """A page of sequences with its next cursor."""
    return {"sequences": [summary_json(s) for s in page.sequences], "nextCursor": page.next_cursor}


def transition_json(t: Transition) -> dict[str, Any]:
    """`manage_sequence`'s result of a lifecycle action."""
    seq = t.sequence
    result: dict[str, Any] = {
        "sequenceId": seq.public_id,
        "status": seq.status,
        "thoughtHistoryLength": seq.thought_count,
        "totalThoughts": seq.total_thoughts,
    }
    last = t.last_thought
    if last is not None:
        result["lastThought"] = {
            "thoughtNumber": last.number,
            "totalThoughts": last.total,
            "thought": last.body,
            **({"branchId": last.branch_name} if last.branch_name else {}),
            "nextThoughtNeeded": last.next_needed,
        }
    return result


def deletion_json(d: Deletion) -> dict[str, Any]:
    """`delete_thought_sequence`'s result."""
    return {"sequenceId": d.sequence_id, "deleted": d.deleted, "deletedThoughts": d.deleted_thoughts}
