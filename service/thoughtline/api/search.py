"""`GET /api/v1/search`: `search_thoughts` over query parameters (`q`, repeated `alternatives`, filters)."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from thoughtline.api.calls import Call, ok
from thoughtline.errors import DomainError, invalid

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
    # The tool's messages name its argument `query` (and may advise leaving it out); here it is `q`, required.
    if not str(args.get("query", "")).strip():
        said = "is empty" if "query" in args else "is required"
        raise invalid(f"'q' {said}: send the question to search for, e.g. /api/v1/search?q=cache+invalidation.")
    try:
        return ok(await call.api.search(call.store, args))
    except DomainError as refused:
        if not refused.api_message.startswith("'query'"):
            raise
        raise DomainError(refused.code, refused.message, api_message="'q'" + refused.api_message[7:]) from None
