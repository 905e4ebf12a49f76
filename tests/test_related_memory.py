"""Related earlier reasoning within one memory budget: every open store's word index together (SPEC §5.4).

Through the real tool registry over real stores (`golden/harness.py`): beyond the budget the least
recently used other stores' word indexes are dropped, their stores stay open, and a dropped index
is rebuilt when its store next opens a sequence, naming the same earlier sequence as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.golden.harness import LibraryHarness, library_harness
from tests.related_notes import BREAD, LEAK, OPENING
from thoughtline.config import Settings, SettingsError
from thoughtline.library.embed import MiniLMEmbedder
from thoughtline.library.related import TermIndex
from thoughtline.library.related_open import RelatedOnOpen
from thoughtline.storage.router import store_path

pytestmark = pytest.mark.anyio


def filled_store_bytes() -> int:
    """The estimate of one store's word index after `fill` (the same words give the same estimate)."""
    index = TermIndex()
    thoughts = [(1, text) for text in LEAK] + [(2, text) for text in BREAD]
    index.fold((n, key, f"seq_{key}", text) for n, (key, text) in enumerate(thoughts, start=1))
    return index.nbytes


async def fill(h: LibraryHarness, user: str) -> str:
    """The leak and the bread sequences in `user`'s store; returns the leak's id."""
    leak = await h.write_sequence(LEAK, user)
    await h.write_sequence(BREAD, user)
    return leak


async def open_on_the_leak(h: LibraryHarness, user: str) -> list[str]:
    """A new sequence opening on the leak; the sequences its second thought names."""
    args: dict[str, Any] = {"thoughtNumber": 1, "totalThoughts": 4, "nextThoughtNeeded": True}
    first = await h.ok("sequentialthinking", {**args, "thought": OPENING[0]}, user)
    second = await h.ok(
        "sequentialthinking",
        {**args, "thought": OPENING[1], "thoughtNumber": 2, "sequenceId": first["sequenceId"]},
        user,
    )
    return [str(r["sequenceId"]) for r in second.get("related", [])]


@pytest.mark.parametrize("background", [True, False], ids=["background-on", "background-off"])
async def test_beyond_the_budget_the_least_recently_used_index_goes_and_is_rebuilt_on_its_next_opening(
    tmp_path: Path, embedder: MiniLMEmbedder, background: bool
) -> None:
    # Room for two filled stores' word indexes, not three.
    budget = int(2.5 * filled_store_bytes())
    related = RelatedOnOpen(background=background, memory_budget_bytes=budget)
    async with library_harness(tmp_path / "data", embedder, suggest=True, background=background, related=related) as h:
        path = {u: str(store_path(tmp_path / "data", u)) for u in ("a", "b", "c")}
        leak = {u: await fill(h, u) for u in ("a", "b")}
        assert related.indexed_paths == [path["a"], path["b"]]
        leak["c"] = await fill(h, "c")
        assert related.indexed_paths == [path["b"], path["c"]]  # a's went; its store stayed open
        assert h.router.open_count == 3
        assert 0 < related.index_bytes <= budget
        assert await open_on_the_leak(h, "a") == [leak["a"]]  # rebuilt from the store, it names the same
        # b was used before c, so b's index is the one that made room for a's.
        assert related.indexed_paths == [path["c"], path["a"]]
        assert related.index_bytes <= budget
        assert await open_on_the_leak(h, "b") == [leak["b"]]


async def test_a_word_index_larger_than_the_whole_budget_is_still_kept_alone(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    related = RelatedOnOpen(background=True, memory_budget_bytes=1)
    async with library_harness(tmp_path / "data", embedder, suggest=True, related=related) as h:
        leak = {u: await fill(h, u) for u in ("a", "b")}
        assert related.indexed_paths == [str(store_path(tmp_path / "data", "b"))]
        assert await open_on_the_leak(h, "a") == [leak["a"]]
        assert await open_on_the_leak(h, "b") == [leak["b"]]
        assert len(related.indexed_paths) == 1


def test_the_related_budget_is_read_from_the_environment_and_refuses_zero() -> None:
    assert Settings.from_env({}).related_memory_mb == 64
    assert Settings.from_env({"THOUGHTLINE_RELATED_MEMORY_MB": "16"}).related_memory_mb == 16
    with pytest.raises(SettingsError, match="THOUGHTLINE_RELATED_MEMORY_MB=0 is below 1"):
        Settings.from_env({"THOUGHTLINE_RELATED_MEMORY_MB": "0"})
