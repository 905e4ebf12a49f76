"""Where the pages get their data and send their changes: the library's own operations.

Every read and every curation a page offers is one call of the operation an MCP tool runs,
through the tool registry, with the caller's principal already bound by the session gate. The
results come back in the tools' (and SPEC §9's API) shapes; refusals keep their code and message.
Nothing here opens a connection, writes SQL or decides a rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import mcp_types as types

HISTORY_PAGE = 100
HISTORY_CHARACTERS = 250_000
MAX_HISTORY_PAGES = 200


class Refused(Exception):
    """A library operation said no; `code` and `message` are the tool's."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class Registry(Protocol):
    """The part of the tool registry the pages use."""

    def has(self, name: str) -> bool: ...

    async def call(self, name: str, args: Mapping[str, Any] | None) -> types.CallToolResult: ...


class Source:
    """The library's operations for the current caller, in the API's shapes."""

    def __init__(self, registry: Registry) -> None:
        self._registry = registry

    async def _call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        result = await self._registry.call(name, args)
        if result.is_error:
            text = " ".join(b.text for b in result.content if isinstance(b, types.TextContent))
            code, _, message = text.partition(": ")
            raise Refused(code or "invalid_input", message or text)
        return dict(result.structured_content or {})

    async def sequences(self, *, status: str | None = None, thread: str | None = None, limit: int = 50) -> list[Any]:
        """Recent sequences, newest first, each with the threads it belongs to."""
        args: dict[str, Any] = {"action": "list", "limit": limit}
        if status:
            args["status"] = status
        if thread:
            args["thread"] = thread
        listed: list[Any] = list((await self._call("manage_sequence", args)).get("sequences", []))
        for item in listed:
            if "threads" not in item:
                head = await self._call("get_thought_history", {"sequenceId": item["sequenceId"], "limit": 1})
                item["threads"] = head.get("sequence", {}).get("threads", [])
        return listed

    async def history(self, sequence_id: str) -> dict[str, Any]:
        """A sequence's record and every thought, oldest first (all pages of the history tool)."""
        args: dict[str, Any] = {"sequenceId": sequence_id, "limit": HISTORY_PAGE, "maxCharacters": HISTORY_CHARACTERS}
        thoughts: list[Any] = []
        page: dict[str, Any] = {}
        for _ in range(MAX_HISTORY_PAGES):
            page = await self._call("get_thought_history", args)
            thoughts.extend(page.get("thoughts", []))
            cursor = page.get("nextCursor")
            if not cursor:
                break
            args["cursor"] = cursor
        return {"sequence": page.get("sequence", {}), "thoughts": thoughts}

    async def search(self, query: str, *, limit: int = 20) -> dict[str, Any]:
        """Sequences matching `query`, best first (the search tool, one result per sequence)."""
        return await self._call("search_thoughts", {"query": query, "by": "sequence", "limit": limit})

    async def threads(self, *, include_archived: bool = True) -> list[Any]:
        """Every thread (archived ones too unless told otherwise)."""
        found = await self._call("configure_thread", {"action": "list", "includeArchived": include_archived})
        return list(found.get("threads", []))

    async def briefing(self, name: str, *, events: int = 100) -> dict[str, Any]:
        """A thread's briefing: state, open blockers and questions, decisions, events, members."""
        return await self._call("thread_briefing", {"name": name, "eventsLimit": events})

    async def proposals(self, *, cursor: str | None = None, limit: int = 20) -> dict[str, Any]:
        """One page of pending thread proposals and the next page's cursor."""
        args: dict[str, Any] = {"action": "list", "limit": limit}
        if cursor:
            args["cursor"] = cursor
        return await self._call("review_proposals", args)

    async def review(self, proposal_id: str, accept: bool) -> dict[str, Any]:
        """Accept or reject one proposal."""
        action = "accept" if accept else "reject"
        return await self._call("review_proposals", {"action": action, "proposalId": proposal_id})

    async def configure(self, action: str, **fields: Any) -> dict[str, Any]:
        """One curation step on a thread (create, rename, set_description, archive, unarchive, pin, unpin)."""
        return await self._call("configure_thread", {"action": action, **fields})

    async def lifecycle(self, sequence_id: str, action: str) -> dict[str, Any]:
        """Pause, resume, complete or abandon a sequence."""
        return await self._call("manage_sequence", {"action": action, "sequenceId": sequence_id})

    def library_on(self) -> bool:
        """Whether the library's discovery tools exist (THOUGHTLINE_LIBRARY=on)."""
        return self._registry.has("search_thoughts")
