"""LoCoMo retrieval evaluation: recall@5/@10 and MRR of evidence turns, plus search latency.

Each conversation becomes one store (a real SQLite file with the real migrations), each session
one sequence and each turn one thought ("Speaker: text"). Every question of categories 1-4 is
searched keyword-only, vector-only and hybrid; a question's recall@k is the share of its evidence
turns in the top k. LoCoMo is CC BY-NC (evaluation only): it is read from ../shared and the stores
are built under a scratch directory, never inside the package.

    python -m bench.eval_locomo [--conversations 26,30] [--phrase-weight 0.5] ...
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import apsw

from bench.embed_cache import cached_embedder, model_tag
from thoughtline.library import pipeline, vectors
from thoughtline.library.dense import DenseIndex
from thoughtline.library.embed import Embedder, MiniLMEmbedder
from thoughtline.library.query import build_query
from thoughtline.library.search_types import Scope, Tuning
from thoughtline.storage.db import connect
from thoughtline.storage.migrations import migrate

_RELEASE = Path("shared") / "data" / "locomo" / "locomo10.zip"
# ../shared beside the checkout (a worktree sits one level deeper than the main checkout).
DATA = next(
    (p / _RELEASE for p in Path(__file__).resolve().parents if (p / _RELEASE).exists()),
    Path(__file__).resolve().parents[2] / _RELEASE,
)
MODES = ("keyword", "vector", "hybrid")


@dataclass(frozen=True)
class Question:
    """One LoCoMo question with the thought ids of its evidence turns."""

    text: str
    category: int
    evidence: frozenset[int]


@dataclass
class Scores:
    """Per-mode accumulators."""

    r5: list[float]
    r10: list[float]
    hit5: list[float]
    rr: list[float]
    latency_ms: list[float]
    category: list[int]


def conversations(path: Path) -> Iterator[tuple[str, dict[str, object]]]:
    """(conversation id, parsed JSON) for every conversation in the release zip."""
    with zipfile.ZipFile(path) as archive:
        for name in sorted(archive.namelist()):
            if name.endswith(".json"):
                yield Path(name).stem, json.loads(archive.read(name))


def turn_text(turn: dict[str, str]) -> str:
    """A turn as a thought: the speaker's name, what they said, and a shared photo's caption."""
    text = f"{turn['speaker']}: {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [shares a photo: {turn['blip_caption']}]"
    return text


def build_store(
    path: Path, convo: dict[str, object], passage_min_chars: int, embedder: Embedder | None = None
) -> dict[str, int]:
    """Write one conversation into a fresh store, embed it, and map dia_id → thought id."""
    conn = connect(path, "wal")
    migrate(conn)
    dia_to_id: dict[str, int] = {}
    sessions = sorted(
        (int(k.split("_")[1]), v) for k, v in convo.items() if k.startswith("session_") and isinstance(v, list)
    )
    base_ms = 1_680_000_000_000
    with conn:
        for number, turns in sessions:
            stamp = base_ms + number * 86_400_000
            title = f"Session {number} · {convo.get(f'session_{number}_date_time', '')}"
            # The core write path is not the subject here; the bench writes rows directly so the
            # evaluation stays independent of the tool layer's validation and rendering.
            conn.execute(
                "INSERT INTO sequences(public_id, title, status, total_thoughts, last_thought_number, "
                "thought_count, created_at, updated_at) VALUES (?, ?, 'completed', ?, ?, ?, ?, ?)",
                (f"seq_s{number}", title, len(turns), len(turns), len(turns), stamp, stamp),
            )
            seq = conn.last_insert_rowid()
            for position, turn in enumerate(turns, start=1):
                conn.execute(
                    "INSERT INTO thoughts(sequence_id, position, number, total, next_needed, body, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (seq, position, position, len(turns), int(position < len(turns)), turn_text(turn), stamp),
                )
                dia_to_id[turn["dia_id"]] = conn.last_insert_rowid()
    vectors.backfill(conn, embedder or MiniLMEmbedder(), passage_min_chars=passage_min_chars)
    conn.close()
    return dia_to_id


def questions(convo: dict[str, object], dia_to_id: dict[str, int]) -> list[Question]:
    """Categories 1-4 with at least one evidence turn that exists in the conversation."""
    out: list[Question] = []
    qa = convo["qa"]
    assert isinstance(qa, list)
    for item in qa:
        if item["category"] not in (1, 2, 3, 4):
            continue
        evidence = frozenset(dia_to_id[e] for e in item.get("evidence", []) if e in dia_to_id)
        if evidence:
            out.append(Question(str(item["question"]), int(item["category"]), evidence))
    return out


def evaluate(conn: apsw.Connection, embedder: Embedder, qs: Sequence[Question], tuning: Tuning) -> dict[str, Scores]:
    """Run every question once and read every mode's order from its pool.

    Latency is the whole hybrid search (embedding the question, pool, ranking, results); the
    keyword and vector orders are the same pool's sides, so their latency is that of the hybrid.
    """
    results = {m: Scores([], [], [], [], [], []) for m in MODES}
    # Abstention is a product behaviour; the evaluation ranks everything.
    scope = Scope(tuning=replace(tuning, abstain=False), index=DenseIndex())
    for q in qs:
        start = time.perf_counter()
        pool = pipeline.gather(conn, build_query(q.text, (), embedder), scope)
        orders = {"hybrid": pipeline.rank(pool)}
        hits = {"hybrid": pipeline.top_hits(pool, orders["hybrid"], scope.tuning, limit=10, by="thought")}
        elapsed = (time.perf_counter() - start) * 1000
        orders.update({"keyword": pipeline.keyword_order(pool), "vector": pool.dense})
        for mode in ("keyword", "vector"):
            hits[mode] = pipeline.top_hits(pool, orders[mode], scope.tuning, limit=10, by="thought")
        for mode in MODES:
            ranked = [h.record.thought_id for h in hits[mode]]
            s = results[mode]
            s.r5.append(len(q.evidence & set(ranked[:5])) / len(q.evidence))
            s.r10.append(len(q.evidence & set(ranked[:10])) / len(q.evidence))
            s.hit5.append(float(bool(q.evidence & set(ranked[:5]))))
            first = next((i for i, tid in enumerate(ranked) if tid in q.evidence), None)
            s.rr.append(0.0 if first is None else 1.0 / (first + 1))
            s.latency_ms.append(elapsed)
            s.category.append(q.category)
    return results


def open_store(
    workdir: Path, cid: str, convo: dict[str, object], passage_min_chars: int, embedder: Embedder
) -> tuple[Path, dict[str, int]]:
    """Build one conversation's store, or reuse it from `workdir` (upgrading its schema)."""
    store = workdir / f"locomo-{cid}-p{passage_min_chars}.sqlite"
    mapping_file = store.with_suffix(".map.json")
    if store.exists() and mapping_file.exists():
        dia_to_id: dict[str, int] = json.loads(mapping_file.read_text())
        # A store cached by an older build gets the newer search migrations (its vectors
        # stay valid), which also exercises the upgrade path.
        upgrade = connect(store, "wal")
        migrate(upgrade)
        vectors.backfill(upgrade, embedder, passage_min_chars=passage_min_chars)
        upgrade.close()
    else:
        for stale in workdir.glob(store.name + "*"):
            stale.unlink()
        dia_to_id = build_store(store, convo, passage_min_chars, embedder)
        mapping_file.write_text(json.dumps(dia_to_id))
    return store, dia_to_id


