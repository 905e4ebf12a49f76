"""The proposals' term statistics on a big store: vocabulary lookups cold, and through the store's cache.

Builds a store of N synthetic thoughts (40 words each from a 30,000-word Zipf vocabulary, ten
thoughts a sequence) through the real write path, then measures the CPU time of looking up the
document frequencies of 3,000 terms: straight from the `fts5vocab` table, through a fresh
`TermCache` (the first matching call after opening), again (a later call), and after ten new
thoughts (a completing write: the cache catches up from their bodies). Each cached answer is
checked against a fresh lookup.

    python -m bench.thread_terms [--thoughts 100000]
"""

from __future__ import annotations

import argparse
import itertools
import random
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import apsw

from thoughtline.domain.arguments import ThoughtInput
from thoughtline.library.term_cache import TermCache
from thoughtline.storage import migrations
from thoughtline.storage.db import connect
from thoughtline.storage.thoughts import Written, append_thought
from thoughtline.storage.threads import TermStatistics, term_statistics

VOCABULARY = [f"w{i:05d}" for i in range(30_000)]
WEIGHTS = [1.0 / (i + 1) for i in range(len(VOCABULARY))]
LOOKED_UP = 3_000


def write(conn: apsw.Connection, count: int, rnd: random.Random, ids: itertools.count[int]) -> None:
    """Store `count` thoughts, ten a sequence, in one transaction."""
    seq: str | None = None
    with conn:
        for i in range(count):
            number = i % 10 + 1
            body = " ".join(rnd.choices(VOCABULARY, WEIGHTS, k=40))
            made = next(ids)
            inp = ThoughtInput(body, number < 10, number, 10, sequence_id=None if number == 1 else seq)
            done = append_thought(conn, inp, made, f"seq_{made:032x}", continue_open=False)
            assert isinstance(done, Written)
            seq = done.sequence_id


def cpu_ms(fn: Callable[[], TermStatistics]) -> tuple[float, TermStatistics]:
    """CPU milliseconds of one call, and its answer."""
    start = time.process_time()
    got = fn()
    return (time.process_time() - start) * 1000, got


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--thoughts", type=int, default=100_000)
    args = parser.parse_args(argv)
    rnd, ids = random.Random(7), itertools.count(1)
    with tempfile.TemporaryDirectory(prefix="thread-terms-") as tmp:
        conn = connect(Path(tmp) / "s.sqlite3", "wal")
        migrations.migrate(conn)
        start = time.process_time()
        write(conn, args.thoughts, rnd, ids)
        print(f"built {args.thoughts} thoughts in {time.process_time() - start:.1f} s CPU")
        wanted = set(rnd.sample(VOCABULARY, LOOKED_UP))
        cache = TermCache()
        for label, fn in (
            ("fts5vocab lookups, no cache", lambda: term_statistics(conn, wanted)),
            ("cache, first call after opening", lambda: cache.statistics(conn, wanted)),
            ("cache, a later call", lambda: cache.statistics(conn, wanted)),
        ):
            ms, _ = cpu_ms(fn)
            print(f"{label}: {ms:.1f} ms CPU for {len(wanted)} terms")
        write(conn, 10, rnd, ids)
        ms, got = cpu_ms(lambda: cache.statistics(conn, wanted))
        print(f"cache, after 10 new thoughts: {ms:.1f} ms CPU (lookups so far {cache.lookups})")
        assert got == term_statistics(conn, wanted), "the cache drifted from the index"
        conn.close()


if __name__ == "__main__":
    main()
