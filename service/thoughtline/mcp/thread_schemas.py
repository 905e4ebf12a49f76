"""Declarations of the thread tools: `configure_thread` and `thread_briefing` (SPEC §5.3).

Nullable fields use `anyOf` with a null branch rather than a list-valued `type`, which some
clients reject.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

from thoughtline.domain import arguments
from thoughtline.domain.thread_names import MAX_NAME

CONFIGURE_ACTIONS = ("list", "create", "rename", "set_description", "archive", "unarchive", "delete", "pin", "unpin")
MAX_DESCRIPTION = 2_000
MAX_EVENTS = 100
DEFAULT_EVENTS = 20
LIFECYCLES = ["active", "dormant", "closed"]
STATES = ["resolved", "blocked", "uncertain", "stable", "ongoing"]
EVENT_KINDS = [*arguments.EVENT_KINDS, *arguments.DERIVED_EVENT_KINDS]

CONFIGURE_DESCRIPTION = """Create and curate threads: named, long-running topics that group your reasoning sequences.

action: list (includeArchived) | create (name, description) | rename (name, newName) |
set_description (name, description) | archive | unarchive (name) | delete (name, confirm: true) |
pin / unpin (name, sequenceId). Names are 1-64 characters, unique case-insensitively. A sequence
also joins threads when sequentialthinking is called with threads: [names]. Deleting a thread
never deletes a sequence; archiving keeps its members but refuses new ones from sequentialthinking."""

BRIEFING_DESCRIPTION = """Catch up on a thread: its state, open blockers and questions, decisions, latest conclusion,
recent events and member sequences.

Events are thoughts of member sequences tagged with sequentialthinking's 'event' (decision, blocker,
question, ...), plus every final thought (conclusion) and revision (update). Pass since (ISO-8601,
e.g. your last session) to see what changed after it."""

_NAME: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": MAX_NAME}
_NULLABLE_STRING: dict[str, Any] = {"anyOf": [{"type": "string"}, {"type": "null"}]}

THREAD_OBJECT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "description": {"type": "string"},
        "status": {"type": "string", "enum": ["active", "archived"]},
        "lifecycle": {"type": "string", "enum": LIFECYCLES},
        "memberCount": {"type": "integer"},
        "pendingProposals": {"type": "integer"},
        "createdAt": {"type": "string"},
        "updatedAt": {"type": "string"},
        "lastActivityAt": {"type": "string"},
    },
    "required": [
        "name",
        "description",
        "status",
        "lifecycle",
        "memberCount",
        "pendingProposals",
        "createdAt",
        "updatedAt",
        "lastActivityAt",
    ],
}

EVENT_OBJECT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "kind": {"type": "string", "enum": EVENT_KINDS},
        "at": {"type": "string"},
        "sequenceId": {"type": "string"},
        "thoughtNumber": {"type": "integer"},
        "branchId": _NULLABLE_STRING,
        "text": {"type": "string", "maxLength": 280},
    },
    "required": ["kind", "at", "sequenceId", "thoughtNumber", "branchId", "text"],
}

MEMBER_OBJECT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "sequenceId": {"type": "string"},
        "title": {"type": "string"},
        "status": {"type": "string"},
        "updatedAt": {"type": "string"},
        "addedBy": {"type": "string", "enum": ["agent", "user", "review"]},
        "addedAt": {"type": "string"},
    },
    "required": ["sequenceId", "title", "status", "updatedAt", "addedBy"],
}

_EVENTS: dict[str, Any] = {"type": "array", "items": EVENT_OBJECT}


def _annotations(title: str, *, read_only: bool, destructive: bool, idempotent: bool) -> types.ToolAnnotations:
    return types.ToolAnnotations(
        title=title,
        read_only_hint=read_only,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=False,
    )


def configure_tool() -> types.Tool:
    """The `configure_thread` declaration."""
    return types.Tool(
        name="configure_thread",
        title="Configure thread",
        description=CONFIGURE_DESCRIPTION,
        input_schema={
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": list(CONFIGURE_ACTIONS)},
                "name": {**_NAME, "description": "The thread (any letter case)."},
                "newName": {**_NAME, "description": "With rename: the new name."},
                "description": {
                    "type": "string",
                    "maxLength": MAX_DESCRIPTION,
                    "description": "What the thread is about; its first sentence is the briefing's headline.",
                },
                "includeArchived": {"type": "boolean", "description": "With list: show archived threads too."},
                "confirm": {"type": "boolean", "const": True, "description": "With delete: must be true."},
                "sequenceId": {"type": "string", "pattern": "^seq_[0-9a-f]{32}$"},
            },
            "required": ["action"],
            "additionalProperties": False,
        },
        output_schema={
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": list(CONFIGURE_ACTIONS)},
                "threads": {"type": "array", "items": THREAD_OBJECT},
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
        annotations=_annotations("Configure thread", read_only=False, destructive=True, idempotent=False),
    )


def briefing_tool() -> types.Tool:
    """The `thread_briefing` declaration."""
    changed = {
        "type": "object",
        "properties": {
            "since": {"type": "string"},
            "newEvents": _EVENTS,
            "newEventCount": {"type": "integer"},
            "newMembers": {"type": "array", "items": MEMBER_OBJECT},
            "stateThen": {"type": "string", "enum": STATES},
            "stateNow": {"type": "string", "enum": STATES},
        },
        "required": ["newEvents", "newMembers", "stateThen", "stateNow"],
    }
    thread = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "description": {"type": "string"},
            "headline": {"type": "string", "maxLength": 160},
            "status": {"type": "string", "enum": ["active", "archived"]},
            "lifecycle": {"type": "string", "enum": LIFECYCLES},
            "state": {"type": "string", "enum": STATES},
            "memberCount": {"type": "integer"},
            "lastActivityAt": {"type": "string"},
        },
        "required": [
            "name",
            "description",
            "headline",
            "status",
            "lifecycle",
            "state",
            "memberCount",
            "lastActivityAt",
        ],
    }
    return types.Tool(
        name="thread_briefing",
        title="Thread briefing",
        description=BRIEFING_DESCRIPTION,
        input_schema={
            "type": "object",
            "properties": {
                "name": {**_NAME, "description": "The thread (any letter case)."},
                "since": {"type": "string", "description": "ISO-8601 time; report what changed after it."},
                "eventsLimit": {"type": "integer", "minimum": 1, "maximum": MAX_EVENTS, "default": DEFAULT_EVENTS},
            },
            "required": ["name"],
            "additionalProperties": False,
        },
        output_schema={
            "type": "object",
            "properties": {
                "thread": thread,
                "openBlockers": _EVENTS,
                "openQuestions": _EVENTS,
                "decisions": _EVENTS,
                "latestConclusion": {"anyOf": [EVENT_OBJECT, {"type": "null"}]},
                "events": _EVENTS,
                "members": {"type": "array", "items": MEMBER_OBJECT},
                "changedSince": changed,
            },
            "required": [
                "thread",
                "openBlockers",
                "openQuestions",
                "decisions",
                "latestConclusion",
                "events",
                "members",
            ],
        },
        annotations=_annotations("Thread briefing", read_only=True, destructive=False, idempotent=True),
    )
