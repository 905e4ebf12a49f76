"""Hybrid search and sequence lifecycle: pure fusion rules, then the tools over real store files."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import apsw
import pytest

from tests.golden.harness import LibraryHarness, library_harness
from tests.support import text
from thoughtline.domain import vector_keys
from thoughtline.library import search
from thoughtline.library.embed import MiniLMEmbedder
from thoughtline.storage.db import connect
from thoughtline.storage.router import store_path

# --- pure rules ------------------------------------------------------------------------------


def test_phrase_query_pairs_adjacent_content_words_once_skipping_stopwords_and_repeats() -> None:
    assert search.phrase_query("When did Melanie join the pottery class?") == '"melanie join" OR "pottery class"'
    assert search.phrase_query("Pottery class, pottery class: lake lake") == (
        '"pottery class" OR "class pottery" OR "class lake"'
    )
    assert search.phrase_query("the cat and the dog") is None
    assert search.phrase_query("checkout") is None


def test_add_scores_adds_a_weighted_bonus_and_starts_newcomers_at_the_weakest_base_score() -> None:
    out = search.add_scores({1: 4.0, 2: 1.0}, {2: 6.0, 3: 2.0}, weight=0.5)
    assert out == {1: 4.0, 2: 4.0, 3: 2.0}
    assert search.add_scores({}, {5: 2.0}, weight=0.5) == {5: 1.0}


def test_snippet_centres_on_the_query_terms_and_marks_cuts() -> None:
    body = "filler " * 60 + "the Debezium connector streams the binlog " + "tail " * 60
    snippet = search.make_snippet(body, ["debezium", "binlog"], width=80)
    assert "Debezium connector streams the binlog" in snippet
    assert snippet.startswith("…")
    assert snippet.endswith("…")
    assert search.make_snippet("short   text\nhere", ["x"]) == "short text here"


def test_multi_sentence_thoughts_are_embedded_whole_and_sentence_by_sentence() -> None:
    assert vector_keys.chunk_texts("One sentence only.") == ["One sentence only."]
    assert vector_keys.chunk_texts("Short. Two sentences.", min_chars=1000) == ["Short. Two sentences."]
    texts = vector_keys.chunk_texts("Cache plan: use Redis. Keys expire hourly.\nMisses go to Postgres.")
    assert texts == [
        "Cache plan: use Redis. Keys expire hourly. Misses go to Postgres.",
        "Cache plan: use Redis.",
        "Keys expire hourly.",
        "Misses go to Postgres.",
    ]
    many = vector_keys.chunk_texts(" ".join(f"Sentence number {i} is here." for i in range(200)), max_chunks=16)
    assert len(many) == 16
    assert "Sentence number 199" in many[-1]
    assert vector_keys.passage_of("Cache plan: use Redis. Keys expire hourly.", 2, 0) == "Keys expire hourly."
    assert vector_keys.passage_of("Cache plan: use Redis. Keys expire hourly.", 9, 0).startswith("Cache plan")


def test_term_coverage_folds_plurals_but_never_matches_on_a_short_fragment() -> None:
    assert search.term_coverage("The migrations ran overnight.", ["migration", "overnight"]) == 1.0
    assert search.term_coverage("a b c", ["alpha"]) == 0.0
    assert search.term_coverage("anything", []) == 0.0


# --- tools over real stores ------------------------------------------------------------------

pytestmark = pytest.mark.anyio


@pytest.fixture
async def h(tmp_path: Path, embedder: MiniLMEmbedder) -> AsyncIterator[LibraryHarness]:
    async with library_harness(tmp_path / "data", embedder) as harness:
        yield harness


def _db(h: LibraryHarness, tmp_path: Path, user: str = "owner") -> apsw.Connection:
    return connect(store_path(tmp_path / "data", user), "wal", readonly=True)


def _count(conn: apsw.Connection, sql: str) -> int:
    row: tuple[Any, ...] = conn.execute(sql).fetchall()[0]
    return int(row[0])


async def search_for(h: LibraryHarness, query: str, user: str = "owner", **extra: Any) -> dict[str, Any]:
    return await h.ok("search_thoughts", {"query": query, **extra}, user)


async def test_a_written_thought_is_found_by_meaning_with_its_ids_and_raw_similarity(h: LibraryHarness) -> None:
    seq = await h.write_sequence(
        ["Plan the quarter.", "The nightly export job crashes because the disk fills up with temp files."]
    )
    out = await search_for(h, "batch process dies when storage runs out of space")
    top = out["results"][0]
    assert (top["sequenceId"], top["thoughtNumber"], top["branchId"]) == (seq, 2, None)
    assert top["title"] == "Plan the quarter."
    assert top["status"] == "completed"
    assert top["createdAt"].endswith("Z")
    assert 0.25 < top["similarity"] <= 1.0
    assert out["abstained"] is False


async def test_writes_only_queue_vectors_and_a_search_embeds_what_is_missing(h: LibraryHarness, tmp_path: Path) -> None:
    await h.write_sequence(["Compare two caching strategies for the API gateway."])
    conn = _db(h, tmp_path)
    assert _count(conn, "SELECT count(*) FROM vector_queue") == 1
    assert _count(conn, "SELECT count(*) FROM thought_vectors") == 0
    await search_for(h, "cache")
    assert _count(conn, "SELECT count(*) FROM vector_queue") == 0
    assert _count(conn, "SELECT count(*) FROM thought_vectors") == 1
    conn.close()


async def test_after_the_first_search_new_thoughts_are_embedded_in_the_background(
    h: LibraryHarness, tmp_path: Path
) -> None:
    await h.write_sequence(["Warm up the model."])
    await search_for(h, "model")
    await h.write_sequence(["A second thought written after the model was loaded."])
    opened = await h.router.get("owner")
    await asyncio.wait_for(h.library.caught_up(opened), timeout=60)
    conn = _db(h, tmp_path)
    assert _count(conn, "SELECT count(*) FROM vector_queue") == 0
    assert _count(conn, "SELECT count(*) FROM thought_vectors") == 2
    conn.close()


async def test_meaning_past_the_models_window_is_found_and_deleted_with_its_thought(
    h: LibraryHarness, tmp_path: Path
) -> None:
    filler = " ".join(f"Step {i}: reviewed the quarterly invoice totals and found them consistent." for i in range(40))
    long = filler + " Finally, the root cause: the TLS certificate on the payment gateway expired overnight."
    seq = await h.write_sequence(["Checkout is failing for every card since midnight.", long])
    # Only the passage vector of the last sentences can match the meaning (the whole-thought vector
    # stops at 256 tokens and scores ~0.06 here); the snippet shows that passage, not the opening.
    out = await search_for(h, "the secure connection key for payments lapsed")
    found = [r for r in out["results"] if r["sequenceId"] == seq and r["thoughtNumber"] == 2]
    assert found, out
    assert found[0]["similarity"] > 0.3
    assert "TLS certificate on the payment gateway expired" in found[0]["snippet"]
    conn = _db(h, tmp_path)
    assert _count(conn, "SELECT count(*) FROM thought_vectors") > 1  # whole + passages
    await h.ok("delete_thought_sequence", {"sequenceId": seq, "confirm": True})
    assert _count(conn, "SELECT count(*) FROM thought_vectors") == 0
    conn.close()


async def test_nothing_relevant_stored_abstains_instead_of_returning_noise(h: LibraryHarness) -> None:
    await h.write_sequence(["Index the orders table by customer id to speed up the account page."])
    out = await search_for(h, "how to bake sourdough bread at home")
    assert out == {"results": [], "abstained": True, "by": "thought"}
    result = await h.call("search_thoughts", {"query": "how to bake sourdough bread at home"})
    assert "Nothing relevant is stored" in text(result)


async def test_an_exact_keyword_match_is_returned_even_when_meaning_is_weak(h: LibraryHarness) -> None:
    await h.write_sequence(["Ticket ZX-4471 is blocked on the vendor."])
    out = await search_for(h, "ZX-4471")
    assert out["abstained"] is False
    assert out["results"][0]["thoughtNumber"] == 1


async def test_a_sequence_filter_does_not_starve_the_vector_side(h: LibraryHarness) -> None:
    # Sixty near-duplicates elsewhere would fill a post-filtered top-50 on their own.
    for i in range(3):
        await h.write_sequence(
            [f"Database connection pool exhausted under load, attempt {i}, case {j}." for j in range(20)]
        )
    target = await h.write_sequence(
        ["Unrelated opening.", "Requests queue up because every pooled connection is busy."]
    )
    # The vector side is what this test is about. Writes never load the model; the first search
    # does, and embeds inline only within its time budget (which the model's loading can spend on
    # a busy machine), then hands the rest to the background: wait for that before asking.
    await search_for(h, "warm up the model")
    await asyncio.wait_for(h.library.caught_up(await h.router.get("owner")), timeout=60)
    out = await search_for(h, "database connection pool exhausted under load", sequenceId=target, limit=5)
    assert out["results"]
    assert {r["sequenceId"] for r in out["results"]} == {target}


async def test_status_and_time_filters_restrict_results(h: LibraryHarness) -> None:
    early = await h.write_sequence(["Choose a message queue: Kafka versus RabbitMQ for order events."])
    h.clock.t += 86_400 * 10
    late = await h.write_sequence(["Revisit the message queue choice: RabbitMQ is enough for our volume."])
    await h.ok("manage_sequence", {"action": "abandon", "sequenceId": late})
    query = "message queue choice"
    assert {r["sequenceId"] for r in (await search_for(h, query, status="abandoned"))["results"]} == {late}
    assert {r["sequenceId"] for r in (await search_for(h, query, status="completed"))["results"]} == {early}
    cut = "2026-04-06T00:00:00Z"
    assert {r["sequenceId"] for r in (await search_for(h, query, since=cut))["results"]} == {late}
    assert {r["sequenceId"] for r in (await search_for(h, query, until=cut))["results"]} == {early}


async def test_a_date_alone_as_until_includes_that_whole_day(h: LibraryHarness) -> None:
    # The harness clock stands at 2026-03-31T23:33:20Z: late on the day the filter names.
    seq = await h.write_sequence(["Kubernetes pod eviction caused by memory pressure on the node pool."])
    query = "kubernetes pod eviction memory"
    for dates in ({"until": "2026-03-31"}, {"since": "2026-03-31", "until": "2026-03-31"}):
        out = await search_for(h, query, **dates)
        assert [r["sequenceId"] for r in out["results"]] == [seq], dates
    assert (await search_for(h, query, until="2026-03-30"))["results"] == []


async def test_filters_that_leave_no_thought_say_so_rather_than_abstain(h: LibraryHarness) -> None:
    await h.write_sequence(["Kubernetes pod eviction caused by memory pressure on the node pool."])
    args = {"query": "kubernetes pod eviction memory", "status": "abandoned", "until": "2026-03-30"}
    result = await h.call("search_thoughts", args)
    assert result.structured_content == {"results": [], "abstained": False, "by": "thought"}
    assert text(result) == (
        "No stored thoughts match these filters: status abandoned, written at or before "
        "2026-03-30T23:59:59.999Z; widen or drop them."
    )


async def test_an_unknown_sequence_filter_is_reported_as_sequence_not_found(h: LibraryHarness) -> None:
    await h.write_sequence(["Kubernetes pod eviction caused by memory pressure on the node pool."])
    result = await h.call("search_thoughts", {"query": "pod eviction", "sequenceId": "seq_" + "a" * 32})
    assert result.is_error
    assert text(result).startswith("sequence_not_found: no sequence seq_aaaa")


async def test_bad_search_arguments_are_refused_with_the_field_named(h: LibraryHarness) -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({}, "'query' is required"),
        ({"query": "\u200b\u200b"}, "'query' is empty to a reader"),
        ({"query": " \u202e "}, "such as U+202E (RIGHT-TO-LEFT OVERRIDE)"),
        ({"query": "x", "limit": 51}, "'limit'"),
        ({"query": "x", "status": "done"}, "'status'"),
        ({"query": "x", "since": "last tuesday"}, "'since'"),
        ({"query": "x", "since": "2026-02-01", "until": "2026-01-01"}, "'since' is after 'until'"),
        ({"query": "x", "colour": "red"}, "unknown argument"),
    ]
    for args, expected in cases:
        result = await h.call("search_thoughts", args)
        assert result.is_error
        assert text(result).startswith("invalid_input: ")
        assert expected in text(result)
    missing = await h.call("search_thoughts", {"query": "x", "thread": "nope"})
    assert text(missing).startswith("thread_not_found: ")


async def test_a_search_only_reaches_the_callers_own_store(h: LibraryHarness) -> None:
    await h.write_sequence(["Alice's secret plan: migrate billing to Stripe in May."], user="github:1")
    out = await search_for(h, "migrate billing to Stripe", user="github:2")
    assert out["results"] == []
    mine = await search_for(h, "migrate billing to Stripe", user="github:1")
    assert len(mine["results"]) == 1


async def test_deleting_a_sequence_removes_its_keyword_rows_and_vectors(h: LibraryHarness, tmp_path: Path) -> None:
    keep = await h.write_sequence(["Keep this thought about load balancers."])
    gone = await h.write_sequence(["Remove this thought about quantum widgets.", "And its follow-up on widgets."])
    await search_for(h, "widgets")  # embeds all three
    deleted = await h.ok("delete_thought_sequence", {"sequenceId": gone, "confirm": True})
    assert deleted["deletedThoughts"] == 2
    conn = _db(h, tmp_path)
    assert _count(conn, "SELECT count(*) FROM thoughts_fts WHERE thoughts_fts MATCH 'widgets'") == 0
    assert _count(conn, "SELECT count(*) FROM thought_vectors") == 1
    assert _count(conn, "SELECT count(*) FROM vector_queue") == 0
    conn.close()
    out = await search_for(h, "quantum widgets")
    assert all(r["sequenceId"] == keep for r in out["results"])


async def test_abandoned_sequences_rank_below_an_equal_match(h: LibraryHarness) -> None:
    text = "Shard the events table by tenant to spread write load."
    first = await h.write_sequence([text])
    second = await h.write_sequence([text])
    await h.ok("manage_sequence", {"action": "abandon", "sequenceId": second})
    out = await search_for(h, "shard events by tenant")
    assert [r["sequenceId"] for r in out["results"][:2]] == [first, second]


async def test_resume_returns_the_last_thought_so_an_agent_can_continue(h: LibraryHarness) -> None:
    seq = await h.write_sequence(["Step one.", "Step two: check the replica lag."])
    paused = await h.ok("manage_sequence", {"action": "pause", "sequenceId": seq})
    assert paused["status"] == "paused"
    resumed = await h.call("manage_sequence", {"action": "resume", "sequenceId": seq})
    data = resumed.structured_content
    assert data is not None
    assert data["status"] == "active"
    assert data["lastThought"]["thought"] == "Step two: check the replica lag."
    assert data["lastThought"]["thoughtNumber"] == 2
    assert "thoughtNumber 3" in text(resumed)
    done = await h.ok("manage_sequence", {"action": "complete", "sequenceId": seq})
    assert done["status"] == "completed"


async def test_manage_sequence_errors_name_the_problem(h: LibraryHarness) -> None:
    unknown = await h.call("manage_sequence", {"action": "pause", "sequenceId": "seq_" + "0" * 32})
    assert text(unknown).startswith("sequence_not_found: ")
    bad = await h.call("manage_sequence", {"action": "archive", "sequenceId": "seq_" + "0" * 32})
    assert text(bad).startswith("invalid_input: 'action' must be one of")
    missing = await h.call("manage_sequence", {"action": "pause"})
    assert "'sequenceId' is required" in text(missing)


async def test_an_argument_of_another_action_is_refused_naming_the_actions_that_take_it(h: LibraryHarness) -> None:
    seq = await h.write_sequence(["Keep going."])
    await h.ok("manage_sequence", {"action": "resume", "sequenceId": seq})
    paused = await h.call("manage_sequence", {"action": "pause", "sequenceId": seq, "status": "completed"})
    assert text(paused) == (
        "invalid_input: 'status' does not apply to action 'pause' (it takes: sequenceId); "
        "'status' is for action 'list'. Drop it, or use that action."
    )
    listed = await h.call("manage_sequence", {"action": "list", "sequenceId": seq})
    assert text(listed).startswith("invalid_input: 'sequenceId' does not apply to action 'list'")
    assert "'pause' / 'resume' / 'complete' / 'abandon'" in text(listed)
    still = await h.ok("manage_sequence", {"action": "list"})
    assert [s["status"] for s in still["sequences"] if s["sequenceId"] == seq] == ["active"]
    # A null is not an argument sent (strict clients send one for every unset field).
    quiet = await h.ok("manage_sequence", {"action": "pause", "sequenceId": seq, "status": None, "thread": None})
    assert quiet["status"] == "paused"


async def test_list_shows_recent_sequences_by_status(h: LibraryHarness) -> None:
    a = await h.write_sequence(["First topic."])
    b = await h.write_sequence(["Second topic."])
    await h.ok("manage_sequence", {"action": "pause", "sequenceId": a})
    listed = await h.ok("manage_sequence", {"action": "list"})
    assert [s["sequenceId"] for s in listed["sequences"]] == [a, b]
    paused = await h.ok("manage_sequence", {"action": "list", "status": "paused"})
    assert [s["sequenceId"] for s in paused["sequences"]] == [a]


async def test_with_the_library_off_only_id_held_lifecycle_remains(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    async with library_harness(tmp_path / "strict", embedder, discovery=False) as strict:
        names = [t.name for t in strict.registry.tools]
        assert "search_thoughts" not in names
        assert "manage_sequence" in names
        listed = await strict.call("manage_sequence", {"action": "list"})
        assert listed.is_error
        seq = await strict.write_sequence(["Only the holder of the id can reach this."])
        assert (await strict.ok("manage_sequence", {"action": "pause", "sequenceId": seq}))["status"] == "paused"


# --- vectors, the in-memory index and reindex ------------------------------------------------


async def test_searched_stores_keep_their_vectors_in_memory_until_closed(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    async with library_harness(tmp_path / "big", embedder) as big:
        seq = await big.write_sequence(["Tune the garbage collector pauses.", "Heap is fragmented after a day."])
        out = await search_for(big, "memory fragmentation over time")
        assert out["results"][0]["sequenceId"] == seq
        assert out["results"][0]["thoughtNumber"] == 2
        assert big.library.indexed_stores == 1
        await big.router.close_all()
        assert big.library.indexed_stores == 0  # a closed store's vectors leave memory with it


# --- through the real MCP client -------------------------------------------------------------


async def test_library_tools_answer_through_the_mcp_client_with_valid_structured_output(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    from tests.support import TOKEN, mcp_client, serve_in_thread
    from thoughtline.config import Settings
    from thoughtline.web.app import create_app

    app = create_app(Settings(data_dir=tmp_path / "mcp", api_token=TOKEN), embedder_factory=lambda: embedder)
    with serve_in_thread(app) as running:
        async with mcp_client(running.base_url) as client:
            written = await client.call_tool(
                "sequentialthinking",
                {
                    "thought": "Retry the webhook with exponential backoff.",
                    "nextThoughtNeeded": False,
                    "thoughtNumber": 1,
                    "totalThoughts": 1,
                },
            )
            seq = written.structured_content["sequenceId"] if written.structured_content else None
            found = await client.call_tool("search_thoughts", {"query": "back off between webhook retries"})
            assert not found.is_error, text(found)
            assert found.structured_content is not None
            assert found.structured_content["results"][0]["sequenceId"] == seq
            resumed = await client.call_tool("manage_sequence", {"action": "resume", "sequenceId": seq})
            assert not resumed.is_error, text(resumed)
            assert "exponential backoff" in text(resumed)


async def test_the_app_lists_library_tools_unless_the_library_is_off(tmp_path: Path) -> None:
    from tests.support import TOKEN, mcp_client, serve_in_thread
    from thoughtline.config import Settings
    from thoughtline.web.app import create_app

    names: dict[bool, set[str]] = {}
    manage_actions: dict[bool, list[str]] = {}
    for library in (True, False):
        app = create_app(Settings(data_dir=tmp_path / str(library), api_token=TOKEN, library=library))
        with serve_in_thread(app) as running:
            async with mcp_client(running.base_url) as client:
                tools = {t.name: t for t in (await client.list_tools()).tools}
        names[library] = set(tools)
        manage_actions[library] = tools["manage_sequence"].input_schema["properties"]["action"]["enum"]
    assert names[True] - names[False] == {"search_thoughts", "configure_thread", "thread_briefing", "review_proposals"}
    assert "list" in manage_actions[True]
    assert "list" not in manage_actions[False]
