"""Declarations of the thread tools: `configure_thread` and `thread_briefing` (SPEC §5.3).

Nullable fields use `schemas.nullable` (`anyOf` with a null branch), never a list-valued `type`,
which some clients reject.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

from thoughtline.domain import arguments
from thoughtline.domain.thread_names import MAX_DESCRIPTION, MAX_NAME
from thoughtline.domain.thread_types import THREAD_TYPES, TYPE_SETTINGS
from thoughtline.library.briefing import DEFAULT_EVENTS, MAX_DECISIONS, MAX_EVENTS, MAX_MEMBERS, MAX_OPEN_ITEMS
from thoughtline.library.threads import DEFAULT_THREAD_PAGE, MAX_THREAD_PAGE
from thoughtline.mcp.schema_parts import closed_input, record, tool_annotations
from thoughtline.mcp.schemas import nullable

CONFIGURE_ACTIONS = (
    "list",
    "create",
    "rename",
    "set_description",
    "archive",
    "unarchive",
    "delete",
    "pin",
    "unpin",
    "set_type",
)
LIFECYCLES = ["active", "dormant", "closed"]
STATES = ["resolved", "blocked", "uncertain", "stable", "ongoing"]
EVENT_KINDS = [*arguments.EVENT_KINDS, *arguments.DERIVED_EVENT_KINDS]

CONFIGURE_DESCRIPTION = f"""Create and curate threads: named, long-running topics that group your reasoning sequences.

action: list (includeArchived, limit, cursor) | create (name, description) | rename (name, newName) |
set_description (name, description) | archive | unarchive (name) | delete (name, confirm: true) |
pin / unpin (name, sequenceId) | set_type (name, type: work, case, relationship or topic; until set,
a thread's type is derived from its events, and type auto derives it again). Names are 1-64
characters, unique case-insensitively. A sequence also joins threads when sequentialthinking is
called with threads: [names]. Deleting a thread never deletes a sequence; archiving keeps its
members but refuses new ones from sequentialthinking. list pages by name: limit (<= {MAX_THREAD_PAGE},
default {DEFAULT_THREAD_PAGE}) threads a call, threadCount counts them all, and nextCursor (null on the last page)
continues with the same includeArchived."""

BRIEFING_DESCRIPTION = f"""Catch up on a thread: its state, open blockers and questions, decisions, latest conclusion,
recent events and member sequences.

Events are thoughts of member sequences tagged with sequentialthinking's 'event' (decision, blocker,
question, ...), plus every final thought (conclusion) and revision (update). Pass since (ISO-8601,
e.g. your last session) to see what changed after it.

