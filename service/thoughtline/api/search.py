"""`GET /api/v1/search`: `search_thoughts` over query parameters (`q`, repeated `alternatives`, filters)."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from thoughtline.api.calls import Call, ok

# Query parameter → search_thoughts argument; `q` is the question.
_ARGUMENTS = {
    "q": "query",
    "alternatives": "alternatives",
    "by": "by",
    "limit": "limit",
    "sequenceId": "sequenceId",
    "status": "status",
    "since": "since",
    "until": "until",
    "thread": "thread",
}


async def search(call: Call) -> Response:
    """The search's structured result, exactly as the tool returns it."""
    args: dict[str, Any] = {_ARGUMENTS[k]: v for k, v in call.query(frozenset(_ARGUMENTS)).items()}
    return ok(await call.api.search(call.store, args))
