"""When related earlier reasoning is worked out, and what a suggestion carries (SPEC §5.4).

A new sequence's suggestion rides on the response to its second thought: the opening is then its
first two thoughts (`related.OPENING_THOUGHTS`). The evidence lives in memory, one `TermIndex`
per open store, so the second write pays a dictionary walk, never a model and never a
keyword-index query (an FTS5 lookup per word cost 7-15 ms on a 2,300-thought store;
docs/related.md). The usual path has no read of its own either: before a call numbered 2 on a
sequence the index holds, `prepare` picks the suggestions from the index and the new thought's
text, and the write reads their cards (`read_cards`) in its own transaction; after the commit
`after_write` keeps them only if the call was the sequence's second thought. Any other case
(no sequenceId, an index behind the store) is worked out after the commit with one read.

Keeping the index current:
- every write folds its own thought once committed when the index is in step with the store
  (tokenizing one thought, no read): a process that saw every write never reads anything back.
- behind (a fresh process, a write from another one), with background on: after a sequence's
  first thought commits, a task folds the rest (the whole store the first time) on the event
  loop in slices, off the write's path; the second thought then finds the index whole.
- behind with background off (Lambda: nothing may run after the response): the sequence's first
  and second calls each fold at most `inline_slice` thoughts themselves. A store with more
  unfolded (a fresh container on a large store) gets no suggestion until the index is whole:
  nothing rather than a slow write.

Memory: all open stores' indexes together stay within one budget (`memory_budget_bytes`, from
THOUGHTLINE_RELATED_MEMORY_MB), counted by each index's estimate (`TermIndex.nbytes`). When an
index grows past it, the least recently used other stores' indexes are dropped (their stores stay
open); a dropped store's index is rebuilt on demand, as after a fresh start (behind, above). An
index larger than the whole budget is still kept, alone.
Index mutations happen only on the event loop thread; reads only fetch rows.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

import apsw

from thoughtline.library.related import LIMIT, MAX_SEQUENCES, OPENING_THOUGHTS, THRESHOLD, Folded, TermIndex, choose
from thoughtline.storage import related as related_store
from thoughtline.storage.idempotency import Replayed
from thoughtline.storage.related import Card
from thoughtline.storage.thoughts import Written

if TYPE_CHECKING:
    from thoughtline.storage.router import UserStore

logger = logging.getLogger(__name__)

# Thoughts the second write may fold itself (tokenizing one costs ~15 µs).
INLINE_SLICE = 16
# Thoughts a background fold reads and folds between two yields to the event loop.
BACKGROUND_SLICE = 256
# All open stores' word indexes together (a 5k-thought store's is ~16 MB by its estimate, and
# none passes ~36 MB: MAX_SEQUENCES bounds it). Settings.related_memory_mb sets it in the server.
MEMORY_BUDGET_BYTES = 64 * 2**20


@dataclass(frozen=True)
class Prepared:
    """Suggestions picked before a write that may be a sequence's second thought."""

    sequence_key: int
    chosen: list[tuple[int, float]]  # (sequence rowid, share), best first


@dataclass(frozen=True)
class Related:
    """One suggested earlier sequence, as the response shows it."""

    sequence_id: str
    title: str
    status: str
    updated_at: str
    snippet: str
    similarity: float


