"""Declarations of the library tools: names, descriptions, JSON Schemas and annotations.

Kept apart from the handlers in `library_tools.py`, as `schemas.py` is for the core tools.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

from thoughtline.library.query import MAX_ALTERNATIVE_CHARS, MAX_ALTERNATIVES
from thoughtline.library.sequences import DEFAULT_ORDER, LIST_ORDERS
from thoughtline.mcp.schemas import nullable
from thoughtline.storage.search import STATUSES

MAX_QUERY_CHARS = 1_000
DEFAULT_LIMIT = 10
MAX_LIMIT = 50
SEARCH_BY = ("thought", "sequence")
ACTIONS = ("pause", "resume", "complete", "abandon")
LIST_ACTION = "list"

SEARCH_DESCRIPTION = """Search your own stored reasoning by meaning and keywords ("how did I handle X before?").

Send the question as query and, in alternatives, two or three other ways of putting it. Past
reasoning was written while solving the problem, in that moment's words, which are rarely the words
of today's question; each alternative is another chance to meet them. Good alternatives: (1) the
question in other words or the practitioner's term; (2) the concrete things likely involved
(components, symptoms, error text, commands, quantities); (3) a one-sentence guess, in the first
person, at what the earlier thought said ("I traced the slowdown to a missing index on orders").
All phrasings make one search with one ranking. Put exact lookups (an id, an error string, a number)
in query itself: a thought holding every word of the query ranks high whatever the alternatives say.

Returns the best-matching thoughts with their sequenceId and thoughtNumber; read a whole sequence with
get_thought_history. by: "sequence" returns each sequence once ("have I solved this before?") with its
best-matching thought and its conclusion (the final thought's opening, or the latest one while the
sequence is open). Each result shows the sequence title, the passage that matched (snippet) and
similarity (raw semantic closeness, null for keyword-only matches); a line under the heading says how
strong the best match is. A result can be a near miss (same area, different problem): judge by the
snippet and title. When it is confident nothing stored is related, the search abstains (results: [],
abstained: true); it never abstains while recent thoughts are not indexed yet (unindexedThoughts).
Filters: sequenceId, status, since/until (ISO-8601; a date alone as until includes that whole UTC
day), thread (restricts, never boosts)."""

MANAGE_DESCRIPTION = """Change a reasoning sequence's lifecycle: pause, resume, complete or abandon it.

