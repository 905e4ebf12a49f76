"""Declaration of `review_proposals` (SPEC §5.3): its actions, input and output schemas.

Nullable fields use `schemas.nullable` (`anyOf` with a null branch), never a list-valued `type`,
which some clients reject.
"""

from __future__ import annotations

import mcp_types as types

from thoughtline.domain.arguments import PROPOSAL_ID_DIGITS
from thoughtline.library.review import DEFAULT_LIMIT, MAX_LIMIT
from thoughtline.mcp.schema_parts import closed_input, record, tool_annotations
from thoughtline.mcp.schemas import nullable
from thoughtline.mcp.thread_schemas import NAME_SCHEMA

REVIEW_ACTIONS = ("list", "accept", "reject")
PROPOSAL_ID_PATTERN = f"^prp_[1-9][0-9]{{0,{PROPOSAL_ID_DIGITS - 1}}}$"

REVIEW_DESCRIPTION = """Review suggested thread memberships: sequences whose content matches a thread.

action: list (thread optional, cursor, limit ≤ 50) | accept (proposalId) | reject (proposalId).
Suggestions are made after a sequence completes and when a thread is created or re-described;
nothing joins a thread until you accept it. Accept adds the sequence to the thread; reject
records the pair so it is never suggested again. pendingCount counts every pending proposal of
the list (all pages). A list answers within a few seconds: when
matching is still running (many threads created at once), it says so in matchingPending; list
again shortly for the rest."""

PROPOSAL_OBJECT = record(
    {
        "proposalId": {"type": "string"},
        "thread": {"type": "string"},
        "sequenceId": {"type": "string"},
        "title": {"type": "string"},
        "similarity": {"type": "number"},
        "evidence": {"type": "string"},
        "proposedAt": {"type": "string"},
    }
)


def review_tool() -> types.Tool:
    """The `review_proposals` declaration."""
    return types.Tool(
        name="review_proposals",
        title="Review thread proposals",
        description=REVIEW_DESCRIPTION,
        input_schema=closed_input(
            {
                "action": {"type": "string", "enum": list(REVIEW_ACTIONS)},
                "thread": {**NAME_SCHEMA, "description": "With list: only this thread's proposals (any letter case)."},
                "cursor": {"type": "string", "description": "With list: nextCursor of the previous page."},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT},
                "proposalId": {
                    "type": "string",
                    "pattern": PROPOSAL_ID_PATTERN,
                    "description": "With accept / reject: the proposalId from list.",
                },
            },
            ["action"],
        ),
        output_schema={
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": list(REVIEW_ACTIONS)},
                "proposals": {"type": "array", "items": PROPOSAL_OBJECT},
                "nextCursor": nullable({"type": "string"}),
                "pendingCount": {"type": "integer", "minimum": 0},
                "matchingPending": record(
                    {"threads": {"type": "integer", "minimum": 0}, "sequences": {"type": "integer", "minimum": 0}}
                ),
                "proposalId": {"type": "string"},
                "thread": {"type": "string"},
                "sequenceId": {"type": "string"},
                "member": {"type": "boolean"},
                "addedBy": {"type": "string", "enum": ["review"]},
            },
            "required": ["action"],
        },
        annotations=tool_annotations("Review thread proposals", read_only=False, destructive=False, idempotent=False),
    )
