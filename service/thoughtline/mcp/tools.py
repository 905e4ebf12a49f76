"""MCP tool plumbing: what a handler gets and returns, and the registry that routes calls to handlers.

Every failure of a known tool becomes an error result here (`failure_text`), from the one error
hierarchy in `errors.py`. The tools themselves live beside this module (`core_tools.py`,
`library_tools.py`, `thread_tools.py`, `proposal_tools.py`).
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import apsw
import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from thoughtline.clock import Clock
from thoughtline.errors import InternalError, ThoughtlineError
from thoughtline.identity import current_principal
from thoughtline.storage.db import StorageError
from thoughtline.storage.faults import caller_text
from thoughtline.storage.migrations import SchemaTooNewError
from thoughtline.storage.router import StoreRouter, UserStore

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ToolContext:
    """What a handler may use: the caller's store and the clock."""

    store: UserStore
    clock: Clock


@dataclass(frozen=True)
class ToolOutput:
    """A successful tool result: readable text plus structured content matching the output schema."""

    text: str
    structured: dict[str, Any]


Handler = Callable[[Mapping[str, Any], ToolContext], Awaitable[ToolOutput]]


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its MCP declaration and its handler."""

    tool: types.Tool
    handler: Handler


def error_result(text: str) -> types.CallToolResult:
    """A tool-level failure: `isError` with `<code>: <message>` text."""
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def failure_text(tool: str, exc: Exception) -> str:
    """The `<code>: <message>` a failed call answers, from the one hierarchy in `errors.py`.

    A refusal says what to fix; a storage fault says whether anything may be stored; anything
    else is a bug whose outcome is unknown (`internal_error`). Logs name the exception's type and
    frames only: its text could quote the arguments (thought text).
    """
    if isinstance(exc, SchemaTooNewError):
        return f"storage_error: {exc}"
    if isinstance(exc, StorageError | apsw.Error):
        logger.warning("tool %s: storage failure %s", tool, type(exc).__name__)
        return f"storage_error: {caller_text(exc)}"
    if isinstance(exc, ThoughtlineError):
        return exc.wire_text()
    frames = "".join(traceback.format_tb(exc.__traceback__))
    logger.error("tool %s failed with %s\n%s", tool, type(exc).__name__, frames)
    return InternalError().wire_text()


class ToolRegistry:
    """Lists tools and routes calls to their handlers with the caller's own store."""

    def __init__(self, specs: Sequence[ToolSpec], router: StoreRouter, clock: Clock) -> None:
        self._specs = {spec.tool.name: spec for spec in specs}
        self._router = router
        self._clock = clock

    @property
    def tools(self) -> list[types.Tool]:
        """The declarations, in registration order."""
        return [spec.tool for spec in self._specs.values()]

    def has(self, name: str) -> bool:
        """Whether a tool of this name is registered."""
        return name in self._specs

    async def call(self, name: str, args: Mapping[str, Any] | None) -> types.CallToolResult:
        """Run one tool call; every failure of a known tool becomes an error result, never an exception."""
        out = await self._run(name, args)
        if isinstance(out, str):
            return error_result(out)
        return types.CallToolResult(
            content=[types.TextContent(text=out.text)],
            structured_content=out.structured,
        )

    async def call_wire(self, name: str, args: Mapping[str, Any] | None) -> dict[str, Any]:
        """`call`, answered as the 2025-era wire carries a CallToolResult, without building the model.

        The direct paths (mcp/fastpath.py) send this as it is: the same JSON as
        `CallToolResult.model_dump(by_alias=True, mode="json", exclude_none=True)` gives, for a
        fraction of the CPU (tests/test_fastpath.py compares the two paths on the wire).
        """
        out = await self._run(name, args)
        if isinstance(out, str):
            return {"content": [{"type": "text", "text": out}], "isError": True}
        return {"content": [{"type": "text", "text": out.text}], "isError": False, "structuredContent": out.structured}

    async def _run(self, name: str, args: Mapping[str, Any] | None) -> ToolOutput | str:
        """The handler's output, or the `<code>: <message>` text of its failure."""
        spec = self._specs.get(name)
        if spec is None:
            # An unknown tool is a protocol error (MCP tools spec), not a tool result the model reads.
            raise MCPError(INVALID_PARAMS, f"Unknown tool '{name[:64]}'; available: {', '.join(self._specs)}")
        if args is not None and not isinstance(args, Mapping):
            return "invalid_input: tool arguments must be a JSON object."
        try:
            opened = await self._router.get(current_principal().user_key)
            with opened.in_use():  # not evicted between this call's reads and writes
                return await spec.handler(args or {}, ToolContext(store=opened, clock=self._clock))
        except Exception as exc:  # the outermost handler of a tool call: every failure becomes a result
            return failure_text(name, exc)
