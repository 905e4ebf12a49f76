"""`/api/v1/proposals`: the pending list, accept and reject (`review_proposals`' library calls)."""

from __future__ import annotations

from starlette.responses import Response

from thoughtline.api.calls import Call, ok
from thoughtline.domain.coercion import coerce_int, coerce_str
from thoughtline.domain.thread_names import check_name
from thoughtline.library.review import DEFAULT_LIMIT, MAX_LIMIT
from thoughtline.wire.proposals import decision_json, page_json


async def list_proposals(call: Call) -> Response:
    """GET /proposals (`thread`, `cursor`, `limit` ≤ 50): pending proposals after matching what waits."""
    args = call.query(frozenset({"thread", "cursor", "limit"}))
    thread = None if args.get("thread") is None else check_name(args["thread"], "thread")
    limit = coerce_int(args, "limit", high=MAX_LIMIT) or DEFAULT_LIMIT
    cursor = coerce_str(args, "cursor", max_chars=500)
    return ok(page_json(await call.api.review.pending(call.store, thread, limit, cursor)))


async def accept(call: Call) -> Response:
    """POST /proposals/{id}/accept: the sequence joins the thread (addedBy review)."""
    return await _decide(call, accept=True)


async def reject(call: Call) -> Response:
    """POST /proposals/{id}/reject: the pair is never proposed again."""
    return await _decide(call, accept=False)


async def _decide(call: Call, *, accept: bool) -> Response:
    call.query(frozenset())
    rowid = call.proposal_id()
    return ok(decision_json(await call.api.review.decide(call.store, rowid, accept, call.now_ms)))
