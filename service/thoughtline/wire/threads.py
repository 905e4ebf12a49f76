"""The JSON of threads (SPEC §5.3): thread objects, `configure_thread` results, and the briefing."""

from __future__ import annotations

from typing import Any

from thoughtline.domain.thread_state import Event
from thoughtline.library.briefing import Briefing, BriefingThread, ChangedSince
from thoughtline.library.threads import MembershipChanged, ThreadChanged, ThreadDeleted, ThreadPage, ThreadView
from thoughtline.storage.rows import iso
from thoughtline.storage.threads import MemberRow


def _type_source(type_set: bool) -> str:
    return "user" if type_set else "derived"


def thread_json(t: ThreadView) -> dict[str, Any]:
    """A thread object."""
    return {
        "name": t.name,
        "description": t.description,
        "type": t.type,
        "typeSource": _type_source(t.type_set),
        "status": t.status,
        "lifecycle": t.lifecycle,
        "memberCount": t.member_count,
        "pendingProposals": t.pending_proposals,
        "createdAt": iso(t.created_at),
        "updatedAt": iso(t.updated_at),
        "lastActivityAt": iso(t.last_activity_at),
    }


def thread_page_json(page: ThreadPage, include_archived: bool) -> dict[str, Any]:
    """A page of the thread list: the threads, how many in all, the next page's cursor."""
    return {
        "threads": [thread_json(t) for t in page.threads],
        "threadCount": page.thread_count,
        "nextCursor": page.next_cursor,
        "includeArchived": include_archived,
    }


def changed_json(result: ThreadChanged) -> dict[str, Any]:
    """A changed thread with the name it had and whether anything changed."""
    return {"thread": thread_json(result.thread), "previousName": result.previous_name, "changed": result.changed}


def deleted_json(result: ThreadDeleted) -> dict[str, Any]:
    """A deleted thread and what went with it."""
    return {
        "deleted": True,
        "name": result.name,
        "removedMemberships": result.removed_memberships,
        "removedProposals": result.removed_proposals,
    }


def membership_json(result: MembershipChanged) -> dict[str, Any]:
    """A pin or unpin."""
    return {
        "thread": thread_json(result.thread),
        "sequenceId": result.sequence_id,
        "member": result.member,
        "changed": result.changed,
    }


def event_json(event: Event) -> dict[str, Any]:
    """An event."""
    return {
        "kind": event.kind,
        "at": iso(event.at),
        "sequenceId": event.sequence_id,
        "thoughtNumber": event.thought_number,
        "branchId": event.branch_id,
        "text": event.text,
    }


def member_json(member: MemberRow) -> dict[str, Any]:
    """A member sequence."""
    return {
        "sequenceId": member.sequence_id,
        "title": member.title,
        "status": member.status,
        "updatedAt": iso(member.updated_at),
        "addedBy": member.added_by,
        "addedAt": iso(member.joined_at),
    }


def _briefing_thread(t: BriefingThread) -> dict[str, Any]:
    return {
        "name": t.name,
        "description": t.description,
        "headline": t.headline,
        "type": t.type,
        "typeSource": _type_source(t.type_set),
        "status": t.status,
        "lifecycle": t.lifecycle,
        "state": t.state,
        "memberCount": t.member_count,
        "lastActivityAt": iso(t.last_activity_at),
    }


def _changed_since(c: ChangedSince) -> dict[str, Any]:
    return {
        "since": iso(c.since),
        "newEvents": [event_json(e) for e in c.new_events],
        "newEventCount": c.new_event_count,
        "newMembers": [member_json(m) for m in c.new_members],
        "newMemberCount": c.new_member_count,
        "stateThen": c.state_then,
        "stateNow": c.state_now,
    }


def briefing_json(b: Briefing) -> dict[str, Any]:
    """`thread_briefing`'s structured content."""
    result: dict[str, Any] = {
        "thread": _briefing_thread(b.thread),
        "openBlockers": [event_json(e) for e in b.open_blockers],
        "openBlockerCount": b.open_blocker_count,
        "openQuestions": [event_json(e) for e in b.open_questions],
        "openQuestionCount": b.open_question_count,
        "decisions": [event_json(e) for e in b.decisions],
        "latestConclusion": None if b.latest_conclusion is None else event_json(b.latest_conclusion),
        "events": [event_json(e) for e in b.events],
        "members": [member_json(m) for m in b.members],
    }
    if b.changed_since is not None:
        result["changedSince"] = _changed_since(b.changed_since)
    return result
