"""`/api/v1/sequences`: the recent list, a sequence's history, delete, and lifecycle actions.

Each route calls the library function of its tool (`library/sequences.py`, `library/history.py`)
with the tools' argument rules and answers with the tool's JSON (`wire/`).
"""

from __future__ import annotations

from starlette.responses import Response

from thoughtline.api.calls import Call, ok
from thoughtline.domain.arguments import parse_delete, parse_history
from thoughtline.domain.coercion import coerce_int, coerce_str, one_of, optional_one_of
from thoughtline.errors import DomainError
from thoughtline.library import history, sequences
from thoughtline.storage.search import STATUSES
from thoughtline.wire.history import history_json
from thoughtline.wire.sequences import deletion_json, page_json, transition_json

MAX_LIMIT = 50
DEFAULT_LIMIT = 20
_LIST_FIELDS = frozenset({"status", "thread", "limit", "cursor", "order"})
_HISTORY_FIELDS = frozenset({"cursor", "limit", "order", "branchId", "maxCharacters"})


async def list_sequences(call: Call) -> Response:
    """GET /sequences: most recently updated first, or oldest created first with `order=created`.

    Also `status`, `thread`, `limit` ≤ 50 and `cursor`; a client that walks every page to enumerate
    its sequences asks for `order=created`, whose paging key never changes (docs/api.md, "Paging").
    """
    args = call.query(_LIST_FIELDS)
    status = optional_one_of(args, "status", STATUSES)
    thread = coerce_str(args, "thread", max_chars=128)
    limit = coerce_int(args, "limit", high=MAX_LIMIT) or DEFAULT_LIMIT
    cursor = coerce_str(args, "cursor", max_chars=sequences.MAX_LIST_CURSOR)
    order = optional_one_of(args, "order", sequences.LIST_ORDERS) or sequences.DEFAULT_ORDER
    return ok(page_json(await sequences.list_sequences(call.store, status, thread, limit, cursor, order)))


async def read_sequence(call: Call) -> Response:
    """GET /sequences/{id}: one page of history, as `get_thought_history` returns it."""
    inp = parse_history({**call.query(_HISTORY_FIELDS), "sequenceId": call.sequence_id()})
    return ok(history_json(await history.read_history(call.store, inp)))


async def delete_sequence(call: Call) -> Response:
    """DELETE /sequences/{id}?confirm=true: permanent; an unknown id is 404."""
    inp = parse_delete({**call.query(frozenset({"confirm"})), "sequenceId": call.sequence_id()})
    deleted = await sequences.delete_sequence(call.store, inp.sequence_id)
    if not deleted.deleted:
        raise DomainError("sequence_not_found", f"no sequence {inp.sequence_id} in your store; nothing was deleted.")
    return ok(deletion_json(deleted))


async def lifecycle_action(call: Call) -> Response:
    """POST /sequences/{id}/{action}: pause, resume (with the last thought), complete, abandon."""
    call.query(frozenset())
    action = one_of(call.path("action"), "action", sequences.LIFECYCLE_ACTIONS)
    sequence_id = call.sequence_id()
    return ok(transition_json(await sequences.change_status(call.store, sequence_id, action, call.now_ms)))