def summary_by_mode(
    workdir: Path, embedder: Embedder, tuning: Tuning | None = None
) -> dict[str, dict[str, dict[str, float]]]:
    """All ten conversations in every mode, shaped like `eval_reasoning.summarise` (held out: never tuned on)."""
    totals = {m: Scores([], [], [], [], [], []) for m in MODES}
    for cid, convo in conversations(DATA):
        store, dia_to_id = open_store(workdir, cid, convo, vectors.PASSAGE_MIN_CHARS, embedder)
        conn = connect(store, "wal", readonly=True)
        result = evaluate(conn, embedder, questions(convo, dia_to_id), tuning or Tuning())
        conn.close()
        for mode in MODES:
            for name in ("r5", "r10", "hit5", "rr", "latency_ms", "category"):
                getattr(totals[mode], name).extend(getattr(result[mode], name))
    return {
        mode: {
            "all": {
                "n": len(s.r5),
                "recall@5": round(statistics.fmean(s.r5), 4),
                "recall@10": round(statistics.fmean(s.r10), 4),
                "mrr": round(statistics.fmean(s.rr), 4),
            }
        }
        for mode, s in totals.items()
    }


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(argv: Sequence[str] | None = None) -> None:
    """Parse options, build (or reuse) the stores, print one table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--conversations", default="", help="comma list of ids (default: all ten)")
    parser.add_argument("--workdir", type=Path, default=None, help="reuse stores here (default: a temp dir)")
    parser.add_argument("--model", type=Path, help="an ONNX embedding model other than the shipped one")
    parser.add_argument("--pooling", choices=("mean", "cls"), default="mean", help="how --model pools tokens")
    parser.add_argument("--query-prefix", default="", help="an instruction put before each query (BGE's)")
    parser.add_argument(
        "--passage-min-chars",
        type=int,
        default=vectors.PASSAGE_MIN_CHARS,
        help="thoughts longer than this also get passage vectors (0: every multi-sentence thought)",
    )
    defaults = Tuning()
    parser.add_argument("--pool", type=int, default=defaults.pool)
    parser.add_argument("--context-weight", type=float, default=defaults.context_weight)
    parser.add_argument("--title-weight", type=float, default=defaults.title_weight)
    parser.add_argument("--phrase-weight", type=float, default=defaults.phrase_weight)
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = parser.parse_args(argv)
    tuning = replace(
        defaults,
        pool=args.pool,
        context_weight=args.context_weight,
        title_weight=args.title_weight,
        phrase_weight=args.phrase_weight,
    )
    wanted = {c.strip() for c in args.conversations.split(",") if c.strip()}
    with tempfile.TemporaryDirectory(prefix="locomo-") as scratch:
        workdir = (args.workdir or Path(scratch)) / model_tag(args.model, args.pooling)
        workdir.mkdir(parents=True, exist_ok=True)
        embedder = cached_embedder(args.model, args.pooling, args.query_prefix)
        totals = {m: Scores([], [], [], [], [], []) for m in MODES}
        per_convo: dict[str, float] = {}
        for cid, convo in conversations(args.data):
            if wanted and cid not in wanted:
                continue
            store, dia_to_id = open_store(workdir, cid, convo, args.passage_min_chars, embedder)
            conn = connect(store, "wal", readonly=True)
            result = evaluate(conn, embedder, questions(convo, dia_to_id), tuning)
            conn.close()
            per_convo[cid] = statistics.fmean(result["hybrid"].r5)
            for mode in MODES:
                for name in ("r5", "r10", "hit5", "rr", "latency_ms", "category"):
                    getattr(totals[mode], name).extend(getattr(result[mode], name))
    summary = {
        mode: {
            "questions": len(s.r5),
            "recall@5": round(statistics.fmean(s.r5), 4),
            "recall@10": round(statistics.fmean(s.r10), 4),
            "hit@5": round(statistics.fmean(s.hit5), 4),
            "mrr": round(statistics.fmean(s.rr), 4),
            "p50_ms": round(_pct(s.latency_ms, 0.5), 2),
            "p95_ms": round(_pct(s.latency_ms, 0.95), 2),
        }
        for mode, s in totals.items()
    }
    hybrid = totals["hybrid"]
    by_category = {
        c: round(statistics.fmean(r for r, k in zip(hybrid.r5, hybrid.category, strict=True) if k == c), 4)
        for c in sorted(set(hybrid.category))
    }
    if args.json:
        print(
            json.dumps(
                {
                    "tuning": tuning.__dict__,
                    "summary": summary,
                    "hybrid_r5_by_conversation": per_convo,
                    "hybrid_r5_by_category": by_category,
                }
            )
        )
        return
    print(f"tuning: {tuning}  passage_min_chars={args.passage_min_chars}")
    print(f"{'mode':8} {'n':>5} {'r@5':>7} {'r@10':>7} {'hit@5':>7} {'MRR':>7} {'p50 ms':>7} {'p95 ms':>7}")
    for mode, row in summary.items():
        print(
            f"{mode:8} {row['questions']:>5} {row['recall@5']:>7.4f} {row['recall@10']:>7.4f} "
            f"{row['hit@5']:>7.4f} {row['mrr']:>7.4f} {row['p50_ms']:>7.2f} {row['p95_ms']:>7.2f}"
        )
    print("hybrid r@5 by category: " + ", ".join(f"{c} {v:.3f}" for c, v in by_category.items()))
    print("hybrid r@5 by conversation: " + ", ".join(f"{c} {v:.3f}" for c, v in sorted(per_convo.items())))


if __name__ == "__main__":
    main()
