"""The calibration grid for thread proposals: both flows replayed in memory, on train and dev only.

The replay itself is `bench.thread_replay`: the service's own rules (`library.proposals`:
`sequence_vector`, `thread_vector`, `term_vector`, `thread_terms`, `embedding_part`,
`similarity`) on one model's vectors of the labelled texts and on their index terms
(`storage.threads.terms`, the keyword index's tokenizer),
so a grid costs one embedding pass. Document frequencies are counted as the store would hold them
at each matching: over every thought written so far (flow A grows them sequence by sequence). A
blend fixes the three cosines of every pair a flow meets (the mean vector's, the closest
thought's, the words'), so each is computed once per blend and the threshold / words /
best-thought grid only re-decides. The chosen point is the one whose worst recall (every split
and flow, and the threshold moved ±0.02) is best while precision stays ≥ 0.9 and no trap is
proposed at all three thresholds. This module reads `bench.eval_threads` (the labels and the
scoring); nothing there imports it.

    python -m bench.thread_sweep [--splits train,dev] [--model PATH]
        [--threshold T --words W --blend-k K --best-thought B]
    python -m bench.thread_sweep --curve --splits dev,test   # report the curve at the shipped point
    python -m bench.thread_sweep --curve --splits dev,train --words 0.6 --threshold 0.31 --background 0.25
        # measured, not shipped: each similarity less a share of the sequence's mean over its other threads
    python -m bench.thread_sweep --curve --splits dev,train --threshold 0.36 --first-thought 0.2 --halves 0.5
        # measured, not shipped: shares of the embedding part taken from the first thought's cosine and
        # the closer half's (`--last-thought`, `--name-share`: see `Parts`)
"""

from __future__ import annotations

import argparse
import itertools
from collections.abc import Mapping, Sequence
from pathlib import Path

from bench.embed_cache import cached_embedder, model_tag
from bench.eval_threads import LabelledSet, Score, load
from bench.thread_replay import NO_BACKGROUND, NO_PARTS, Background, Corpus, Parts, Replay, corpus, replays
from thoughtline.library.embed import Embedder
from thoughtline.library.proposals import (
    TUNING,
    Tuning,
)

