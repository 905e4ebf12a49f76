"""The thread tools' handlers: `configure_thread` and `thread_briefing` (SPEC §5.3).

Thin adapters: parse and check arguments (`domain/arguments.py`, `domain/coercion.py`), call one
operation of `library/threads.py` or `library/briefing.py`, and render the typed result as structured
content (`wire/threads.py`) plus readable text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from thoughtline.clock import now_ms
from thoughtline.domain.arguments import coerce_sequence_id, parse_description, parse_thread_type
from thoughtline.domain.coercion import (
    coerce_bool,
    coerce_int,
    coerce_str,
    one_of,
    parse_instant,
    reject_unknown,
    require_confirm,
)
from thoughtline.domain.thread_names import check_name
from thoughtline.domain.thread_types import TYPE_SETTINGS, TypeSetting
from thoughtline.domain.wording import counted
from thoughtline.errors import invalid
from thoughtline.library import threads
from thoughtline.library.briefing import DEFAULT_EVENTS, MAX_EVENTS, Briefing, read_briefing
from thoughtline.library.threads import DEFAULT_THREAD_PAGE, MAX_THREAD_PAGE, Periods, ThreadChange
from thoughtline.mcp.thread_schemas import CONFIGURE_ACTIONS, briefing_tool, configure_tool
from thoughtline.mcp.tools import ToolContext, ToolOutput, ToolSpec
from thoughtline.storage.rows import iso
from thoughtline.wire.threads import briefing_json, deleted_json, thread_json, thread_page_json

# The arguments each action takes besides `action`; anything else is refused by name.
_ACTION_FIELDS: dict[str, frozenset[str]] = {
    "list": frozenset({"includeArchived", "limit", "cursor"}),
    "create": frozenset({"name", "description"}),
    "rename": frozenset({"name", "newName"}),
    "set_description": frozenset({"name", "description"}),
    "archive": frozenset({"name"}),
    "unarchive": frozenset({"name"}),
    "delete": frozenset({"name", "confirm"}),
    "pin": frozenset({"name", "sequenceId"}),
    "unpin": frozenset({"name", "sequenceId"}),
    "set_type": frozenset({"name", "type"}),
}


def thread_name(args: Mapping[str, Any], field: str = "name") -> str:
    """A required thread name argument."""
    value = args.get(field)
    if value is None and field == "newName":
        raise invalid("'newName' is required with rename: the thread's new name, 1-64 characters.")
    if value is None:
        raise invalid(f"'{field}' is required: the thread's name (list them with action 'list').")
    return check_name(value, field)


def thread_type_argument(args: Mapping[str, Any]) -> TypeSetting:
    """The required `type` of set_type."""
    value = args.get("type")
    if value is None:
        raise invalid(f"'type' is required with set_type: one of {', '.join(TYPE_SETTINGS)}.")
    return parse_thread_type(value)


def _change(action: str, args: Mapping[str, Any]) -> ThreadChange:
    """The change one action asks for (rename, set_description, archive, unarchive, set_type)."""
    if action == "rename":
        return ThreadChange(new_name=thread_name(args, "newName"))
    if action == "set_description":
        return ThreadChange(description=parse_description(args, required=True))
    if action == "set_type":
        return ThreadChange(type=thread_type_argument(args))
    return ThreadChange(status="archived" if action == "archive" else "active")


class ThreadTools:
    """`configure_thread` and `thread_briefing`, with the lifecycle periods from Settings."""

    def __init__(self, periods: Periods) -> None:
        self._periods = periods

    def tools(self) -> list[ToolSpec]:
        """The two tool specs (registered only when the library is on)."""
        return [ToolSpec(configure_tool(), self._configure), ToolSpec(briefing_tool(), self._briefing)]

    async def _configure(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        action = one_of(args.get("action"), "action", CONFIGURE_ACTIONS)
        reject_unknown(args, _ACTION_FIELDS[action] | {"action"})
        at = now_ms(ctx.clock)
        structured = await self._run(action, args, ctx, at)
        return ToolOutput(text=_render(structured), structured=structured)

    async def _run(self, action: str, args: Mapping[str, Any], ctx: ToolContext, at: int) -> dict[str, Any]:
        """Validate every argument first, then run the one library operation the action names."""
        periods, opened = self._periods, ctx.store
        if action == "list":
            include = bool(coerce_bool(args, "includeArchived"))
            limit = coerce_int(args, "limit", high=MAX_THREAD_PAGE) or DEFAULT_THREAD_PAGE
            cursor = coerce_str(args, "cursor", max_chars=threads.MAX_THREAD_CURSOR)
            found = await threads.thread_page(opened, periods, at, include, limit, cursor)
            return {"action": action, **thread_page_json(found, include)}
        name = thread_name(args)
        if action == "create":
            description = parse_description(args, required=False) or ""
            created = await threads.create_thread(opened, periods, at, name, description)
            return {"action": action, "thread": thread_json(created)}
        if action == "delete":
            require_confirm(args, "deleting a thread removes its memberships and proposals (never a sequence)")
            return {"action": action, **deleted_json(await threads.delete_thread(opened, name))}
        if action in ("pin", "unpin"):
            sequence_id = coerce_sequence_id(args, "sequenceId")
            if sequence_id is None:
                raise invalid(f"'sequenceId' is required to {action} a sequence: the id sequentialthinking returned.")
            pinned = await threads.set_membership(opened, periods, at, name, sequence_id, action == "pin")
            return {
                "action": action,
                "thread": thread_json(pinned.thread),
                "sequenceId": pinned.sequence_id,
                "member": pinned.member,
                "changed": pinned.changed,
            }
        result = await threads.change_thread(opened, periods, at, name, _change(action, args))
        extra = {"previousName": result.previous_name} if action == "rename" else {"changed": result.changed}
        return {"action": action, "thread": thread_json(result.thread), **extra}

    async def _briefing(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        reject_unknown(args, frozenset({"name", "since", "eventsLimit"}))
        name = thread_name(args)
        since = parse_instant(args, "since")
        limit = coerce_int(args, "eventsLimit", high=MAX_EVENTS) or DEFAULT_EVENTS
        found = await read_briefing(
            ctx.store, name, now_ms=now_ms(ctx.clock), periods=self._periods, events_limit=limit, since_ms=since
        )
        return ToolOutput(text=render_briefing(found), structured=briefing_json(found))


def _thread_line(t: Mapping[str, Any]) -> str:
    status = "archived" if t["status"] == "archived" else t["lifecycle"]
    pending = f" · {counted(t['pendingProposals'], 'proposal')}" if t["pendingProposals"] else ""
    return f"{t['name']} [{status}] · {t['type']} · {counted(t['memberCount'], 'sequence')}{pending}"


def _render(result: Mapping[str, Any]) -> str:
    """The readable text of a configure_thread result."""
    action = result["action"]
    if action == "list":
        found, count = result["threads"], result["threadCount"]
        if not found:
            if count:  # the threads after the cursor were deleted since it was issued
                return f"No threads on this page; {counted(count, 'thread')} in all."
            return "No threads yet; create one with configure_thread action 'create'."
        head = f"{counted(count, 'thread')}:"
        if result["nextCursor"]:
            head = (
                f"{counted(count, 'thread')} by name; {len(found)} listed here. For the next page call "
                f"configure_thread action 'list' with cursor {result['nextCursor']!r}"
                + (", includeArchived true." if result["includeArchived"] else ".")
            )
        return "\n".join([head, *(f"- {_thread_line(t)}" for t in found)])
    if action == "delete":
        return (
            f"Deleted thread {result['name']!r}: {result['removedMemberships']} memberships and "
            f"{result['removedProposals']} proposals removed; no sequence was deleted."
        )
    t = result["thread"]
    verbs = {
        "create": f"Created thread {t['name']!r}.",
        "rename": f"Renamed thread {result.get('previousName')!r} to {t['name']!r}; its members stay.",
        "set_description": f"Updated the description of {t['name']!r}.",
        "archive": f"Archived thread {t['name']!r}; its members stay and it takes no new ones from sequentialthinking.",
        "unarchive": f"Thread {t['name']!r} is active again.",
        "pin": f"Sequence {result.get('sequenceId')} is a member of {t['name']!r}.",
        "unpin": f"Sequence {result.get('sequenceId')} is not a member of {t['name']!r}; it won't be proposed again.",
        "set_type": f"Thread {t['name']!r} is now a {t['type']} thread"
        + (" (derived from its events)." if t["typeSource"] == "derived" else "."),
    }
    return f"{verbs[action]}\n{_thread_line(t)}"


def render_briefing(b: Briefing) -> str:
    """A readable briefing: the thread line, open items, decisions, recent events, members."""
    t = b.thread
    lines = [
        f"Thread {t.name!r} · {t.type} · {t.lifecycle} · {t.state} · {counted(t.member_count, 'sequence')}",
        t.headline,
    ]

    def block(title: str, events: tuple[Any, ...], count: int | None = None) -> None:
        if events:
            left_out = (count or 0) - len(events)
            more = f" (the newest {len(events)} of {count}; {left_out} older left out)" if left_out > 0 else ""
            lines.extend(["", f"{title}{more}:"])
            lines.extend(f"- {iso(e.at)[:10]} {e.kind}: {e.text} ({e.sequence_id} #{e.thought_number})" for e in events)

    block("Open blockers", b.open_blockers, b.open_blocker_count)
    block("Open questions", b.open_questions, b.open_question_count)
    block("Decisions", b.decisions)
    if b.latest_conclusion is not None:
        block("Latest conclusion", (b.latest_conclusion,))
    block("Recent events", b.events)
    if b.members:
        lines.extend(["", "Members" + _members_left_out(t.name, len(b.members), t.member_count) + ":"])
        lines.extend(f"- {m.sequence_id} [{m.status}] {m.title} (added by {m.added_by})" for m in b.members)
    changed = b.changed_since
    if changed is not None:
        lines.extend(
            [
                "",
                f"Since {iso(changed.since)}: {counted(changed.new_event_count, 'new event')}, "
                f"{counted(changed.new_member_count, 'new member')}; state {changed.state_then} → {changed.state_now}.",
            ]
        )
    return "\n".join(lines)


def _members_left_out(name: str, shown: int, count: int) -> str:
    """How many members the briefing leaves out and where the rest are listed ('' when none is)."""
    if count <= shown:
        return ""
    return (
        f" (the {shown} most recently updated of {count}; list the rest with manage_sequence action 'list', "
        f"thread {name!r}, order 'created', following nextCursor to the last page, or page "
        "GET /api/v1/sequences?thread=…&order=created)"
    )
