"""The dev-only calibration grid for thread proposals: both flows replayed in memory.

Uses the same rules as the service (`library.proposals`: `sequence_vector`, `thread_vector`,
`best_thread`) on MiniLM vectors of the labelled texts, so a grid of thresholds, margins and
blends costs one embedding pass. Also compares a sequence vector from its thoughts' vectors with
one from every passage vector (each thought cut into passages as long thoughts are).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from thoughtline.library.embed import Embedder
from thoughtline.library.proposals import Tuning, Vector, best_thread, sequence_vector, thread_vector, unit
from thoughtline.library.search import MAX_CHUNKS, chunk_texts

if TYPE_CHECKING:
    from bench.eval_threads import LabelledSet, Score

THRESHOLDS = [round(0.30 + 0.01 * i, 2) for i in range(31)]
MARGINS = [0.0, 0.02, 0.04, 0.06, 0.08]
BLENDS = [0.0, 1.0, 2.0, 4.0, 8.0, 16.0, float("inf")]


def _vectors(data: LabelledSet, embedder: Embedder, passages: bool) -> dict[str, Vector]:
    owners: list[str] = []
    texts: list[str] = []
    for seq in data.sequences:
        for t in seq["thoughts"]:
            parts = chunk_texts(t["thought"], MAX_CHUNKS, 0) if passages else [" ".join(t["thought"].split())]
            owners += [seq["id"]] * len(parts)
            texts += parts
    matrix = embedder.embed(texts)
    out: dict[str, Vector] = {}
    for seq in data.sequences:
        rows = matrix[[i for i, o in enumerate(owners) if o == seq["id"]]]
        v = sequence_vector(rows)
        if v is not None:
            out[seq["id"]] = v
    return out


def _threads(
    data: LabelledSet,
    desc: Mapping[str, Vector | None],
    seqv: Mapping[str, Vector],
    members: Mapping[str, set[str]],
    k: float,
) -> dict[str, Vector]:
    out: dict[str, Vector] = {}
    for topic in data.threads:
        # k = 0 is the members' centroid alone, k = inf the description alone (n / (n + k)).
        v = thread_vector(desc[topic], [seqv[s] for s in sorted(members[topic]) if s in seqv], k)
        if v is not None:
            out[topic] = v
    return out


def _propose(thread_vectors: Mapping[str, Vector], v: Vector, tuning: Tuning) -> str | None:
    order = sorted(thread_vectors)
    sims = {i: float(v @ thread_vectors[t]) for i, t in enumerate(order)}
    chosen = best_thread(sims, tuning)
    return None if chosen is None else order[chosen[0]]


def flow_a(
    data: LabelledSet, desc: Mapping[str, Vector | None], seqv: Mapping[str, Vector], k: float, tuning: Tuning
) -> list[tuple[str, str]]:
    """Threads first: seeds join at their first thought, each completed sequence is matched then."""
    members: dict[str, set[str]] = {t: set() for t in data.threads}
    seed_of = {s: t for t, seeds in data.seeds.items() for s in seeds}
    out: list[tuple[str, str]] = []
    for seq in data.sequences:
        if seq["id"] in seed_of:
            members[seed_of[seq["id"]]].add(seq["id"])
        if seq["status"] != "completed" or seq["id"] not in seqv:
            continue
        best = _propose(_threads(data, desc, seqv, members, k), seqv[seq["id"]], tuning)
        if best is not None and seq["id"] not in members[best]:
            out.append((best, seq["id"]))
    return out


def flow_b(
    data: LabelledSet, desc: Mapping[str, Vector | None], seqv: Mapping[str, Vector], k: float, tuning: Tuning
) -> list[tuple[str, str]]:
    """Sequences first: every stored sequence against threads holding their two pinned seeds."""
    members = {t: set(s) for t, s in data.seeds.items()}
    vectors = _threads(data, desc, seqv, members, k)
    out: list[tuple[str, str]] = []
    for seq in data.sequences:
        best = _propose(vectors, seqv[seq["id"]], tuning) if seq["id"] in seqv else None
        if best is not None and seq["id"] not in members[best]:
            out.append((best, seq["id"]))
    return out


def run_sweep(data: LabelledSet, embedder: Embedder, current: Tuning) -> None:
    """Print, per sequence-vector kind and blend, the best grid point with precision ≥ 0.9 in both flows."""
    from bench.eval_threads import score

    names = sorted(data.threads)
    matrix = embedder.embed([data.threads[t].get("description") or "" for t in names])
    desc = {t: unit(matrix[i]) if data.threads[t].get("description") else None for i, t in enumerate(names)}
    seeds = {t: set(s) for t, s in data.seeds.items()}
    for passages in (False, True):
        seqv = _vectors(data, embedder, passages)
        kind = "mean of passage vectors" if passages else "mean of thought vectors"
        for k in BLENDS:
            best: tuple[float, Tuning, Score, Score] | None = None
            for threshold in THRESHOLDS:
                for margin in MARGINS:
                    tuning = Tuning(threshold, margin, k)
                    a = score(data, flow_a(data, desc, seqv, k, tuning), seeds)
                    b = score(data, flow_b(data, desc, seqv, k, tuning), seeds)
                    if min(a.precision, b.precision) < 0.9:
                        continue
                    worst = min(a.recall, b.recall)
                    if best is None or worst > best[0]:
                        best = (worst, tuning, a, b)
            if best is None:
                print(f"sweep {kind}, blend_k {k}: no point reaches precision 0.9 in both flows")
                continue
            _, tuning, a, b = best
            print(
                f"sweep {kind}, blend_k {k}: threshold {tuning.threshold} margin {tuning.margin} -> "
                f"A P {a.precision:.3f} R {a.recall:.3f} · B P {b.precision:.3f} R {b.recall:.3f}"
            )
    _report_current(data, desc, embedder, current, seeds)


def _report_current(
    data: LabelledSet,
    desc: Mapping[str, Vector | None],
    embedder: Embedder,
    tuning: Tuning,
    seeds: Mapping[str, set[str]],
) -> None:
    from bench.eval_threads import score

    seqv = _vectors(data, embedder, False)
    for threshold in (
        tuning.threshold - 0.04,
        tuning.threshold - 0.02,
        tuning.threshold,
        tuning.threshold + 0.02,
        tuning.threshold + 0.04,
    ):
        t = Tuning(round(threshold, 2), tuning.margin, tuning.blend_k)
        a = score(data, flow_a(data, desc, seqv, t.blend_k, t), seeds)
        b = score(data, flow_b(data, desc, seqv, t.blend_k, t), seeds)
        print(
            f"around the chosen point, threshold {t.threshold}: A P {a.precision:.3f} R {a.recall:.3f} "
            f"· B P {b.precision:.3f} R {b.recall:.3f}"
        )
