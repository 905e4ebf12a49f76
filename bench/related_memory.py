"""What one store's word index for related earlier reasoning holds in memory: `python -m bench.related_memory`.

    python -m bench.related_memory [--thoughts 5000,100000]

The thoughts are the reasoning set's (train, dev and test, in written order) repeated until there
are enough, as sequences of their own. A real store keeps meeting new names, so in every repeat
after the first the words that only one sequence of the set uses get a suffix of that repeat
(new words), while the rest of the vocabulary recurs. Each size is folded into a fresh
`TermIndex` exactly as the server folds a store (`fold`, thought id order) and measured with
tracemalloc: the bytes the index holds once folded (the thoughts' texts are not counted), its
peak while folding, its own estimate (`TermIndex.nbytes`) and the CPU time of the fold (what a
rebuild after eviction costs). It is a benchmark, not a test: nothing asserts on it.
"""

from __future__ import annotations

import argparse
import gc
import json
import re
import time
import tracemalloc
from collections import Counter
from collections.abc import Iterator
from typing import Any

from bench.replay import load_split, oldest_first, write_order
from thoughtline.library.related import Folded, TermIndex, terms

_WORD = re.compile(r"\w\w+", re.UNICODE)


def _sequences() -> list[list[str]]:
    """Every sequence of the reasoning set as its thoughts' texts, oldest first, split by split."""
    out: list[list[str]] = []
    for split in ("train", "dev", "test"):
        for seq in oldest_first(load_split(split)):
            out.append([str(t["thought"]) for t in write_order(seq["thoughts"])])
    return out


def rows(count: int) -> list[Folded]:
    """`count` thoughts as the store hands them to the index: (thought id, sequence rowid, public id, text)."""
    base = _sequences()
    held_by = Counter(word for texts in base for word in set().union(*(terms(t) for t in texts)))
    singles = {word for word, n in held_by.items() if n == 1}

    def renamed(text: str, repeat: int) -> str:
        if repeat == 0:
            return text
        return _WORD.sub(lambda m: f"{m[0]}x{repeat}" if m[0].lower() in singles else m[0], text)

    def thoughts() -> Iterator[tuple[int, int, str]]:
        repeat, key = 0, 0
        while True:
            for texts in base:
                key += 1
                for text in texts:
                    yield key, repeat, text
            repeat += 1

    out: list[Folded] = []
    for thought_id, (key, repeat, text) in enumerate(thoughts(), start=1):
        if thought_id > count:
            break
        out.append((thought_id, key, f"seq_{key:08d}", renamed(text, repeat)))
    return out


def measure(count: int) -> dict[str, Any]:
    """Fold `count` thoughts into a fresh index; what it holds, its estimate, its peak and the fold's CPU."""
    folded = rows(count)
    gc.collect()
    tracemalloc.start()
    before, _ = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    index = TermIndex()
    cpu = time.process_time()
    index.fold(folded)
    cpu = time.process_time() - cpu
    gc.collect()
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # The fold's CPU without tracemalloc's bookkeeping, on the same rows.
    bare = time.process_time()
    TermIndex().fold(folded)
    bare = time.process_time() - bare
    return {
        "thoughts": count,
        "sequences_in_store": folded[-1][1] if folded else 0,
        "sequences_indexed": len(index.terms_of),
        "words": len(index.postings),
        "entries": sum(len(words) for words in index.terms_of.values()),
        "held_mb": (held - before) / 1e6,
        "peak_mb": (peak - before) / 1e6,
        "estimate_mb": index.nbytes / 1e6 if hasattr(index, "nbytes") else None,
        "fold_cpu_s": bare,
        "fold_cpu_traced_s": cpu,
    }


def main() -> None:
    """Measure each requested size and print one line each (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--thoughts", default="5000,100000")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = [measure(int(n)) for n in args.thoughts.split(",") if n]
    if args.json:
        print(json.dumps(results, indent=1))
        return
    for r in results:
        estimate = "—" if r["estimate_mb"] is None else f"{r['estimate_mb']:.1f} MB"
        print(
            f"{r['thoughts']:>7} thoughts ({r['sequences_in_store']} sequences, {r['sequences_indexed']} indexed, "
            f"{r['words']} words, {r['entries']} entries): held {r['held_mb']:.1f} MB · peak {r['peak_mb']:.1f} MB · "
            f"estimate {estimate} · fold {r['fold_cpu_s'] * 1000:.0f} ms CPU"
        )


if __name__ == "__main__":
    main()
