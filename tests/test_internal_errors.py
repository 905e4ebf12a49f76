"""The honest catch-all: a failure nobody anticipated answers `internal_error` with the unknown-outcome
advice (a handler may already have committed), never "nothing was written", and leaks no text."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any, get_args

import pytest

from tests.support import TOKEN, mcp_client, serve_in_thread, structured, text
from thoughtline.clock import now_ms
from thoughtline.config import Settings
from thoughtline.domain import arguments
from thoughtline.errors import ErrorCode, http_status
from thoughtline.mcp.core_tools import core_tools
from thoughtline.mcp.tools import ToolContext, ToolOutput, ToolSpec
from thoughtline.storage import thoughts as store
from thoughtline.web.app import Extras, create_app

SECRET = "the launch code is 0000"


async def _commit_then_fail(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
    """Stores a thought, then fails while shaping the answer (as a handler bug would)."""
    inp = arguments.parse_thought(args)
    at = now_ms(ctx.clock)
    await ctx.store.write(lambda conn: store.append_thought(conn, inp, at, "seq_" + "a" * 32))
    raise ValueError(f"formatting failed on {inp.thought!r}")


def _failing_tool() -> ToolSpec:
    declared = core_tools()[0].tool.model_copy(update={"name": "commit_then_fail", "output_schema": None})
    return ToolSpec(declared, _commit_then_fail)


@pytest.mark.anyio
async def test_a_failure_after_commit_answers_internal_error_with_the_unknown_outcome_advice(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = Settings(data_dir=tmp_path / "data", api_token=TOKEN)
    args = {"thought": SECRET, "nextThoughtNeeded": True, "thoughtNumber": 1, "totalThoughts": 1}
    caplog.set_level(logging.INFO)
    with serve_in_thread(create_app(settings, extras=Extras(tools=[_failing_tool()]))) as running:
        async with mcp_client(running.base_url) as client:
            failed = await client.call_tool("commit_then_fail", args)
            stored = structured(await client.call_tool("get_thought_history", {"sequenceId": "seq_" + "a" * 32}))
    assert failed.is_error
    answer = text(failed)
    assert answer.startswith("internal_error: ")
    assert "may have been stored" in answer
    assert "read it back" in answer
    assert "retry with the same requestId" in answer
    assert "nothing was written" not in answer.lower()
    assert SECRET not in answer
    assert [t["thought"] for t in stored["thoughts"]] == [SECRET]  # it was stored: the advice was right
    assert "ValueError" in caplog.text
    assert SECRET not in caplog.text


def test_internal_error_is_one_of_the_listed_codes_and_every_code_has_an_http_status() -> None:
    codes = get_args(ErrorCode)
    assert "internal_error" in codes
    statuses = {code: http_status(code) for code in codes}
    assert statuses["internal_error"] == 500
    assert statuses["storage_error"] == 503
    assert statuses["invalid_input"] == 400
    assert statuses["sequence_not_found"] == statuses["proposal_not_found"] == 404
    assert statuses["idempotency_conflict"] == statuses["thread_exists"] == 409
    # Everything but the server's own failures is the caller's to fix.
    assert all(400 <= s < 500 for c, s in statuses.items() if c not in ("storage_error", "internal_error"))
