"""Say what is wrong when the SDK refuses `tools/call` params whose `arguments` is not an object.

The SDK validates params with pydantic and, so as to put no pydantic text on the wire, answers any
failure with -32602 "Invalid request parameters" and empty `data`: a caller sending
`"arguments": [1, 2]` learns nothing. This middleware lets the SDK decide as before and only
rewords that one refusal, on both endpoints and in both eras (it runs inside the SDK's request
kernel). A request the SDK accepts never reaches the rewording; every other refusal is untouched.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from pydantic import ValidationError


class ToolArgumentsShape:
    """Server middleware: a refused tools/call whose `arguments` is present but not an object gets a
    -32602 naming the problem and the fix."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        try:
            return await call_next(ctx)
        except ValidationError:
            params = ctx.params
            arguments = params.get("arguments") if ctx.method == "tools/call" and isinstance(params, Mapping) else None
            if arguments is None or isinstance(arguments, Mapping):
                raise
            given = type(arguments).__name__
            kind = {"list": "an array", "str": "a string", "bool": "a boolean"}.get(given, "a number")
            raise MCPError(
                INVALID_PARAMS,
                f"Invalid request parameters: params.arguments is {kind}, but arguments must be a JSON object "
                "of the tool's arguments (each argument's name mapped to its value); tools/list shows each "
                "tool's input schema.",
                {"field": "params.arguments"},
            ) from None