The briefing stays short however long the thread has run: the newest {MAX_OPEN_ITEMS} open blockers and
open questions (openBlockerCount / openQuestionCount count all open), the newest {MAX_DECISIONS} decisions,
eventsLimit events, and the {MAX_MEMBERS} most recently updated members (thread.memberCount counts all;
manage_sequence action 'list' with thread and order 'created' lists them all, a page per nextCursor);
with since, the {MAX_MEMBERS} newest of newMembers (newMemberCount counts all)."""

NAME_SCHEMA: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": MAX_NAME}
_STATUS: dict[str, Any] = {"type": "string", "enum": ["active", "archived"]}
_LIFECYCLE: dict[str, Any] = {"type": "string", "enum": LIFECYCLES}
_STATE: dict[str, Any] = {"type": "string", "enum": STATES}
_TYPE: dict[str, Any] = {"type": "string", "enum": list(THREAD_TYPES)}
# Whether the user set the type, or it is derived from the thread's events (docs/threads.md).
_TYPE_SOURCE: dict[str, Any] = {"type": "string", "enum": ["user", "derived"]}

THREAD_OBJECT = record(
    {
        "name": {"type": "string"},
        "description": {"type": "string"},
        "type": _TYPE,
        "typeSource": _TYPE_SOURCE,
        "status": _STATUS,
        "lifecycle": _LIFECYCLE,
        "memberCount": {"type": "integer"},
        "pendingProposals": {"type": "integer"},
        "createdAt": {"type": "string"},
        "updatedAt": {"type": "string"},
        "lastActivityAt": {"type": "string"},
    }
)

EVENT_OBJECT = record(
    {
        "kind": {"type": "string", "enum": EVENT_KINDS},
        "at": {"type": "string"},
        "sequenceId": {"type": "string"},
        "thoughtNumber": {"type": "integer"},
        "branchId": nullable({"type": "string"}),
        "text": {"type": "string", "maxLength": 280},
    }
)

MEMBER_OBJECT = record(
    {
        "sequenceId": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "string"},
        "updatedAt": {"type": "string"},
        "addedBy": {"type": "string", "enum": ["agent", "user", "review"]},
        "addedAt": {"type": "string"},
    },
    optional=["addedAt"],
)

_EVENTS: dict[str, Any] = {"type": "array", "items": EVENT_OBJECT}
_OPEN_ITEMS: dict[str, Any] = {**_EVENTS, "maxItems": MAX_OPEN_ITEMS}


def configure_tool() -> types.Tool:
    """The `configure_thread` declaration."""
    return types.Tool(
        name="configure_thread",
        title="Configure thread",
        description=CONFIGURE_DESCRIPTION,
        input_schema=closed_input(
            {
                "action": {"type": "string", "enum": list(CONFIGURE_ACTIONS)},
                "name": {**NAME_SCHEMA, "description": "The thread (any letter case)."},
                "newName": {**NAME_SCHEMA, "description": "With rename: the new name."},
                "description": {
                    "type": "string",
                    "maxLength": MAX_DESCRIPTION,
                    "description": "What the thread is about; its first sentence is the briefing's headline.",
                },
                "includeArchived": {"type": "boolean", "description": "With list: show archived threads too."},
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_THREAD_PAGE,
                    "default": DEFAULT_THREAD_PAGE,
                    "description": "With list: threads per page.",
                },
                "cursor": {"type": "string", "description": "With list: a nextCursor, for the next page."},
                "confirm": {"type": "boolean", "const": True, "description": "With delete: must be true."},
                "sequenceId": {"type": "string", "pattern": "^seq_[0-9a-f]{32}$"},
                "type": {
                    "type": "string",
                    "enum": list(TYPE_SETTINGS),
                    "description": "With set_type: what kind of thread this is (auto: derived from its events).",
                },
            },
            ["action"],
        ),
        output_schema={
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": list(CONFIGURE_ACTIONS)},
                "threads": {"type": "array", "items": THREAD_OBJECT, "maxItems": MAX_THREAD_PAGE},
                "threadCount": {"type": "integer"},
                "nextCursor": nullable({"type": "string"}),
                "thread": THREAD_OBJECT,
                "previousName": {"type": "string"},
                "deleted": {"type": "boolean"},
                "name": {"type": "string"},
                "removedMemberships": {"type": "integer"},
                "removedProposals": {"type": "integer"},
                "sequenceId": {"type": "string"},
                "member": {"type": "boolean"},
                "changed": {"type": "boolean"},
                "includeArchived": {"type": "boolean"},
            },
            "required": ["action"],
        },
        annotations=tool_annotations("Configure thread", read_only=False, destructive=True, idempotent=False),
    )


def briefing_tool() -> types.Tool:
    """The `thread_briefing` declaration."""
    changed = record(
        {
            "since": {"type": "string"},
            "newEvents": _EVENTS,
            "newEventCount": {"type": "integer"},
            "newMembers": {"type": "array", "items": MEMBER_OBJECT, "maxItems": MAX_MEMBERS},
            "newMemberCount": {"type": "integer"},
            "stateThen": _STATE,
            "stateNow": _STATE,
        },
        optional=["since", "newEventCount", "newMemberCount"],
    )
    shown = THREAD_OBJECT["properties"]
    thread = record(
        {
            "name": shown["name"],
            "description": shown["description"],
            "headline": {"type": "string", "maxLength": 160},
            "type": _TYPE,
            "typeSource": _TYPE_SOURCE,
            "status": _STATUS,
            "lifecycle": _LIFECYCLE,
            "state": _STATE,
            "memberCount": shown["memberCount"],
            "lastActivityAt": shown["lastActivityAt"],
        }
    )
    return types.Tool(
        name="thread_briefing",
        title="Thread briefing",
        description=BRIEFING_DESCRIPTION,
        input_schema=closed_input(
            {
                "name": {**NAME_SCHEMA, "description": "The thread (any letter case)."},
                "since": {"type": "string", "description": "ISO-8601 time; report what changed after it."},
                "eventsLimit": {"type": "integer", "minimum": 1, "maximum": MAX_EVENTS, "default": DEFAULT_EVENTS},
            },
            ["name"],
        ),
        output_schema=record(
            {
                "thread": thread,
                "openBlockers": _OPEN_ITEMS,
                "openBlockerCount": {"type": "integer"},
                "openQuestions": _OPEN_ITEMS,
                "openQuestionCount": {"type": "integer"},
                "decisions": _EVENTS,
                "latestConclusion": nullable(EVENT_OBJECT),
                "events": _EVENTS,
                "members": {"type": "array", "items": MEMBER_OBJECT, "maxItems": MAX_MEMBERS},
                "changedSince": changed,
            },
            optional=["changedSince"],
        ),
        annotations=tool_annotations("Thread briefing", read_only=True, destructive=False, idempotent=True),
    )
