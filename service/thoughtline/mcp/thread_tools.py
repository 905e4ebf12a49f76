"""The thread tools' handlers: `configure_thread` and `thread_briefing` (SPEC §5.3).

Thin adapters in the shape of `tools.py`: parse and check arguments, run one store function in
the writer (configure) or a read snapshot (list, briefing), shape text + structured output.
Each write action runs as one transaction, so a refused call changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import apsw

from thoughtline.clock import now_ms
from thoughtline.domain.arguments import coerce_bool, coerce_int, coerce_sequence_id, parse_instant, reject_unknown
from thoughtline.domain.thread_names import check_name
from thoughtline.domain.wording import counted
from thoughtline.errors import DomainError, invalid
from thoughtline.library.briefing import Periods, briefing, render_briefing, thread_object
from thoughtline.mcp.thread_schemas import (
    CONFIGURE_ACTIONS,
    DEFAULT_EVENTS,
    MAX_DESCRIPTION,
    MAX_EVENTS,
    briefing_tool,
    configure_tool,
)
from thoughtline.mcp.tools import ToolContext, ToolOutput, ToolSpec
from thoughtline.storage import threads as thread_store

# The arguments each action takes besides `action`; anything else is refused by name.
_ACTION_FIELDS: dict[str, frozenset[str]] = {
    "list": frozenset({"includeArchived"}),
    "create": frozenset({"name", "description"}),
    "rename": frozenset({"name", "newName"}),
    "set_description": frozenset({"name", "description"}),
    "archive": frozenset({"name"}),
    "unarchive": frozenset({"name"}),
    "delete": frozenset({"name", "confirm"}),
    "pin": frozenset({"name", "sequenceId"}),
    "unpin": frozenset({"name", "sequenceId"}),
}
_CONTROL = {chr(c) for c in range(32) if chr(c) not in "\n\t"} | {"\x7f"}

Action = Callable[[apsw.Connection], dict[str, Any]]


def _name(args: Mapping[str, Any], field: str = "name") -> str:
    value = args.get(field)
    if value is None:
        raise invalid(f"'{field}' is required: the thread's name (list them with action 'list').")
    return check_name(value, field)


def _description(args: Mapping[str, Any], required: bool) -> str:
    value = args.get("description")
    if value is None:
        if required:
            raise invalid("'description' is required: a sentence or two on what the thread is about.")
        return ""
    if not isinstance(value, str):
        raise invalid("'description' must be a string: what the thread is about.")
    if len(value) > MAX_DESCRIPTION:
        raise invalid(f"'description' is {len(value)} characters; the limit is {MAX_DESCRIPTION}, shorten it.")
    if any(ch in _CONTROL for ch in value):
        raise invalid("'description' contains control characters; use printable text (newlines are fine).")
    return value.strip()


class ThreadTools:
    """`configure_thread` and `thread_briefing`, with the lifecycle periods from Settings."""

    def __init__(self, periods: Periods) -> None:
        self._periods = periods

    def tools(self) -> list[ToolSpec]:
        """The two tool specs (registered only when the library is on)."""
        return [ToolSpec(configure_tool(), self._configure), ToolSpec(briefing_tool(), self._briefing)]

    async def _configure(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        action = args.get("action")
        if not isinstance(action, str) or action not in CONFIGURE_ACTIONS:
            raise invalid(f"'action' must be one of {', '.join(CONFIGURE_ACTIONS)}; got {str(action)[:30]!r}.")
        reject_unknown(args, _ACTION_FIELDS[action] | {"action"})
        at = now_ms(ctx.clock)
        if action == "list":
            include = bool(coerce_bool(args, "includeArchived"))
            structured = await ctx.store.read(lambda conn: self._list(conn, include, at))
        else:
            work = self._action(action, args, at)
            structured = await ctx.store.write(work)
        return ToolOutput(text=_render(structured), structured=structured)

    def _list(self, conn: apsw.Connection, include_archived: bool, at: int) -> dict[str, Any]:
        found = thread_store.list_threads(conn, include_archived)
        return {
            "action": "list",
            "threads": [thread_object(conn, t, at, self._periods) for t in found],
            "includeArchived": include_archived,
        }

    def _action(self, action: str, args: Mapping[str, Any], at: int) -> Action:
        """Validate every argument first, then return the one-transaction store work."""
        name = _name(args)
        periods = self._periods

        def shaped(conn: apsw.Connection, thread: thread_store.ThreadRow, **extra: Any) -> dict[str, Any]:
            return {"action": action, "thread": thread_object(conn, thread, at, periods), **extra}

        if action == "create":
            description = _description(args, required=False)
            return lambda conn: shaped(conn, thread_store.create_thread(conn, name, description, at))
        if action == "rename":
            new_name = _name(args, "newName")

            def rename(conn: apsw.Connection) -> dict[str, Any]:
                thread = thread_store.require_thread(conn, name)
                renamed = thread_store.rename_thread(conn, thread, new_name, at)
                return shaped(conn, renamed, previousName=thread.name)

            return rename
        if action == "set_description":
            description = _description(args, required=True)

            def describe(conn: apsw.Connection) -> dict[str, Any]:
                thread = thread_store.require_thread(conn, name)
                updated = thread_store.set_description(conn, thread, description, at)
                return shaped(conn, updated, changed=description != thread.description)

            return describe
        if action in ("archive", "unarchive"):
            status = "archived" if action == "archive" else "active"

            def set_status(conn: apsw.Connection) -> dict[str, Any]:
                thread = thread_store.require_thread(conn, name)
                updated = thread_store.set_thread_status(conn, thread, status, at)
                return shaped(conn, updated, changed=status != thread.status)

            return set_status
        if action == "delete":
            confirm = args.get("confirm")
            if confirm is not True and confirm != "true":
                raise invalid(
                    "'confirm' must be true: deleting a thread removes its memberships and proposals "
                    "(never a sequence), so it must be asked for explicitly."
                )

            def delete(conn: apsw.Connection) -> dict[str, Any]:
                thread = thread_store.require_thread(conn, name)
                members, proposals = thread_store.delete_thread(conn, thread)
                return {
                    "action": action,
                    "deleted": True,
                    "name": thread.name,
                    "removedMemberships": members,
                    "removedProposals": proposals,
                }

            return delete
        return self._membership(action, args, name, at, shaped)

    def _membership(
        self, action: str, args: Mapping[str, Any], name: str, at: int, shaped: Callable[..., dict[str, Any]]
    ) -> Action:
        sequence_id = coerce_sequence_id(args, "sequenceId")
        if sequence_id is None:
            raise invalid(f"'sequenceId' is required to {action} a sequence: the id sequentialthinking returned.")

        def change(conn: apsw.Connection) -> dict[str, Any]:
            thread = thread_store.require_thread(conn, name)
            seq_rowid = thread_store.sequence_rowid(conn, sequence_id)
            if seq_rowid is None:
                raise DomainError(
                    "sequence_not_found",
                    f"no sequence {sequence_id} in your store; check the id (manage_sequence list).",
                )
            if action == "pin":
                changed = thread_store.add_member(conn, thread.rowid, seq_rowid, "user", at)
            else:
                changed = thread_store.remove_member(conn, thread.rowid, seq_rowid, at)
            return shaped(conn, thread, sequenceId=sequence_id, member=action == "pin", changed=changed)

        return change

    async def _briefing(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        reject_unknown(args, frozenset({"name", "since", "eventsLimit"}))
        name = _name(args)
        since = parse_instant(args, "since")
        limit = coerce_int(args, "eventsLimit", high=MAX_EVENTS) or DEFAULT_EVENTS
        at = now_ms(ctx.clock)
        periods = self._periods

        def read(conn: apsw.Connection) -> dict[str, Any]:
            thread = thread_store.require_thread(conn, name)
            return briefing(conn, thread, now_ms=at, periods=periods, events_limit=limit, since_ms=since)

        structured = await ctx.store.read(read)
        return ToolOutput(text=render_briefing(structured), structured=structured)


def _thread_line(t: Mapping[str, Any]) -> str:
    status = "archived" if t["status"] == "archived" else t["lifecycle"]
    pending = f" · {counted(t['pendingProposals'], 'proposal')}" if t["pendingProposals"] else ""
    return f"{t['name']} [{status}] · {counted(t['memberCount'], 'sequence')}{pending}"


def _render(result: Mapping[str, Any]) -> str:
    """The readable text of a configure_thread result."""
    action = result["action"]
    if action == "list":
        threads = result["threads"]
        if not threads:
            return "No threads yet; create one with configure_thread action 'create'."
        return "\n".join(
            [f"{len(threads)} thread{'s' if len(threads) != 1 else ''}:", *(f"- {_thread_line(t)}" for t in threads)]
        )
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
    }
    return f"{verbs[action]}\n{_thread_line(t)}"
