"""Every way into embedding meets the model check: `thoughtline reindex` and thread matching.

Same embedders as `test_embedder_identity.py` (`tests/embedder_support.py`).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client

from tests.embedder_support import Recorder, embed_all, expected_vectors, other_model, same_vectors, stored, write_notes
from tests.golden.harness import library_harness
from tests.sample_notes import DRIP, HOSE
from tests.thread_support import call, connected, create, served, think
from thoughtline.config import Settings
from thoughtline.identity import OWNER_KEY
from thoughtline.library.embed import MiniLMEmbedder
from thoughtline.storage import embedder_ids
from thoughtline.storage.db import connect
from thoughtline.storage.router import store_path

pytestmark = pytest.mark.anyio


def reindex_cli(data: Path) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("THOUGHTLINE_", "MCP_API_TOKEN"))}
    return subprocess.run(
        [sys.executable, "-m", "thoughtline", "reindex"],
        capture_output=True,
        text=True,
        env={**clean, "THOUGHTLINE_DATA_DIR": str(data)},
        timeout=120,
        check=False,
    )


async def test_reindex_says_which_model_it_embedded_with_and_whose_vectors_it_replaced(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    data = tmp_path / "data"
    async with library_harness(data, other_model(embedder), background=False) as h:
        await write_notes(h, 3)
        await embed_all(h)
    result = await asyncio.to_thread(reindex_cli, data)
    assert result.returncode == 0, result.stderr
    assert (
        f"keyword index rebuilt, 3 thoughts embedded with model {embedder.model_id}, "
        "replacing vectors of model reversed-minilm"
    ) in result.stdout
    conn = connect(store_path(data, OWNER_KEY), "wal", readonly=True)
    assert embedder_ids.recorded_embedder(conn) == embedder.model_id
    assert same_vectors(stored(conn), expected_vectors(conn, embedder))
    conn.close()


GARDEN = (
    "Garden irrigation",
    "The backyard drip irrigation line and the garden hose are leaking; the water bill jumped. "
    "Tracking the hunt for the leak and the repairs.",
)


async def write_sequence(client: Client, thoughts: list[str]) -> str:
    seq = await think(client, thoughts[0], 1, totalThoughts=len(thoughts))
    for number, thought in enumerate(thoughts[1:], start=2):
        await think(client, thought, number, done=number == len(thoughts), sequenceId=seq, totalThoughts=len(thoughts))
    return seq


async def test_thread_matching_re_embeds_a_store_of_another_model_before_it_compares(
    settings: Settings, embedder: MiniLMEmbedder
) -> None:
    before = other_model(embedder)
    with served(settings, embedder_factory=lambda: before) as app:
        async with connected(app) as client:
            await create(client, *GARDEN)
            app.clock.advance(0.01)
            await write_sequence(client, HOSE)
            await call(client, "review_proposals", action="list")  # matched with the other model
    after = Recorder(embedder)
    with served(settings, embedder_factory=lambda: after) as app:
        async with connected(app) as client:
            app.clock.advance(0.01)
            drip = await write_sequence(client, DRIP)
            # No search first: listing runs the matching itself, which meets the other model's vectors.
            listed = (await call(client, "review_proposals", action="list"))["proposals"]
    assert ("Garden irrigation", drip) in [(p["thread"], p["sequenceId"]) for p in listed]
    assert set(DRIP) <= set(after.texts)
    conn = connect(store_path(settings.data_dir, OWNER_KEY), "wal", readonly=True)
    assert embedder_ids.recorded_embedder(conn) == embedder.model_id
    assert same_vectors(stored(conn), expected_vectors(conn, embedder))
    conn.close()
