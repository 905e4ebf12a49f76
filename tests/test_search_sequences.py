"""`search_thoughts` with `by: "sequence"` and matched-passage snippets, through the real MCP client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support import TOKEN, mcp_client, serve_in_thread, text
from thoughtline.config import Settings
from thoughtline.library.embed import MiniLMEmbedder
from thoughtline.web.app import create_app

pytestmark = pytest.mark.anyio

FLAKY = [
    "The checkout integration test fails about one run in five, only on CI.",
    "Locally it passes 200 times in a row, so timing on the shared runners is the suspect.",
    "Found it: two tests share a fixture that writes the same temp file, and CI runs them in parallel.",
    "Gave each test its own temp dir; 500 CI runs without a failure.",
]
FLAKY_AGAIN = [
    "The search indexer test is flaky on CI again: passes locally, fails on the runners sometimes.",
    "Same pattern as before: parallel tests writing one shared cache directory.",
]
GARDEN = ["Tomatoes need staking this week; the basil is bolting in the heat."]


async def _write(client: Any, thoughts: list[str]) -> str:
    seq: str | None = None
    for number, thought in enumerate(thoughts, start=1):
        args: dict[str, Any] = {
            "thought": thought,
            "thoughtNumber": number,
            "totalThoughts": len(thoughts),
            "nextThoughtNeeded": number < len(thoughts),
        }
        if seq is not None:
            args["sequenceId"] = seq
        result = await client.call_tool("sequentialthinking", args)
        assert not result.is_error, text(result)
        seq = str(result.structured_content["sequenceId"])
    assert seq is not None
    return seq


async def test_by_sequence_returns_each_sequence_once_with_its_best_thought(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    app = create_app(Settings(data_dir=tmp_path / "mcp", api_token=TOKEN), embedder_factory=lambda: embedder)
    with serve_in_thread(app) as running:
        async with mcp_client(running.base_url) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            schema = tools["search_thoughts"].input_schema["properties"]["by"]
            assert schema["enum"] == ["thought", "sequence"]
            flaky = await _write(client, FLAKY)
            again = await _write(client, FLAKY_AGAIN)
            await _write(client, GARDEN)

            found = await client.call_tool(
                "search_thoughts", {"query": "have I fixed a test that only fails on CI before?", "by": "sequence"}
            )
            assert not found.is_error, text(found)
            out = found.structured_content
            assert out is not None
            assert out["by"] == "sequence"
            assert out["abstained"] is False
            ids = [r["sequenceId"] for r in out["results"]]
            assert len(ids) == len(set(ids))  # each sequence once
            assert set(ids[:2]) == {flaky, again}
            first = next(r for r in out["results"] if r["sequenceId"] == flaky)
            assert first["thoughtCount"] == len(FLAKY)
            assert first["status"] == "completed"
            assert first["title"].startswith("The checkout integration test fails")
            assert first["updatedAt"].endswith("Z")
            assert 1 <= first["thoughtNumber"] <= len(FLAKY)
            assert first["snippet"] in " ".join(FLAKY)
            assert "4 thoughts" in text(found)

            per_thought = await client.call_tool("search_thoughts", {"query": "flaky test on CI"})
            assert per_thought.structured_content is not None
            assert per_thought.structured_content["by"] == "thought"
            rows = [r["sequenceId"] for r in per_thought.structured_content["results"]]
            assert rows.count(flaky) > 1  # without grouping a sequence may appear several times

            bad = await client.call_tool("search_thoughts", {"query": "flaky", "by": "topic"})
            assert bad.is_error
            assert "'by' must be one of thought, sequence" in text(bad)


async def test_a_semantic_match_shows_the_sentence_that_matched_not_the_opening(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    body = (
        "Quarterly planning notes for the platform team, covering hiring, budget and the roadmap. "
        "Hiring: two backend roles stay open until March. "
        "Budget: the cloud line is flat year over year. "
        "Roadmap risk: the message broker upgrade could stall every consumer for a day. "
        "Next review in six weeks."
    )
    app = create_app(Settings(data_dir=tmp_path / "mcp", api_token=TOKEN), embedder_factory=lambda: embedder)
    with serve_in_thread(app) as running:
        async with mcp_client(running.base_url) as client:
            await _write(client, [body])
            found = await client.call_tool("search_thoughts", {"query": "queue migration might block consumers"})
            assert found.structured_content is not None
            hit = found.structured_content["results"][0]
            assert hit["snippet"] == "Roadmap risk: the message broker upgrade could stall every consumer for a day."
