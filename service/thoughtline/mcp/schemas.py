"""JSON Schemas the core tools declare for their inputs and structured outputs.

Integer and boolean inputs are declared as such; the server also accepts their string forms
("3", "true"), because many clients send those.
"""

from __future__ import annotations

from typing import Any

from thoughtline.domain.arguments import (
    EVENT_KINDS,
    LISTED_BRANCHES,
    MAX_BRANCH_ID_CHARS,
    MAX_HISTORY_CHARS,
    MAX_HISTORY_LIMIT,
    MAX_KIND_CHARS,
    MAX_REQUEST_ID_CHARS,
    MAX_THOUGHT_CHARS,
    MAX_THREADS_PER_CALL,
)
from thoughtline.domain.coercion import MAX_NUMBER
from thoughtline.domain.thread_names import MAX_NAME
from thoughtline.storage.history import CHILDREN_SHOWN, THREADS_SHOWN

_NUMBER: dict[str, Any] = {"type": "integer", "minimum": 1, "maximum": MAX_NUMBER}
_SEQ_ID: dict[str, Any] = {"type": "string", "pattern": "^seq_[0-9a-f]{32}$"}
_BRANCH_ID: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": MAX_BRANCH_ID_CHARS}


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` or null, as `anyOf`: a list-valued `type` (["string", "null"]) warns in the MCP
    Inspector (Ajv strict mode) and is refused by clients that translate schemas into a
    single-`type` dialect such as Gemini's OpenAPI subset. Fields that are merely optional are
    omitted when unset instead."""
    return {"anyOf": [schema, {"type": "null"}]}


def _obj(properties: dict[str, Any], required: list[str], *, closed: bool = True) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, "required": required}
    if closed:
        schema["additionalProperties"] = False
    return schema


THOUGHT_INPUT = _obj(
    {
        "thought": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_THOUGHT_CHARS,
            "description": "This reasoning step.",
        },
        "nextThoughtNeeded": {"type": "boolean", "description": "True if another thought follows."},
        "thoughtNumber": {**_NUMBER, "description": "Number of this thought on its branch, from 1."},
        "totalThoughts": {**_NUMBER, "description": "Current estimate of thoughts needed; may change."},
        "sequenceId": {**_SEQ_ID, "description": "The sequence to continue; omit to start a new one."},
        "isRevision": {"type": "boolean", "description": "True if this thought revises an earlier one."},
        "revisesThought": {**_NUMBER, "description": "The thought number being revised (with isRevision)."},
        "branchFromThought": {**_NUMBER, "description": "Fork a new branch from this thought number."},
        "branchId": {
            **_BRANCH_ID,
            "description": "The branch this thought belongs to: visible text, no space at either end "
            "('main' is reserved).",
        },
        "branchFromBranchId": {**_BRANCH_ID, "description": "Fork from a thought inside this branch."},
        "needsMoreThoughts": {"type": "boolean", "description": "True if the estimate turned out too low."},
        "requestId": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_REQUEST_ID_CHARS,
            "description": "Idempotency key: a retry with the same id and arguments writes nothing new.",
        },
        "threads": {
            "type": "array",
            "items": {"type": "string", "minLength": 1, "maxLength": MAX_NAME},
            "maxItems": MAX_THREADS_PER_CALL,
            "description": f"Existing thread names this sequence belongs to, at most {MAX_THREADS_PER_CALL} per call. "
            'One name sent as a plain string ("billing") is taken as a list of that one name.',
        },
        "parentSequenceId": {
            **_SEQ_ID,
            "description": "The parent agent's sequence (for sub-agents). Set once: later calls may repeat it, "
            "not change it; never the sequence itself or one of its own sub-agents.",
        },
        "kind": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_KIND_CHARS,
            "description": "Free label of the sequence, e.g. 'plan' or 'debug'. Set once: later calls may repeat it, "
            "not change it.",
        },
        "event": {
            "type": "string",
            "enum": list(EVENT_KINDS),
            "description": "What this thought is for a thread's briefing, e.g. decision, blocker, question.",
        },
    },
    ["thought", "nextThoughtNeeded", "thoughtNumber", "totalThoughts"],
)

# With THOUGHTLINE_LIBRARY=off `threads` stays an argument (SPEC §5 keeps sequentialthinking's own
# arguments), but no tool can create a thread, so its description says to leave it out.
THOUGHT_INPUT_NO_LIBRARY = {
    **THOUGHT_INPUT,
    "properties": {
        **THOUGHT_INPUT["properties"],
        "threads": {
            **THOUGHT_INPUT["properties"]["threads"],
            "description": "Threads are off on this server (THOUGHTLINE_LIBRARY=off): leave this out.",
        },
    },
}

THOUGHT_OUTPUT = _obj(
    {
        "sequenceId": {"type": "string"},
        "thoughtNumber": {"type": "integer"},
        "totalThoughts": {"type": "integer"},
        "nextThoughtNeeded": {"type": "boolean"},
        "branches": {
            "type": "array",
            "items": {"type": "string"},
            "maxItems": LISTED_BRANCHES,
            "description": f"This sequence's branch ids in creation order, at most {LISTED_BRANCHES}: the branch "
            "written and the newest; get_thought_history lists them all.",
        },
        "branchCount": {
            "type": "integer",
            "description": "How many branches the sequence has; present only when 'branches' leaves some out.",
        },
        "thoughtHistoryLength": {"type": "integer"},
        "branchId": {"type": "string"},
        "reopened": {"type": "boolean"},
        "thoughtNumberReused": {"type": "boolean"},
        "totalThoughtsRaised": {"type": "boolean"},
        "continued": {"type": "boolean"},
        "related": {
            "type": "array",
            "maxItems": 3,
            "description": "Earlier sequences of yours strongly related to how this one opens (SPEC §5.4); "
            "absent when none is.",
            "items": _obj(
                {
                    "sequenceId": {"type": "string"},
                    "title": {"type": "string"},
                    "status": {"type": "string", "enum": ["active", "paused", "completed", "abandoned"]},
                    "updatedAt": {"type": "string"},
                    "snippet": {"type": "string", "description": "The opening of its latest thought."},
                    "similarity": {
                        "type": "number",
                        "description": "Share of this opening's distinctive words it also uses, 0 to 1.",
                    },
                },
                ["sequenceId", "title", "status", "updatedAt", "snippet", "similarity"],
                closed=False,
            ),
        },
    },
    ["sequenceId", "thoughtNumber", "totalThoughts", "nextThoughtNeeded", "branches", "thoughtHistoryLength"],
    closed=False,
)

# Without related earlier reasoning (THOUGHTLINE_LIBRARY=off or THOUGHTLINE_RELATED=off) no result
# carries `related`, so the schema does not offer it.
THOUGHT_OUTPUT_NO_RELATED = {
    **THOUGHT_OUTPUT,
    "properties": {k: v for k, v in THOUGHT_OUTPUT["properties"].items() if k != "related"},
}

HISTORY_INPUT = _obj(
    {
        "sequenceId": _SEQ_ID,
        "cursor": {
            "type": "string",
            "description": "nextCursor from the previous page; it keeps that call's order and branchId.",
        },
        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_HISTORY_LIMIT, "default": 50},
        "order": {"type": "string", "enum": ["asc", "desc"], "default": "asc"},
        "branchId": {**_BRANCH_ID, "description": "'main' for the main path, or one branch's id."},
        "maxCharacters": {"type": "integer", "minimum": 1, "maximum": MAX_HISTORY_CHARS, "default": 60_000},
    },
    ["sequenceId"],
)

_BRANCH_OUT = _obj(
    {
        "branchId": {"type": "string"},
        "parentBranchId": nullable({"type": "string"}),
        "branchFromThought": {"type": "integer"},
        "forkIndex": {"type": "integer"},
    },
    ["branchId", "parentBranchId", "branchFromThought"],
    closed=False,
)

_THOUGHT_OUT = _obj(
    {
        "index": {"type": "integer"},
        "thoughtNumber": {"type": "integer"},
        "totalThoughts": {"type": "integer"},
        "nextThoughtNeeded": {"type": "boolean"},
        "thought": {"type": "string"},
        "createdAt": {"type": "string"},
        "branchId": {"type": "string"},
        "branchFromThought": {"type": "integer"},
        "branchFromBranchId": {"type": "string"},
        "isRevision": {"type": "boolean"},
        "revisesThought": {"type": "integer"},
        "revisesIndex": {"type": "integer"},
        "needsMoreThoughts": {"type": "boolean"},
        "reopened": {"type": "boolean"},
        "thoughtNumberReused": {"type": "boolean"},
        "event": {"type": "string", "enum": list(EVENT_KINDS)},
    },
    ["index", "thoughtNumber", "totalThoughts", "nextThoughtNeeded", "thought", "createdAt"],
    closed=False,
)

HISTORY_OUTPUT = _obj(
    {
        "sequence": _obj(
            {
                "sequenceId": {"type": "string"},
                "title": {"type": "string"},
                "status": {"type": "string", "enum": ["active", "paused", "completed", "abandoned"]},
                "completed": {"type": "boolean"},
                "thoughtHistoryLength": {"type": "integer"},
                "lastThoughtNumber": {"type": "integer"},
                "totalThoughts": {"type": "integer"},
                "createdAt": {"type": "string"},
                "updatedAt": {"type": "string"},
                "parentSequenceId": nullable({"type": "string"}),
                "parentDeleted": {
                    "type": "boolean",
                    "description": "Present (true) when parentSequenceId names a sequence deleted since; the link "
                    "stays, as a parent is set once, and this sequence's calls may keep repeating it.",
                },
                "kind": {**nullable({"type": "string"}), "description": "The sequence's free label, null without one."},
                "childSequenceIds": {
                    "type": "array",
                    "items": {"type": "string"},
                    "maxItems": CHILDREN_SHOWN,
                    "description": f"Sub-agent sequences (parentSequenceId = this one), oldest first: the first "
                    f"{CHILDREN_SHOWN} only.",
                },
                "childSequenceCount": {
                    "type": "integer",
                    "description": "How many sub-agent sequences there are in all. Past the listed ones, each "
                    "sequence's parentSequenceId shows its parent (manage_sequence list, GET /api/v1/sequences).",
                },
                "threads": {
                    "type": "array",
                    "items": {"type": "string"},
                    "maxItems": THREADS_SHOWN,
                    "description": f"The threads it is a member of, by name: the first {THREADS_SHOWN} only.",
                },
                "threadCount": {
                    "type": "integer",
                    "description": "How many threads it is a member of in all (each thread's briefing and "
                    "manage_sequence list with thread show its members).",
                },
                "branches": {"type": "array", "items": _BRANCH_OUT},
            },
            ["sequenceId", "title", "status", "completed", "thoughtHistoryLength", "branches"],
            closed=False,
        ),
        "thoughts": {"type": "array", "items": _THOUGHT_OUT},
        "nextCursor": nullable({"type": "string"}),
    },
    ["sequence", "thoughts", "nextCursor"],
    closed=False,
)

DELETE_INPUT = _obj(
    {
        "sequenceId": _SEQ_ID,
        "confirm": {"type": "boolean", "const": True, "description": "Must be true: deletion is permanent."},
    },
    ["sequenceId", "confirm"],
)

DELETE_OUTPUT = _obj(
    {
        "sequenceId": {"type": "string"},
        "deleted": {"type": "boolean"},
        "deletedThoughts": {"type": "integer"},
    },
    ["sequenceId", "deleted", "deletedThoughts"],
    closed=False,
)