THRESHOLDS = [round(0.15 + 0.01 * i, 2) for i in range(61)]
WORDS = [0.0, 0.2, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
BLENDS = [0.5, 1.0, 2.0, 4.0]
BEST = [0.0, 0.25, 0.5, 0.75, 1.0]
MIN_PRECISION = 0.9
# The chosen point must hold with the threshold moved this far either way.
STEADY = 0.02


def _fmt(a: Score, b: Score) -> str:
    def side(name: str, s: Score) -> str:
        return f"{name} P {s.precision:.3f} R {s.recall:.3f} traps {s.traps}"

    return f"{side('A', a)} · {side('B', b)}"


def _worst(replays: Sequence[Replay], tuning: Tuning) -> float | None:
    """The worst recall over every split and flow, or None when a precision falls below 0.9 or a trap is proposed."""
    worst = 1.0
    for r in replays:
        for s in r.scores(tuning):
            if s.precision < MIN_PRECISION or s.traps:
                return None
            worst = min(worst, s.recall)
    return worst


def best_point(replays: Sequence[Replay], k: float, words: float, best: float = 0.0) -> tuple[Tuning, float] | None:
    """The threshold whose worst recall, over every split and flow at it and at ±0.02, is best.

    Every split and flow must keep precision ≥ 0.9 and propose no trap at all three thresholds.
    Ties keep the lowest threshold.
    """
    found: tuple[Tuning, float] | None = None
    for threshold in THRESHOLDS:
        around = [Tuning(round(threshold + d, 2), words, k, best) for d in (-STEADY, 0.0, STEADY)]
        each = [_worst(replays, t) for t in around]
        if any(w is None for w in each):
            continue
        worst = min(w for w in each if w is not None)
        if found is None or worst > found[1]:
            found = (around[1], worst)
    return found


def run_sweep(
    sets: Sequence[LabelledSet],
    embedder: Embedder,
    current: Tuning,
    background: Background = NO_BACKGROUND,
    parts: Parts = NO_PARTS,
) -> None:
    """Print, per blend, words share and best-thought share, the steadiest point, then the curve at `current`."""
    corpora = {d.split: corpus(d, embedder, parts.name_share) for d in sets}
    for k in BLENDS:
        rs = replays(sets, corpora, k, background, parts)
        for words, best in itertools.product(WORDS, BEST):
            at = f"blend_k {k} words {words} best_thought {best}"
            found = best_point(rs, k, words, best)
            if found is None:
                print(f"sweep {at}: no threshold holds the rule")
                continue
            tuning, worst = found
            print(f"sweep {at}: threshold {tuning.threshold} (worst recall ±0.02 {worst:.3f})")
            for r in rs:
                print(f"    {r.data.split}: {_fmt(*r.scores(tuning))}")
    curve(sets, corpora, current, background, parts)


def curve(
    sets: Sequence[LabelledSet],
    corpora: Mapping[str, Corpus],
    tuning: Tuning,
    background: Background = NO_BACKGROUND,
    parts: Parts = NO_PARTS,
) -> None:
    """Each split's scores at `tuning` and at thresholds from -0.04 to +0.04 around it, by 0.01."""
    rs = replays(sets, corpora, tuning.blend_k, background, parts)
    for step in range(-4, 5):
        t = Tuning(round(tuning.threshold + 0.01 * step, 2), tuning.words, tuning.blend_k, tuning.best_thought)
        for r in rs:
            print(
                f"around blend_k {t.blend_k} words {t.words} best_thought {t.best_thought}, threshold {t.threshold}, "
                f"{r.data.split}: {_fmt(*r.scores(t))}"
            )


def splits_arg(text: str, tuning: bool) -> list[str]:
    """The splits of a run; a calibration grid refuses test (it is never tuned on)."""
    splits = [s.strip() for s in text.split(",") if s.strip()]
    if tuning and "test" in splits:
        raise SystemExit("the sweep is calibration: run it on train and dev only, never on test (--curve reports)")
    return splits


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--splits", default="train,dev")
    parser.add_argument("--model", type=Path, help="an ONNX embedding model other than the shipped one")
    parser.add_argument("--pooling", choices=("mean", "cls"), default="mean", help="how --model pools tokens")
    parser.add_argument("--threshold", type=float, default=TUNING.threshold, help="the point to show around")
    parser.add_argument("--words", type=float, default=TUNING.words)
    parser.add_argument("--blend-k", type=float, default=TUNING.blend_k)
    parser.add_argument("--best-thought", type=float, default=TUNING.best_thought)
    parser.add_argument(
        "--background",
        type=float,
        default=0.0,
        help="measured, not shipped: subtract this share of the sequence's mean similarity to its other threads",
    )
    parser.add_argument("--background-prior", type=float, default=Background.prior)
    parser.add_argument("--background-weight", type=float, default=Background.weight)
    parser.add_argument("--first-thought", type=float, default=0.0, help="measured, not shipped: see Parts")
    parser.add_argument("--last-thought", type=float, default=0.0, help="measured, not shipped: see Parts")
    parser.add_argument("--halves", type=float, default=0.0, help="measured, not shipped: see Parts")
    parser.add_argument("--name-share", type=float, default=0.0, help="measured, not shipped: see Parts")
    parser.add_argument(
        "--curve", action="store_true", help="no grid: only the curve around the point (a report; test allowed)"
    )
    args = parser.parse_args(argv)
    embedder = cached_embedder(args.model, args.pooling)
    print(f"model {model_tag(args.model, args.pooling)}; shipped tuning {TUNING}")
    sets = [load(s) for s in splits_arg(args.splits, tuning=not args.curve)]
    point = Tuning(args.threshold, args.words, args.blend_k, args.best_thought)
    background = Background(args.background, args.background_prior, args.background_weight)
    if background.share:
        print(f"background {background}")
    parts = Parts(args.first_thought, args.last_thought, args.halves, args.name_share)
    if parts != NO_PARTS:
        print(f"parts {parts}")
    if args.curve:
        curve(sets, {d.split: corpus(d, embedder, parts.name_share) for d in sets}, point, background, parts)
    else:
        run_sweep(sets, embedder, point, background, parts)


if __name__ == "__main__":
    main()