resume returns the sequence's last thought so you can continue where it stopped: its text names the
arguments of the next thought (sequenceId, the last thought's branchId if it was on a branch, and the
next free thoughtNumber there) for sequentialthinking."""

MANAGE_DISCOVERY = (
    " action 'list' shows your sequences a page at a time, most recently updated first, optionally by status or "
    "thread; while there are more, nextCursor is set: pass it as cursor, with the same status, thread and order, "
    "for the next page (null on the last). To walk every page (all of a thread's members), pass order 'created' "
    "(oldest first, a key that never moves, so each sequence comes once even while sequences change). status, "
    "limit, thread, cursor and order go with 'list' only; an argument sent with an action that does not take it "
    "is refused."
)

_STATUS_SCHEMA: dict[str, Any] = {"type": "string", "enum": list(STATUSES)}
_NULLABLE_STR: dict[str, Any] = nullable({"type": "string"})


def search_tool() -> types.Tool:
    """The `search_thoughts` declaration."""
    # One item shape for both groupings: `by: thought` fills createdAt, `by: sequence` fills
    # thoughtCount and updatedAt (its thoughtNumber and snippet are the sequence's best match).
    result_item = {
        "type": "object",
        "properties": {
            "sequenceId": {"type": "string"},
            "thoughtNumber": {"type": "integer"},
            "branchId": _NULLABLE_STR,
            "title": {"type": "string"},
            "snippet": {"type": "string", "description": "The passage that matched."},
            "score": {"type": "number"},
            "similarity": nullable({"type": "number"}),
            "status": _STATUS_SCHEMA,
            "kind": {**nullable({"type": "string"}), "description": "The sequence's free label, null without one."},
            "createdAt": {"type": "string"},
            "thoughtCount": {"type": "integer"},
            "updatedAt": {"type": "string"},
            "conclusion": {
                "type": "object",
                "description": "How the sequence ended (by: sequence): its final thought's opening, or its latest.",
                "properties": {
                    "thoughtNumber": {"type": "integer"},
                    "branchId": _NULLABLE_STR,
                    "text": {"type": "string"},
                    "final": {"type": "boolean", "description": "false while the sequence is still open."},
                },
                "required": ["thoughtNumber", "text", "final"],
            },
        },
        "required": ["sequenceId", "thoughtNumber", "branchId", "title", "snippet", "score", "similarity", "status"],
    }
    return types.Tool(
        name="search_thoughts",
        title="Search thoughts",
        description=SEARCH_DESCRIPTION,
        input_schema={
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "maxLength": MAX_QUERY_CHARS},
                "alternatives": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1, "maxLength": MAX_ALTERNATIVE_CHARS},
                    "maxItems": MAX_ALTERNATIVES,
                    "description": "Two or three other phrasings: other words, the concrete terms involved, "
                    "a one-sentence guess at what the earlier thought said.",
                },
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
                "by": {
                    "type": "string",
                    "enum": list(SEARCH_BY),
                    "default": "thought",
                    "description": "'sequence': each sequence once, with its best-matching thought and its conclusion.",
                },
                "sequenceId": {"type": "string", "pattern": "^seq_[0-9a-f]{32}$"},
                "status": _STATUS_SCHEMA,
                "since": {"type": "string", "description": "ISO-8601 date or time; thoughts written at or after it."},
                "until": {"type": "string", "description": "ISO-8601 date or time; thoughts written at or before it."},
                "thread": {"type": "string", "description": "Only sequences in this thread."},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        output_schema={
            "type": "object",
            "properties": {
                "results": {"type": "array", "items": result_item},
                "abstained": {"type": "boolean"},
                "by": {"type": "string", "enum": list(SEARCH_BY)},
                "unindexedThoughts": {"type": "integer"},
            },
            "required": ["results", "abstained"],
        },
        annotations=types.ToolAnnotations(
            title="Search thoughts",
            read_only_hint=True,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        ),
    )


def manage_tool(discovery: bool) -> types.Tool:
    """The `manage_sequence` declaration; without `discovery` there is no 'list' action."""
    actions = [*ACTIONS, LIST_ACTION] if discovery else list(ACTIONS)
    properties: dict[str, Any] = {
        "action": {"type": "string", "enum": actions},
        "sequenceId": {
            "type": "string",
            "pattern": "^seq_[0-9a-f]{32}$",
            "description": "Required by pause, resume, complete and abandon (and taken by no other action).",
        },
    }
    if discovery:
        properties["status"] = {**_STATUS_SCHEMA, "description": "With action 'list': only this status."}
        properties["limit"] = {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT}
        properties["thread"] = {"type": "string", "description": "With action 'list': only this thread's members."}
        properties["cursor"] = {
            "type": "string",
            "description": "With action 'list': the nextCursor of the previous page (same status, thread and order).",
        }
        properties["order"] = {
            "type": "string",
            "enum": list(LIST_ORDERS),
            "default": DEFAULT_ORDER,
            "description": "With action 'list': 'updated' (most recently updated first) or 'created' (oldest "
            "first; use it to walk every page).",
        }
    return types.Tool(
        name="manage_sequence",
        title="Manage sequence",
        description=MANAGE_DESCRIPTION + (MANAGE_DISCOVERY if discovery else ""),
        input_schema={
            "type": "object",
            "properties": properties,
            "required": ["action"],
            "additionalProperties": False,
        },
        output_schema={
            "type": "object",
            "properties": {
                "sequenceId": {"type": "string"},
                "status": _STATUS_SCHEMA,
                "thoughtHistoryLength": {"type": "integer"},
                "totalThoughts": {"type": "integer"},
                "lastThought": {"type": "object"},
                "sequences": {"type": "array", "items": {"type": "object"}},
                "nextCursor": {
                    **nullable({"type": "string"}),
                    "description": "With action 'list': pass it as cursor for the next page; null on the last.",
                },
            },
        },
        # A write tool, so not idempotent (SPEC §2.4), though pausing twice leaves what pausing once did.
        annotations=types.ToolAnnotations(
            title="Manage sequence",
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=False,
            open_world_hint=False,
        ),
    )
