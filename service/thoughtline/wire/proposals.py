"""The JSON of thread proposals and review decisions (SPEC §5.3)."""

from __future__ import annotations

from typing import Any

from thoughtline.library.review import Decision, Proposal, ProposalPage
from thoughtline.storage.rows import iso


def proposal_json(p: Proposal) -> dict[str, Any]:
    """One pending proposal."""
    return {
        "proposalId": p.proposal_id,
        "thread": p.thread,
        "sequenceId": p.sequence_id,
        "title": p.title,
        "similarity": p.similarity,
        "evidence": p.evidence,
        "proposedAt": iso(p.proposed_at),
    }


def page_json(page: ProposalPage) -> dict[str, Any]:
    """A page of proposals with its next cursor, how many are pending in all, and `matchingPending` while
    matching is left to do."""
    out: dict[str, Any] = {
        "proposals": [proposal_json(p) for p in page.proposals],
        "nextCursor": page.next_cursor,
        "pendingCount": page.total,
    }
    if page.matching is not None:
        out["matchingPending"] = {"threads": page.matching.threads, "sequences": page.matching.sequences}
    return out


def decision_json(d: Decision) -> dict[str, Any]:
    """An accepted or rejected proposal."""
    return {
        "proposalId": d.proposal_id,
        "thread": d.thread,
        "sequenceId": d.sequence_id,
        "member": d.member,
        **({"addedBy": "review"} if d.member else {}),
    }
