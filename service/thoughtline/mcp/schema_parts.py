"""Building blocks the library tools' declarations share: closed inputs, records and annotations.

`schemas.py` has the core tools' own; these serve `thread_schemas.py` and `proposal_schemas.py`
(and can serve `library_schemas.py`), so each declaration states only what is its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import mcp_types as types


def closed_input(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """An input schema that refuses unknown arguments, as the handlers do (`reject_unknown`)."""
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def record(properties: dict[str, Any], optional: Iterable[str] = ()) -> dict[str, Any]:
    """An output object whose fields are all present except `optional`; open to later fields."""
    skip = set(optional)
    return {"type": "object", "properties": properties, "required": [k for k in properties if k not in skip]}


def tool_annotations(title: str, *, read_only: bool, destructive: bool, idempotent: bool) -> types.ToolAnnotations:
    """The tool hints; none of the library tools reach outside the user's store."""
    return types.ToolAnnotations(
        title=title,
        read_only_hint=read_only,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=False,
    )