class RelatedOnOpen:
    """Suggestions of related earlier sequences for new ones, over one process's open stores."""

    def __init__(
        self,
        *,
        background: bool,
        threshold: float = THRESHOLD,
        limit: int = LIMIT,
        inline_slice: int = INLINE_SLICE,
        max_sequences: int = MAX_SEQUENCES,
        memory_budget_bytes: int = MEMORY_BUDGET_BYTES,
    ) -> None:
        self._background = background
        self._threshold = threshold
        self._limit = limit
        self._inline_slice = inline_slice
        self._max_sequences = max_sequences
        self._budget = memory_budget_bytes
        self._indexes: dict[str, TermIndex] = {}  # least recently used first
        # Each index's estimate when last measured, and their sum: a write re-measures only its own
        # store's index (summing 256 indexes on every write would cost ~0.2 ms).
        self._sizes: dict[str, int] = {}
        self._held = 0
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._dirty: set[str] = set()
        self._stopping = False

    def prepare(self, opened: UserStore, sequence_id: str | None, thought_number: int, text: str) -> Prepared | None:
        """Before a write: the suggestions if this call is a second thought of a sequence whose first is folded.

        Never raises (like everything here): a suggestion must never cost a write.
        """
        try:
            index = self._indexes.get(str(opened.path))
            if index is None or sequence_id is None or thought_number != OPENING_THOUGHTS:
                return None
            key = index.keys.get(sequence_id)
            return None if key is None else Prepared(key, self._choose(index, key, text))
        except Exception as exc:
            logger.warning("related earlier reasoning skipped: %s", type(exc).__name__)
            return None

    @staticmethod
    def read_cards(
        conn: apsw.Connection, prepared: Prepared | None, written: Written | Replayed
    ) -> dict[int, Card] | None:
        """Inside the write's transaction: the prepared suggestions' cards, if the write was that second thought.

        None when there is nothing to read or the read failed (the suggestion is dropped, never the write).
        """
        if prepared is None or not _is_second(written, prepared):
            return None
        if not prepared.chosen:
            return {}
        try:
            return related_store.cards(conn, [key for key, _ in prepared.chosen])
        except apsw.Error as exc:
            logger.warning("related earlier reasoning skipped: %s", type(exc).__name__)
            return None

    async def after_write(
        self,
        opened: UserStore,
        written: Written,
        text: str,
        prepared: Prepared | None = None,
        cards: dict[int, Card] | None = None,
    ) -> list[Related]:
        """What the response to a committed write carries: suggestions on a sequence's second thought.

        `text` is the thought just written; `prepared` and `cards` come from `prepare` and
        `read_cards` around the same write. Every write folds itself into the index when the
        index is in step with the store (microseconds, no read). Never raises: the thought is
        committed, and an error here would make the client retry a write that succeeded.
        """
        try:
            return await self._after_write(opened, written, text, prepared, cards)
        except Exception as exc:
            logger.warning("related earlier reasoning skipped: %s", type(exc).__name__)
            return []

    async def _after_write(
        self, opened: UserStore, written: Written, text: str, prepared: Prepared | None, cards: dict[int, Card] | None
    ) -> list[Related]:
        index = self._index(opened)
        sequence_key, thought_id = written.sequence_key, written.thought_id
        if written.created:
            # A sequence rowid can be reused after the newest sequence was deleted: start clean.
            index.forget(sequence_key)
        if index.folded_to == thought_id - 1:
            index.add(sequence_key, written.sequence_id, text)  # in step: this is the next thought
            index.folded_to = thought_id
            self._keep_budget(str(opened.path))
        second = written.count == OPENING_THOUGHTS
        if not (written.created or second):
            return []
        if prepared is not None and _is_second(written, prepared):
            return [] if cards is None else self._cards(index, prepared.chosen, cards)
        if index.folded_to < thought_id and not await self._catch_up_inline(opened, index, thought_id, second):
            return []
        if not second:
            return []
        chosen = self._choose(index, sequence_key, "")
        found = await opened.read(lambda conn: related_store.cards(conn, [k for k, _ in chosen])) if chosen else {}
        return self._cards(index, chosen, found)

    def _choose(self, index: TermIndex, key: int, more: str) -> list[tuple[int, float]]:
        return choose(index.shares(key, self._threshold, more), self._threshold, self._limit)

    @staticmethod
    def _cards(index: TermIndex, chosen: list[tuple[int, float]], cards: dict[int, Card]) -> list[Related]:
        out: list[Related] = []
        for key, share in chosen:
            card = cards.get(key)
            if card is None:  # deleted since it was folded
                index.forget(key)
                continue
            similarity = round(share, 3)
            out.append(Related(card.sequence_id, card.title, card.status, card.updated_at, card.snippet, similarity))
        return out

    async def _catch_up_inline(self, opened: UserStore, index: TermIndex, thought_id: int, second: bool) -> bool:
        """Fold what the index misses up to `thought_id`; False when it is still behind after one slice.

        The index is behind after a fresh start or a write from another process. With background
        work the first thought leaves it to a task after the response; the second (and any call
        with background off) folds one bounded slice itself.
        """
        if self._background and not second:
            self._schedule(opened)
            return False
        after, limit = index.folded_to, self._inline_slice
        rows = await opened.read(lambda conn: related_store.thoughts_after(conn, after, limit))
        index.fold(rows)
        self._keep_budget(str(opened.path))
        if index.folded_to >= thought_id:
            return True
        if self._background:
            self._schedule(opened)
        return False

    def _index(self, opened: UserStore) -> TermIndex:
        """The store's index, now the most recently used (an empty one if it has none)."""
        key = str(opened.path)
        index = self._indexes.pop(key, None) or TermIndex(self._max_sequences)
        self._indexes[key] = index
        return index

    def _keep_budget(self, keep: str) -> None:
        """Re-measure `keep`'s index, then drop the least recently used others until all fit the budget."""
        index = self._indexes.get(keep)
        if index is None:
            return  # dropped while its fold awaited a read; this call still uses what it folded
        size = index.nbytes
        self._held += size - self._sizes.get(keep, 0)
        self._sizes[keep] = size
        if self._held <= self._budget:
            return
        for other in [k for k in self._indexes if k != keep]:
            if self._held <= self._budget:
                break
            self._drop(other)

    def _drop(self, key: str) -> None:
        self._indexes.pop(key, None)
        self._held -= self._sizes.pop(key, 0)

    @property
    def index_bytes(self) -> int:
        """The estimated bytes of every store's word index together."""
        return sum(index.nbytes for index in self._indexes.values())

    @property
    def indexed_paths(self) -> list[str]:
        """The stores whose word index is in memory, least recently used first."""
        return list(self._indexes)

    def _schedule(self, opened: UserStore) -> None:
        if self._stopping:
            return
        key = str(opened.path)
        self._dirty.add(key)
        running = self._tasks.get(key)
        if running is None or running.done():
            self._tasks[key] = asyncio.create_task(self._catch_up(opened))

    async def _catch_up(self, opened: UserStore) -> None:
        """Fold everything not yet folded, a slice at a time (background only)."""
        key = str(opened.path)
        try:
            while key in self._dirty and not self._stopping:
                self._dirty.discard(key)
                index = self._index(opened)
                while not self._stopping:
                    rows = await opened.read(functools.partial(_unfolded, after=index.folded_to))
                    if self._indexes.get(key) is not index:
                        # Dropped meanwhile (the budget, or the store closed): the store's next
                        # opening starts again, so two large stores never take turns forever.
                        return
                    index.fold(rows)
                    self._index(opened)
                    self._keep_budget(key)
                    if len(rows) < BACKGROUND_SLICE:
                        break
                    await asyncio.sleep(0)  # a large store folds in slices, never blocking the loop long
        except Exception as exc:  # background work: log the kind; the next opening tries again
            logger.warning("related-reasoning fold failed: %s", type(exc).__name__)

    def forget(self, opened: UserStore) -> None:
        """Drop a closing store's index (register with `StoreRouter.on_close`)."""
        self._drop(str(opened.path))

    async def idle(self) -> None:
        """Wait until every background fold has finished (tests, shutdown)."""
        while pending := [t for t in self._tasks.values() if not t.done()]:
            await asyncio.gather(*pending, return_exceptions=True)

    async def close(self) -> None:
        """Stop background folds: a running slice finishes, nothing new starts."""
        self._stopping = True
        await self.idle()


def _unfolded(conn: apsw.Connection, *, after: int) -> list[Folded]:
    return related_store.thoughts_after(conn, after, BACKGROUND_SLICE)


def _is_second(written: Written | Replayed, prepared: Prepared) -> bool:
    """Whether the write was the prepared sequence's second stored thought."""
    return (
        isinstance(written, Written)
        and written.sequence_key == prepared.sequence_key
        and written.count == OPENING_THOUGHTS
    )
