"""`GET /api/v1/search` through a real server: the tool's search over query parameters."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.api_support import api_client, body, refusal
from tests.sample_notes import HOSE
from tests.test_threads_proposals import BREAD, RUN, write
from tests.thread_support import Served, call, connected, create, served
from thoughtline.config import Settings
from thoughtline.library.embed import MiniLMEmbedder

pytestmark = pytest.mark.anyio


@pytest.fixture
def app(settings: Settings, embedder: MiniLMEmbedder) -> Iterator[Served]:
    with served(settings, embedder_factory=lambda: embedder) as running:
        yield running


def _same(result: dict[str, Any]) -> list[tuple[str, int, float]]:
    return [(r["sequenceId"], r["thoughtNumber"], r["score"]) for r in result["results"]]


async def test_search_answers_what_the_tool_answers_for_the_same_arguments(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "garden")
        hose = await write(client, HOSE, threads=["garden"])
        await write(client, RUN)
        await write(client, BREAD)
        tool = await call(client, "search_thoughts", query="leaking garden hose", limit=3)
        grouped = await call(client, "search_thoughts", query="leaking garden hose", by="sequence", thread="garden")
    async with api_client(app) as api:
        rest = body(await api.get("/search", params={"q": "leaking garden hose", "limit": "3"}))
        rest_grouped = body(
            await api.get("/search", params={"q": "leaking garden hose", "by": "sequence", "thread": "garden"})
        )
    assert _same(rest) == _same(tool)
    assert rest["results"][0]["sequenceId"] == hose
    assert [r["sequenceId"] for r in rest_grouped["results"]] == [r["sequenceId"] for r in grouped["results"]] == [hose]
    assert rest_grouped["by"] == "sequence"


async def test_repeated_alternatives_are_the_tools_alternatives(app: Served) -> None:
    phrasings = ["water bill went up", "drip line repair in the backyard"]
    async with connected(app) as client:
        hose = await write(client, HOSE)
        await write(client, BREAD)
        tool = await call(client, "search_thoughts", query="why is the garden wet", alternatives=phrasings)
    async with api_client(app) as api:
        rest = body(await api.get("/search", params={"q": "why is the garden wet", "alternatives": phrasings}))
        too_many = refusal(await api.get("/search", params={"q": "x", "alternatives": ["y"] * 5}), 400)
    assert _same(rest) == _same(tool)
    assert rest["results"][0]["sequenceId"] == hose
    assert too_many[0] == "invalid_input"
    assert "'alternatives'" in too_many[1]


@pytest.mark.parametrize(
    ("params", "status", "code", "needle"),
    [
        ({}, 400, "invalid_input", "'q' is required: send the question"),
        ({"q": ""}, 400, "invalid_input", "'q' is empty: send the question"),
        ({"q": "\u200b\u200b"}, 400, "invalid_input", "'q' is empty to a reader"),
        ({"q": "x", "by": "word"}, 400, "invalid_input", "'by'"),
        ({"q": "x", "limit": "51"}, 400, "invalid_input", "'limit'"),
        ({"q": "x", "status": "done"}, 400, "invalid_input", "'status'"),
        ({"q": "x", "since": "2026-02-01", "until": "2026-01-01"}, 400, "invalid_input", "'since'"),
        ({"q": "x", "thread": "nope"}, 404, "thread_not_found", "'nope'"),
        ({"q": "x", "colour": "red"}, 400, "invalid_input", "'colour'"),
    ],
)
async def test_search_refusals_are_the_tools_with_a_fitting_status(
    app: Served, params: dict[str, str], status: int, code: str, needle: str
) -> None:
    async with api_client(app) as api:
        got, message = refusal(await api.get("/search", params=params), status)
    assert got == code
    assert needle in message
    assert "'query'" not in message  # the tool's argument; the route's parameter is `q`
    assert "leave the field out" not in message  # leaving `q` out is refused too
