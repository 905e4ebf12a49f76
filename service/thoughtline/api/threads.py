"""`/api/v1/threads`: list, create, read, change, delete, pin and unpin members, and the briefing.

Each route calls the library function of `configure_thread` / `thread_briefing`
(`library/threads.py`, `library/briefing.py`) with the tools' argument rules and answers with
their JSON (`wire/threads.py`). A thread is addressed by its name (any letter case) in the path.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from thoughtline.api.calls import Call, ok
from thoughtline.domain.arguments import parse_description, parse_thread_type
from thoughtline.domain.coercion import coerce_bool, coerce_int, coerce_str, one_of, parse_instant, require_confirm
from thoughtline.domain.thread_names import check_name
from thoughtline.errors import invalid
from thoughtline.library import threads
from thoughtline.library.briefing import DEFAULT_EVENTS, MAX_EVENTS, read_briefing
from thoughtline.library.threads import DEFAULT_THREAD_PAGE, MAX_THREAD_PAGE, ThreadChange
from thoughtline.wire.threads import briefing_json, deleted_json, membership_json, thread_json, thread_page_json

_PATCH_FIELDS = frozenset({"newName", "description", "status", "type"})
THREAD_STATUSES = ("active", "archived")


def _name(call: Call) -> str:
    return check_name(call.path("name"), "name")


async def list_threads(call: Call) -> Response:
    """GET /threads (`includeArchived`, `limit`, `cursor`): one page by name, as configure_thread's list."""
    args = call.query(frozenset({"includeArchived", "limit", "cursor"}))
    include = bool(coerce_bool(args, "includeArchived"))
    limit = coerce_int(args, "limit", high=MAX_THREAD_PAGE) or DEFAULT_THREAD_PAGE
    cursor = coerce_str(args, "cursor", max_chars=threads.MAX_THREAD_CURSOR)
    found = await threads.thread_page(call.store, call.api.periods, call.now_ms, include, limit, cursor)
    return ok(thread_page_json(found, include))


async def create_thread(call: Call) -> Response:
    """POST /threads `{name, description}` → 201 and the thread."""
    call.query(frozenset())
    body = await call.body(frozenset({"name", "description"}))
    if body.get("name") is None:
        raise invalid("'name' is required: the new thread's name, 1-64 characters.")
    name = check_name(body["name"], "name")
    description = parse_description(body, required=False) or ""
    created = await threads.create_thread(call.store, call.api.periods, call.now_ms, name, description)
    return ok(thread_json(created), status=201)


async def read_thread(call: Call) -> Response:
    """GET /threads/{name}: the thread object."""
    call.query(frozenset())
    return ok(thread_json(await threads.get_thread(call.store, call.api.periods, call.now_ms, _name(call))))


def _change(body: dict[str, Any]) -> ThreadChange:
    if not body:
        raise invalid(f"send at least one of {', '.join(sorted(_PATCH_FIELDS))} to change.")
    nulls = sorted(k for k, v in body.items() if v is None)
    if nulls:
        raise invalid(f"{', '.join(repr(k) for k in nulls)} cannot be null; leave a field out to keep it.")
    return ThreadChange(
        new_name=None if "newName" not in body else check_name(body["newName"], "newName"),
        description=parse_description(body, required=False),
        status=None if "status" not in body else one_of(body["status"], "status", THREAD_STATUSES),
        type=None if "type" not in body else parse_thread_type(body["type"]),
    )


async def change_thread(call: Call) -> Response:
    """PATCH /threads/{name} with any of newName, description, status (active/archived), type."""
    call.query(frozenset())
    name = _name(call)
    change = _change(await call.body(_PATCH_FIELDS))
    changed = await threads.change_thread(call.store, call.api.periods, call.now_ms, name, change)
    return ok(thread_json(changed.thread))


async def delete_thread(call: Call) -> Response:
    """DELETE /threads/{name}?confirm=true: the thread, its memberships and proposals (never a sequence)."""
    args = call.query(frozenset({"confirm"}))
    name = _name(call)
    require_confirm(args, "deleting a thread removes its memberships and proposals (never a sequence)")
    return ok(deleted_json(await threads.delete_thread(call.store, name)))


async def pin(call: Call) -> Response:
    """PUT /threads/{name}/members/{sequenceId}: the sequence joins (addedBy user)."""
    return await _membership(call, member=True)


async def unpin(call: Call) -> Response:
    """DELETE /threads/{name}/members/{sequenceId}: it leaves, and is never proposed again."""
    return await _membership(call, member=False)


async def _membership(call: Call, *, member: bool) -> Response:
    call.query(frozenset())
    name = _name(call)
    sequence_id = call.sequence_id()
    result = await threads.set_membership(call.store, call.api.periods, call.now_ms, name, sequence_id, member)
    return ok(membership_json(result))


async def briefing(call: Call) -> Response:
    """GET /threads/{name}/briefing (`since`, `eventsLimit`): the `thread_briefing` result."""
    args = call.query(frozenset({"since", "eventsLimit"}))
    name = _name(call)
    since = parse_instant(args, "since")
    limit = coerce_int(args, "eventsLimit", high=MAX_EVENTS) or DEFAULT_EVENTS
    found = await read_briefing(
        call.store, name, now_ms=call.now_ms, periods=call.api.periods, events_limit=limit, since_ms=since
    )
    return ok(briefing_json(found))
