"""The MiniLM embedder: real model, meaningful vectors, and never loaded at import or start."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.embedder_support import Recorder, embed_all, write_notes
from tests.golden.harness import library_harness
from thoughtline.library.embed import MAX_TOKENS, MINILM_DIM, MiniLMEmbedder, serving_embedder


def test_vectors_are_unit_length_float32_of_the_declared_dimension(embedder: MiniLMEmbedder) -> None:
    vectors = embedder.embed(["first text", "a second, rather longer piece of text about databases"])
    assert vectors.shape == (2, MINILM_DIM) == (2, embedder.dim)
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_paraphrases_are_closer_than_unrelated_text(embedder: MiniLMEmbedder) -> None:
    a, b, c = embedder.embed(
        [
            "The deploy failed because the database migration timed out.",
            "Our release broke: the schema change took too long and was cancelled.",
            "I planted tomatoes and basil in the garden this spring.",
        ]
    )
    assert float(a @ b) > float(a @ c) + 0.3


def test_results_keep_input_order_whatever_the_batching(embedder: MiniLMEmbedder) -> None:
    texts = [f"note {i} " + "word " * (i * 7 % 40) for i in range(40)]
    together = embedder.embed(texts)
    alone = np.stack([embedder.embed([t])[0] for t in texts[:5]])
    assert np.allclose(together[:5], alone, atol=1e-4)


def test_long_texts_are_truncated_not_rejected(embedder: MiniLMEmbedder) -> None:
    long = "reasoning " * (MAX_TOKENS * 4)
    assert embedder.embed([long]).shape == (1, MINILM_DIM)


def test_empty_input_needs_no_model() -> None:
    fresh = MiniLMEmbedder()
    assert fresh.embed([]).shape == (0, MINILM_DIM)
    assert fresh._session is None


def test_importing_the_app_and_library_does_not_load_onnxruntime_or_tokenizers() -> None:
    code = (
        "import sys, thoughtline.web.app, thoughtline.mcp.library_tools\n"
        "import thoughtline.library.vectors, thoughtline.library.retrieval\n"
        "loaded = sorted(m for m in ('onnxruntime', 'tokenizers') if m in sys.modules)\n"
        "print(','.join(loaded))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == ""


def test_the_search_tools_do_not_pull_numpy_into_a_cold_start() -> None:
    # The library tools are registered at start; numpy and the model load on the first search.
    code = (
        "import sys, thoughtline.web.app, thoughtline.mcp.library_tools, thoughtline.library.retrieval\n"
        "heavy = ('numpy', 'thoughtline.library.embed', 'thoughtline.library.vectors')\n"
        "print(','.join(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == ""


def test_cls_pooling_is_another_model_with_unit_vectors(embedder: MiniLMEmbedder) -> None:
    # Other packaged models (BGE) pool the [CLS] token: their vectors and their id differ.
    cls = MiniLMEmbedder(pooling="cls")
    text = ["the nightly export job failed after the schema change"]
    mean_vec, cls_vec = embedder.embed(text)[0], cls.embed(text)[0]
    assert np.isclose(float(np.linalg.norm(cls_vec)), 1.0, atol=1e-5)
    assert float(mean_vec @ cls_vec) < 0.99
    assert cls.model_id != embedder.model_id


def test_an_unknown_pooling_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="pooling must be one of"):
        MiniLMEmbedder(pooling="max")


@pytest.mark.anyio
async def test_the_query_prefix_is_put_before_search_queries_only(tmp_path: Path) -> None:
    # BGE was trained with an instruction before queries and none before passages.
    prefix = "Represent this sentence for searching relevant passages: "
    recorder = Recorder(MiniLMEmbedder(query_prefix=prefix))
    async with library_harness(tmp_path / "data", recorder) as h:
        await write_notes(h, 2)
        await embed_all(h)
        stored_texts = list(recorder.texts)
        await h.ok("search_thoughts", {"query": "which worker reported codeword1"})
    assert stored_texts
    assert all(not t.startswith(prefix) for t in stored_texts)
    assert recorder.texts[len(stored_texts) :] == [prefix + "which worker reported codeword1"]


def test_the_server_embeds_as_reindex_does_on_one_onnx_thread(embedder: MiniLMEmbedder) -> None:
    # The server's query vectors are compared with vectors `thoughtline reindex` stored using
    # every core: the session options may change the speed, never the vectors.
    texts = [
        "Why did the nightly export job fail?",
        "The export died because the disk filled up; we moved the scratch files to the big volume.",
        "rotate refresh tokens safely",
    ]
    serving = serving_embedder()
    assert serving.embed(texts[:1]).shape == (1, MINILM_DIM)
    session, _ = serving._load()
    assert session.get_session_options().intra_op_num_threads == 1
    cosines = (serving.embed(texts) * embedder.embed(texts)).sum(axis=1)
    assert float(cosines.min()) > 0.99999
