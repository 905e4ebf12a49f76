"""Work that follows a commit, and its one switch: embedding new thoughts, now or at query time.

Writes only queue a thought for a vector (SPEC §5). With `background` on, each commit schedules
the store's after-commit work on the event loop (`_drain`: the one place such work runs, so the
switch governs all of it). With it off (Lambda: a frozen container must never hold a store's
lock, so nothing may write after the response) nothing is scheduled, and a search embeds what it
needs itself, bounded by a count and a time budget. A per-store claim keeps the two paths from
taking the same batch, and a failed vector write never fails a search (issue 11).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import apsw

from thoughtline.library import model_identity
from thoughtline.library.related_open import RelatedOnOpen
from thoughtline.library.term_cache import TermCaches
from thoughtline.storage import vectors as vector_store
from thoughtline.storage.db import StorageError

if TYPE_CHECKING:
    from thoughtline.library.dense import DenseIndex
    from thoughtline.library.embed import Embedder
    from thoughtline.storage.router import UserStore

logger = logging.getLogger(__name__)

# A search embeds missing thoughts itself only in small batches and within a budget: at most this
# many thoughts per search, and no new batch once the budget is spent (a MiniLM batch of 32 takes
# ~0.36 s on two cores). The rest stays findable by keyword and is embedded later (issue 11: a
# 512-thought inline batch made every search under write load take 7-13 s).
INLINE_MAX = 128
INLINE_BUDGET_SECONDS = 1.0
BATCH = 32
# After a vector write fails (disk full, read-only, corrupt page) searches of that store stop
# trying for a while: each attempt would cost an embedding batch and fail the same way.
RETRY_AFTER_FAILURE_SECONDS = 30.0
# All open stores' indexes together stay under this many bytes; beyond it the least recently
# searched index is dropped (its store stays open) and loads again on that store's next search.
# A 100k-thought store's index is ~96 MB (issue 19).
INDEX_BUDGET_BYTES = 256 * 2**20


def _default_embedder() -> Embedder:
    from thoughtline.library.embed import serving_embedder

    return serving_embedder()


class AfterCommitWork:
    """Process-wide search state shared by every store of one app.

    The embedder is created on the first search, never at start or on a write. With `background`
    on, commits then schedule after-commit work (embedding the new thoughts) on the event loop;
    with it off (Lambda, where nothing may write after the response) nothing is scheduled and a
    search embeds what it needs, bounded. Either way one store is embedded by one path at a time
    (a per-store claim), so no thought is embedded twice.
    """

    def __init__(
        self,
        embedder_factory: Callable[[], Embedder] = _default_embedder,
        *,
        index_budget_bytes: int = INDEX_BUDGET_BYTES,
        background: bool = True,
        inline_max: int = INLINE_MAX,
        inline_budget_seconds: float = INLINE_BUDGET_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
        related: RelatedOnOpen | None = None,
    ) -> None:
        # Related earlier reasoning on a sequence's opening (SPEC §5.4) keeps its index current
        # after commits too, under the same `background` switch.
        self.related = related or RelatedOnOpen(background=background)
        self._factory = embedder_factory
        self._index_budget = index_budget_bytes
        self._background = background
        self._inline_max = inline_max
        self._inline_budget = inline_budget_seconds
        self._monotonic = monotonic
        self._embedder: Embedder | None = None
        self._model_id: str | None = None
        self._model_loaded = False  # whether an embedding batch has run (the first one loads the model)
        self._indexes: dict[str, DenseIndex] = {}  # least recently searched first
        # One thread for the process's big products: a 100k-thought store's product is split
        # with it (onnxruntime leaves the GIL); its thread starts on the first such product.
        # Each open store's term statistics for thread matching, shared by every surface's review.
        self.term_caches = TermCaches()
        self._product_helper = ThreadPoolExecutor(max_workers=1, thread_name_prefix="index-product")
        # Reentrant: an index reports its new size from a reader thread while `index_for` may run.
        self._index_lock = threading.RLock()
        self._running: dict[str, asyncio.Task[None]] = {}
        self._dirty: set[str] = set()
        self._claims: dict[str, asyncio.Lock] = {}
        self._failed_at: dict[str, float] = {}
        self._progress = asyncio.Event()
        self._stopping = False

    def embedder(self) -> Embedder:
        """The embedder, created on first use."""
        if self._embedder is None:
            self._embedder = self._factory()
        return self._embedder

    async def model_id(self) -> str:
        """The embedder's model id, hashed once in a worker thread (never on the event loop)."""
        if self._model_id is None:
            embedder = self.embedder()
            self._model_id = await asyncio.to_thread(lambda: embedder.model_id)
        return self._model_id

    @property
    def background(self) -> bool:
        """Whether commits schedule after-commit work (off on Lambda)."""
        return self._background

    def attach(self, opened: UserStore) -> None:
        """Hook a freshly opened store (register with `StoreRouter.on_open`, on the event loop)."""
        if not self._background:
            return  # nothing may run after a response: no commit hook at all
        loop = asyncio.get_running_loop()

        def committed(s: UserStore) -> None:
            # Runs on the writer thread right after COMMIT: hop to the loop, never block, never
            # raise (an exception here would escape into the writer). A closed loop means the
            # app is shutting down; the queue keeps the work for the next search or reindex.
            if self._embedder is not None and not self._stopping:
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(self._kick, s)

        opened.after_commit.append(committed)

    @property
    def indexed_stores(self) -> int:
        """How many stores currently have their vectors held in memory."""
        with self._index_lock:
            return len(self._indexes)

    @property
    def scheduled(self) -> int:
        """How many stores have after-commit work running or queued right now."""
        return sum(1 for task in self._running.values() if not task.done())

    def detach(self, opened: UserStore) -> None:
        """Forget a closing store's in-memory vectors and words (register with `StoreRouter.on_close`)."""
        with self._index_lock:
            self._indexes.pop(str(opened.path), None)
        self.related.forget(opened)

    def _kick(self, opened: UserStore) -> None:
        if self._stopping:
            return
        key = str(opened.path)
        self._dirty.add(key)
        running = self._running.get(key)
        # A finished task may still be listed (its done-callback runs later); start a fresh one.
        if running is None or running.done():
            self._running[key] = asyncio.create_task(self._drain(opened))

    async def _drain(self, opened: UserStore) -> None:
        """The after-commit work of one store, and the only place it runs (so `background` governs it all).

        Stops between batches when the library is closing: shutdown waits for one batch, not the
        backlog; what is left stays queued for the next process.
        """
        key = str(opened.path)
        try:
            while key in self._dirty and not self._stopping:
                self._dirty.discard(key)
                while not self._stopping and await self.backfill(opened, limit=BATCH):
                    self._progress.set()
                if not self._stopping:
                    from thoughtline.library.matching import match_pending  # numpy: never at start

                    await match_pending(opened, self.embedder, terms=self.term_caches.for_store(opened))  # SPEC §5.3
        except Exception as exc:  # background work: log the kind, retry on the next commit
            logger.warning("background embedding failed: %s", type(exc).__name__)
        finally:
            self._progress.set()  # wake `caught_up` waiters even when the work stopped early

    async def idle(self) -> None:
        """Wait until background embedding has caught up (tests)."""
        while pending := [t for t in self._running.values() if not t.done()]:
            await asyncio.gather(*pending, return_exceptions=True)
        await self.related.idle()

    async def close(self) -> None:
        """Stop after-commit work: running batches finish, the backlog stays queued (graceful shutdown)."""
        self._stopping = True
        await self.related.close()
        await self.idle()
        self._product_helper.shutdown(wait=False, cancel_futures=True)

    async def caught_up(self, opened: UserStore) -> None:
        """Wait until every committed thought of `opened` has a vector (wrap it in a timeout).

        The commit hook reaches the event loop from the writer thread, possibly after the write's
        caller has already resumed, so waiting for running tasks alone could miss it.
        """
        while await opened.read(vector_store.pending_count):
            self._progress.clear()
            if not await opened.read(vector_store.pending_count):
                return
            await self._progress.wait()

    def _claim(self, opened: UserStore) -> asyncio.Lock:
        return self._claims.setdefault(str(opened.path), asyncio.Lock())

    async def backfill(self, opened: UserStore, limit: int = BATCH) -> int:
        """Embed up to `limit` thoughts that have no vector yet; returns how many were stored.

        A store whose vectors another model made has them deleted and every thought queued
        first, in one transaction (`model_identity.ensure`). Holds the store's claim from reading
        the queue to storing the vectors, so a concurrent caller (search or background) reads the
        queue only after this batch left it.
        """
        async with self._claim(opened):
            return await self._backfill_claimed(opened, limit)

    async def _backfill_claimed(self, opened: UserStore, limit: int) -> int:
        """`backfill`'s work; the caller holds the store's claim."""
        from thoughtline.library import vectors

        current = await self.model_id()
        # A store embedded by another model is queued again whole before anything is added.
        await model_identity.ensure(opened, current)
        pending = await opened.read(lambda conn: vectors.collect_pending(conn, limit))
        if not pending:
            return 0
        rows = await asyncio.to_thread(vectors.embed_pending, self.embedder(), pending)
        self._model_loaded = True
        return await opened.write(lambda conn: vector_store.store_vectors(conn, rows, made_by=current))

    async def embed_for_search(self, opened: UserStore) -> int:
        """Vectors a search needs now, bounded; returns how many thoughts were embedded.

        A search cannot be sure nothing stored is related while thoughts lack vectors (SPEC
        §5.1), so it embeds the queue itself, up to `inline_max` thoughts within the time budget,
        through the writer as the background work does. Loading the model (the process's first
        batch) is not charged to the budget: on a fresh process it alone used to spend it, and
        the first search after a write burst then ranked without most of the burst. Background
        work holding the store's claim is waited for within the budget (it yields the claim
        between batches), not given up on at once. Skipped for a while after a vector write
        failed; a failed write never fails the search: the thoughts without vectors are still
        found by keyword, and the search does not abstain while any remain (`searching.py`).
        """
        key = str(opened.path)
        failed = self._failed_at.get(key)
        if failed is not None and self._monotonic() - failed < RETRY_AFTER_FAILURE_SECONDS:
            return 0
        claim = self._claim(opened)
        deadline = self._monotonic() + self._inline_budget
        done, last_batch = 0, 0.0
        try:
            # No new batch unless one as long as the last still fits in the budget.
            while done < self._inline_max and self._monotonic() + last_batch < deadline:
                try:
                    await asyncio.wait_for(claim.acquire(), timeout=max(0.0, deadline - self._monotonic()))
                except TimeoutError:  # background work kept the claim all along; it embeds the rest
                    break
                cold = not self._model_loaded
                started = self._monotonic()
                try:
                    stored = await self._backfill_claimed(opened, min(BATCH, self._inline_max - done))
                finally:
                    claim.release()
                if not stored:
                    break
                done += stored
                last_batch = self._monotonic() - started
                if cold:  # that batch loaded the model: the budget starts now, and so does the estimate
                    deadline, last_batch = self._monotonic() + self._inline_budget, 0.0
        except (StorageError, apsw.Error) as exc:  # a cache write failed; the search still answers
            self._failed_at[key] = self._monotonic()
            logger.warning("search answered without new vectors: the vector write failed (%s)", type(exc).__name__)
            return done
        self._failed_at.pop(key, None)
        if done and self._background and self._embedder is not None:
            self._kick(opened)  # the rest (if any) in the background
        return done

    def index_for(self, opened: UserStore, vector_count: int = 0) -> DenseIndex:
        """The store's in-memory vector index, kept once searched, within the memory budget.

        Ranking reads every thought's whole, passage and sequence cosines, which one pass over
        the store's int8 codes gives (issue 8), so every searched store has one. Room is made
        twice, by dropping the least recently searched others: here, for what the index holds
        or will hold (`vector_count`, when the caller knows it), and again by the index itself
        once a refresh has loaded it (in the search's reader thread, hence the lock). An index
        larger than the whole budget is still served, alone. A search running on a dropped
        index finishes with it; nothing else refers to it afterwards.
        """
        from thoughtline.library.dense import DenseIndex

        key = str(opened.path)
        with self._index_lock:
            index = self._indexes.pop(key, None) or DenseIndex(
                on_loaded=lambda: self._keep_budget(key), helper=self._product_helper
            )
            self._indexes[key] = index  # now the most recently searched
            self._keep_budget(key, DenseIndex.estimated_bytes(vector_count))
        return index

    def _keep_budget(self, keep: str, expected: int = 0) -> None:
        """Drop the least recently searched indexes but `keep`'s until all fit (`expected`: `keep`'s size to come)."""
        with self._index_lock:
            held = sum(index.nbytes for other, index in self._indexes.items() if other != keep)
            need = max(expected, self._indexes[keep].nbytes) if keep in self._indexes else 0
            for other in [k for k in self._indexes if k != keep]:
                if held + need <= self._index_budget:
                    break
                held -= self._indexes.pop(other).nbytes

    @property
    def indexed_paths(self) -> list[str]:
        """The stores whose index is in memory, least recently searched first."""
        with self._index_lock:
            return list(self._indexes)

    @property
    def index_bytes(self) -> int:
        """Bytes held by every in-memory index together."""
        with self._index_lock:
            return sum(index.nbytes for index in self._indexes.values())
