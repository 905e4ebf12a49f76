"""`search_thoughts` with `alternatives`, the evidence results carry, and the one-line verdict (SPEC §5.1)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.embedder_support import Wrapping
from tests.golden.harness import LibraryHarness, library_harness
from tests.support import text
from thoughtline.library.embed import MiniLMEmbedder, Vectors
from thoughtline.library.query import build_query
from thoughtline.library.retrieval import hybrid_search
from thoughtline.storage.db import connect
from thoughtline.storage.router import store_path

pytestmark = pytest.mark.anyio

EXPORT = [
    "Planning the week's maintenance work.",
    "The nightly export job crashes because the disk fills up with temporary files.",
    "Cleaned the temp directory after each run; the export has finished every night since.",
]
GARDEN = ["Tomatoes need staking this week; the basil is bolting in the heat."]
ERROR = ["Deploy failed with ERR_SSL_PROTOCOL_ERROR 0x1f3a on the staging proxy.", "Renewed the certificate."]
OPEN = ["Comparing two message brokers for the order events.", "Kafka keeps a replayable log; still checking costs."]


class Counting(Wrapping):
    """The real embedder, counting its calls."""

    def __init__(self, inner: MiniLMEmbedder) -> None:
        super().__init__(inner)
        self.calls: list[int] = []

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Embed for real and record how many texts came in this call."""
        self.calls.append(len(texts))
        return self._inner.embed(texts)


@pytest.fixture
async def h(tmp_path: Path, embedder: MiniLMEmbedder) -> AsyncIterator[LibraryHarness]:
    async with library_harness(tmp_path / "data", embedder) as harness:
        yield harness


async def _search(h: LibraryHarness, query: str, **extra: Any) -> dict[str, Any]:
    return await h.ok("search_thoughts", {"query": query, **extra})


@pytest.mark.parametrize(
    ("alternatives", "named"),
    [
        ("nightly export", "'alternatives' must be a list"),
        (["a", "b", "c", "d", "e"], "at most 4"),
        (["fine", "x" * 501], "'alternatives[1]' is 501 characters"),
        (["fine", "   "], "'alternatives[1]' is empty"),
        (["fine", "\u200b\ufeff"], "'alternatives[1]' is empty to a reader"),
        ([3], "'alternatives[0]' must be a string"),
        (["ok\x00no"], "'alternatives[0]' contains control characters"),
    ],
)
async def test_bad_alternatives_are_refused_naming_the_field(
    h: LibraryHarness, tmp_path: Path, alternatives: object, named: str
) -> None:
    await h.write_sequence(EXPORT)
    result = await h.call("search_thoughts", {"query": "export", "alternatives": alternatives})
    assert result.is_error
    assert text(result).startswith("invalid_input: ")
    assert named in text(result)
    # Refused before anything ran: the written thoughts still wait for their vectors.
    conn = connect(store_path(tmp_path / "data", "owner"), "wal", readonly=True)
    assert conn.execute("SELECT count(*) FROM vector_queue").fetchall()[0][0] == len(EXPORT)
    conn.close()


async def test_the_declaration_asks_for_two_or_three_alternatives_and_bounds_them(h: LibraryHarness) -> None:
    tools = {t.name: t for t in h.registry.tools}
    search = tools["search_thoughts"]
    schema = search.input_schema["properties"]["alternatives"]
    assert schema["maxItems"] == 4
    assert schema["items"]["maxLength"] == 500
    assert "two or three" in (search.description or "")
    assert "worded" in (search.description or "") or "words" in (search.description or "")


@pytest.mark.parametrize("on_helper", [False, True])
async def test_every_phrasing_is_embedded_in_one_call(embedder: MiniLMEmbedder, on_helper: bool) -> None:
    counting = Counting(embedder)
    with ThreadPoolExecutor(max_workers=1) as helper:
        query = build_query(
            "why did the job break",
            ["export crash", "disk full of temp files"],
            counting,
            helper if on_helper else None,
        )
        assert query.vectors is not None  # read: the embedding (on the helper thread, if any) is done
    assert query.vectors.shape == (3, embedder.dim)
    assert counting.calls == [3]
    assert query.terms == ("job", "break")
    assert "disk" in query.alternative_terms
    assert "job" not in query.alternative_terms


