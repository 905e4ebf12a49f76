"""Term statistics of each open store, kept across matching calls and brought up to date on writes.

Proposals weigh words by how many thoughts hold them (`storage.threads.term_statistics`, one
point lookup per term in the keyword index's vocabulary). On a big store those lookups cost what
the index's doclists cost (about 1 s for 3,000 terms at 100k thoughts), and every matching call
meets mostly the same terms again. This cache keeps each looked-up term's document frequency per
open store, exact at the snapshot it is read in:

- thoughts added since the cached mark (ids above its last id) are tokenized and counted into
  the terms already known, so a completing write costs its own few bodies, never a lookup;
- a delete or body edit bumps the search generation, and then the cache starts over (so does
  an older snapshot than the cache's, which simply reads without it, and a jump of more than
  `CATCH_UP` thoughts, an import, where looking up again is cheaper than reading every body).

It is keyed by the open store object: a store closed and opened again (or replaced) starts empty.
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import apsw

from thoughtline.storage import term_marks
from thoughtline.storage import threads as thread_store

if TYPE_CHECKING:
    from thoughtline.storage.router import UserStore

# Above this many thoughts added since the mark the cache starts over instead of reading their bodies.
CATCH_UP = 1_000
# A store's cache is cleared when it knows this many terms (a bound on memory per open store).
TERMS_MAX = 200_000


@dataclass
class _Known:
    mark: term_marks.Mark
    frequency: dict[str, int] = field(default_factory=dict)


class TermCache:
    """The document frequencies one open store's matching has looked up, valid at `mark`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._known: _Known | None = None
        self.lookups = 0  # terms looked up in the vocabulary so far (for tests and benchmarks)

    def statistics(self, conn: apsw.Connection, wanted: Iterable[str]) -> thread_store.TermStatistics:
        """The statistics of `wanted` in the connection's snapshot, exactly as a fresh lookup gives them."""
        wanted = set(wanted)
        now = term_marks.mark(conn)
        with self._lock:
            known = self._catch_up(conn, now)
            have = {t: known.frequency[t] for t in wanted if t in known.frequency} if known else {}
        unknown = wanted - have.keys()
        if unknown:
            fresh = thread_store.term_statistics(conn, unknown).frequency
            looked = {t: fresh.get(t, 0) for t in unknown}
            with self._lock:
                self.lookups += len(unknown)
                if self._known is not None and self._known.mark == now:
                    if len(self._known.frequency) + len(looked) > TERMS_MAX:
                        self._known.frequency.clear()
                    self._known.frequency.update(looked)
            have.update(looked)
        return thread_store.TermStatistics(now.documents, {t: n for t, n in have.items() if n})

    def _catch_up(self, conn: apsw.Connection, now: term_marks.Mark) -> _Known | None:
        """The cache moved to `now`, or None when this snapshot is older than the cache."""
        known = self._known
        if known is not None and known.mark == now:
            return known
        if known is not None and (now.generation, now.last_id) < (known.mark.generation, known.mark.last_id):
            # A reader on an older snapshot (the generation only grows; within one, so do the
            # ids): it looks its terms up itself and leaves the newer cache alone.
            return None
        if known is None or known.mark.generation != now.generation or now.last_id - known.mark.last_id > CATCH_UP:
            self._known = _Known(now)
            return self._known
        bodies = term_marks.bodies_after(conn, known.mark.last_id, now.last_id)
        if known.mark.documents + len(bodies) != now.documents:
            self._known = _Known(now)  # something else moved: start over rather than guess
            return self._known
        for body in bodies:
            for term in set(thread_store.terms(conn, body)):
                if term in known.frequency:
                    known.frequency[term] += 1
        known.mark = now
        return known


class TermCaches:
    """The term caches of every open store of one library (each dropped with its store object)."""

    def __init__(self) -> None:
        # By object id with a weak reference: a store is a mutable dataclass, so not hashable.
        self._caches: dict[int, tuple[weakref.ref[UserStore], TermCache]] = {}
        self._lock = threading.Lock()

    def for_store(self, opened: UserStore) -> TermCache:
        """The cache of one open store (made on first use)."""
        key = id(opened)
        with self._lock:
            found = self._caches.get(key)
            if found is not None and found[0]() is opened:
                return found[1]
            cache = TermCache()
            self._caches[key] = (weakref.ref(opened, functools.partial(self._drop, key)), cache)
            return cache

    def __len__(self) -> int:
        return len(self._caches)

    def _drop(self, key: int, ref: weakref.ref[UserStore]) -> None:
        """Forget a closed store's cache (unless its id was reused by a store opened since)."""
        with self._lock:
            found = self._caches.get(key)
            if found is not None and found[0] is ref:
                del self._caches[key]