async def test_an_alternative_finds_reasoning_the_question_shares_no_word_with(h: LibraryHarness) -> None:
    export = await h.write_sequence(EXPORT)
    await h.write_sequence(GARDEN)
    await h.write_sequence(ERROR)
    out = await _search(
        h,
        "what went wrong with that overnight batch?",
        alternatives=["nightly export job crash", "disk full of temp files", "I found the export died on a full disk."],
    )
    assert out["abstained"] is False
    assert out["results"][0]["sequenceId"] == export
    crash = next(r for r in out["results"][:2] if r["thoughtNumber"] == 2)
    assert crash["sequenceId"] == export
    assert "disk fills up" in crash["snippet"]
    assert crash["title"] == EXPORT[0]
    assert crash["similarity"] > 0.4


async def test_an_exact_error_string_in_the_query_stays_first_whatever_the_alternatives_say(
    h: LibraryHarness,
) -> None:
    await h.write_sequence(EXPORT)
    error = await h.write_sequence(ERROR)
    out = await _search(
        h,
        "ERR_SSL_PROTOCOL_ERROR 0x1f3a",
        alternatives=["nightly export crash", "disk filled with temporary files", "I cleaned the temp directory."],
    )
    assert (out["results"][0]["sequenceId"], out["results"][0]["thoughtNumber"]) == (error, 1)


async def test_by_sequence_shows_each_sequences_conclusion_or_its_latest_thought_while_open(
    h: LibraryHarness,
) -> None:
    export = await h.write_sequence(EXPORT)
    brokers = await h.write_sequence(OPEN[:1])
    await h.ok(
        "sequentialthinking",
        {"thought": OPEN[1], "thoughtNumber": 2, "totalThoughts": 4, "nextThoughtNeeded": True, "sequenceId": brokers},
    )
    found = await h.call(
        "search_thoughts",
        {"query": "export job disk", "alternatives": ["message broker kafka"], "by": "sequence"},
    )
    out = found.structured_content
    assert isinstance(out, dict)
    by_id = {r["sequenceId"]: r for r in out["results"]}
    done = by_id[export]["conclusion"]
    assert done == {"thoughtNumber": 3, "branchId": None, "text": EXPORT[2], "final": True}
    still = by_id[brokers]["conclusion"]
    assert (still["thoughtNumber"], still["final"]) == (2, False)
    assert still["text"] == OPEN[1]
    assert f"concluded (thought 3): {EXPORT[2]}" in text(found)
    assert "latest, still open (thought 2)" in text(found)


async def test_the_text_says_in_one_line_how_strong_the_best_match_is(h: LibraryHarness) -> None:
    await h.write_sequence(EXPORT)
    await h.write_sequence(GARDEN)
    found = await h.call("search_thoughts", {"query": "the nightly export job crashes when the disk fills up"})
    lines = text(found).splitlines()
    assert lines[0].endswith('for "the nightly export job crashes when the disk fills up":')
    assert lines[1].startswith("Best match: strong (similarity 0.")
    weak = await h.call("search_thoughts", {"query": "staking plants", "limit": 1})
    assert text(weak).splitlines()[1].startswith("Best match: ")


async def test_without_vectors_the_alternatives_words_still_find_by_keyword(h: LibraryHarness, tmp_path: Path) -> None:
    await h.write_sequence(GARDEN)
    await h.write_sequence(EXPORT)
    conn = connect(store_path(tmp_path / "data", "owner"), "wal", readonly=True)
    try:
        # No embedder: the search answers by keyword; the question's words match nothing stored.
        alone = hybrid_search(conn, None, "what went wrong overnight?")
        found = hybrid_search(conn, None, "what went wrong overnight?", alternatives=["export crashes, disk fills up"])
    finally:
        conn.close()
    assert alone.abstained
    assert not found.abstained
    assert found.hits[0].record.body == EXPORT[1]
    assert found.hits[0].similarity is None
