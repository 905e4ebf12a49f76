"""Search evaluation on the reasoning set (bench/data/reasoning): recall@5/@10, MRR and abstention.

Each split is written into its own real store through the real tool registry, as a signed-in
principal (`bench/replay.py`), embedded, then every question is searched once, and three orders
are read from its pool: the keyword side's, the vector side's and the hybrid's (what
`search_thoughts` ships). `--alternatives` sends each question with the agent-written
alternatives of bench/data/agent-queries/<split>.json, as an agent would.
Ranking metrics are taken on the ranking itself (as if abstention were off); abstention is
reported beside them: the share of never-stored questions that abstain (clearly foreign `absent`
and near-miss `absent_near` apart), and the share of answerable ones that do. recall@k: a `multi`
question scores the share of its answers in the first k, any other question whether one of its
answers is there (`found`); `every@5` scores the share for every question. Sequence recall@5:
a relevant sequence among the first five distinct sequences. Tune on train and dev only; test is
reported, never tuned on.

    python -m bench.eval_reasoning [--splits dev,test] [--alternatives] [--locomo] [--json]

A split is a name (`bench/data/reasoning/<name>.json`) or a glob of part files in the same format,
merged in memory (`--splits '/work/trainparts/?.json'`).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import shutil
import statistics
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import apsw

from bench.embed_cache import cached_embedder, model_tag
from bench.replay import load_split, oldest_first, replaying, write_sequence
from thoughtline.domain.vector_keys import chunk_texts
from thoughtline.library import pipeline, vectors
from thoughtline.library.dense import DenseIndex
from thoughtline.library.embed import Embedder
from thoughtline.library.query import build_query
from thoughtline.library.search_types import Scope, Tuning
from thoughtline.mcp.library_tools import Library
from thoughtline.storage.db import connect
from thoughtline.storage.router import store_path

AGENT_QUERIES = Path(__file__).resolve().parent / "data" / "agent-queries"
MODES = ("keyword", "vector", "hybrid")
ABSENT = ("absent", "absent_near")
USER = "eval"
STATUS_ACTION = {"paused": "pause", "abandoned": "abandon", "active": "resume"}


@dataclass(frozen=True)
class Question:
    """One question: its type and the store's thought ids that answer it (empty: never stored)."""

    qid: str
    kind: str
    text: str
    answers: frozenset[int]
    alternatives: tuple[str, ...] = ()
    # Answer thought id -> its sequence row id (sequence recall).
    sequences: frozenset[int] = frozenset()


@dataclass(frozen=True)
class Built:
    """A split written into a store: its file and its questions mapped to thought ids."""

    path: Path
    questions: list[Question]


async def _write_split(data: Mapping[str, Any], data_dir: Path) -> dict[str, int]:
    """Write every sequence through the tools; map dataset thought id -> store thought id."""
    written: list[str] = []
    # No embedder is ever created (no search runs here), so writes queue their vectors.
    async with replaying(data_dir, USER, Library()) as run:
        for seq in oldest_first(data):
            run.clock.written(seq)
            sequence_id: str | None = None
            async for thought, out in write_sequence(run.registry, seq):
                sequence_id = str(out["sequenceId"])
                written.append(str(thought["id"]))
                run.clock.t += 60
            action = STATUS_ACTION.get(str(seq.get("status")))
            if action and sequence_id:
                await run.registry.call("manage_sequence", {"action": action, "sequenceId": sequence_id})
    # A fresh store numbers thoughts in write order.
    return {tid: row for row, tid in enumerate(written, start=1)}


def load_alternatives(split: str) -> dict[str, tuple[str, ...]]:
    """The agent-written alternatives of a split's questions, by question id (none when the file is absent)."""
    path = AGENT_QUERIES / f"{split}.json"
    if not path.exists():
        raise SystemExit(f"no agent-written alternatives for {split!r} at {path}")
    raw = json.loads(path.read_text())
    return {str(q["id"]): tuple(q["alternatives"]) for q in raw["questions"]}


def with_alternatives(questions: Sequence[Question], split: str) -> list[Question]:
    """The questions with their agent-written alternatives (ids not in the file keep none)."""
    alts = load_alternatives(split)
    return [replace(q, alternatives=alts.get(q.qid, ())) for q in questions]


def build(data: Mapping[str, Any], workdir: Path, embedder: Embedder) -> Built:
    """Write, embed and map one split (reusing a store built from the same data and chunking)."""
    # The store's vectors depend on the data and on how thoughts are cut into passages.
    sample = [chunk_texts(t["thought"]) for seq in data["sequences"][:20] for t in seq["thoughts"]]
    digest = hashlib.sha256(json.dumps([data, sample], sort_keys=True).encode()).hexdigest()[:12]
    data_dir = workdir / f"{data.get('split', 'split')}-{digest}-p{vectors.PASSAGE_MIN_CHARS}"
    path = store_path(data_dir, USER)
    mapping_file = data_dir / "ids.json"
    if path.exists() and mapping_file.exists():
        ids = json.loads(mapping_file.read_text())
    else:
        # A store without its mapping is from a write that failed part way: start it afresh
        # (the mapping assumes a fresh store numbers thoughts in write order).
        if data_dir.exists():
            shutil.rmtree(data_dir)
        ids = asyncio.run(_write_split(data, data_dir))
        mapping_file.write_text(json.dumps(ids))
    conn = connect(path, "wal")
    vectors.backfill(conn, embedder)
    sequence_of = {int(t): int(s) for t, s in conn.execute("SELECT id, sequence_id FROM thoughts")}
    conn.close()
    questions = [
        Question(
            str(q["id"]),
            str(q["type"]),
            str(q["query"]),
            frozenset(ids[a] for a in q["answers"]),
            sequences=frozenset(sequence_of[ids[a]] for a in q["answers"]),
        )
        for q in data["questions"]
    ]
    return Built(path, questions)


def run_questions(
    conn: apsw.Connection, embedder: Embedder, questions: Sequence[Question], tuning: Tuning | None = None
) -> list[dict[str, Any]]:
    """Every question once: one row per (question, mode) with its ranking and abstention.

    The keyword and vector orders are the hybrid pool's own sides (the same candidates the ranker
    saw); abstention is the shipped model's decision on that pool.
    """
    scope = Scope(tuning=tuning or Tuning(), index=DenseIndex())
    rows: list[dict[str, Any]] = []
    for q in questions:
        pool = pipeline.gather(conn, build_query(q.text, q.alternatives, embedder), scope)
        abstained = pipeline.judge(pool) > pool.models.abstain_above
        orders = {"keyword": pipeline.keyword_order(pool), "vector": pool.dense, "hybrid": pipeline.rank(pool)}
        for mode in MODES:
            hits = pipeline.top_hits(pool, orders[mode], scope.tuning, limit=10, by="thought")
            ranked = [h.record.thought_id for h in hits]
            seqs = pipeline.top_hits(pool, orders[mode], scope.tuning, limit=5, by="sequence")
            sequences = [h.record.sequence_key for h in seqs]
            rows.append({"q": q, "mode": mode, "ranked": ranked, "sequences": sequences, "abstained": abstained})
    return rows


def summarise(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """mode -> question type (and 'all') -> metrics."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for mode in MODES:
        mine = [r for r in rows if r["mode"] == mode]
        groups: dict[str, list[dict[str, Any]]] = {"all": mine}
        for r in mine:
            groups.setdefault(r["q"].kind, []).append(r)
        out[mode] = {name: _metrics(group) for name, group in groups.items()}
    return out


def found(q: Question, ranked: Sequence[int]) -> float:
    """How much of a question `ranked` answers: the share of a `multi` question's answers (each holds
    part of the evidence), else whether any answer is there (each of them answers it alone).

    This is recall@k as the issues measure it from outside (agent-queries/README.md): scoring the
    share for every question would count a paraphrase question whose answer is a thought and its
    revision as half-missed when either one is found.
    """
    hits = len(q.answers & set(ranked))
    return hits / len(q.answers) if q.kind == "multi" else float(hits > 0)


def _metrics(rows: Sequence[dict[str, Any]]) -> dict[str, float]:
    answerable = [r for r in rows if r["q"].answers]
    absent = [r for r in rows if not r["q"].answers]
    m: dict[str, float] = {"n": len(rows)}
    if answerable:
        r5, r10, rr, s5, every5 = [], [], [], [], []
        for r in answerable:
            gold, ranked = r["q"].answers, r["ranked"]
            r5.append(found(r["q"], ranked[:5]))
            r10.append(found(r["q"], ranked[:10]))
            every5.append(len(gold & set(ranked[:5])) / len(gold))
            first = next((i for i, tid in enumerate(ranked) if tid in gold), None)
            rr.append(0.0 if first is None else 1.0 / (first + 1))
            s5.append(float(bool(r["q"].sequences & set(r["sequences"][:5]))))
        m.update({"recall@5": statistics.fmean(r5), "recall@10": statistics.fmean(r10), "mrr": statistics.fmean(rr)})
        m["every_answer@5"] = statistics.fmean(every5)
        m["sequence_recall@5"] = statistics.fmean(s5)
        m["answerable_abstained"] = statistics.fmean(float(r["abstained"]) for r in answerable)
    if absent:
        m["never_stored_abstained"] = statistics.fmean(float(r["abstained"]) for r in absent)
    for kind in ABSENT:
        mine = [r for r in absent if r["q"].kind == kind]
        if mine:
            m[f"{kind}_abstained"] = statistics.fmean(float(r["abstained"]) for r in mine)
    return {k: round(v, 4) for k, v in m.items()}


def evaluate_split(
    name: str, workdir: Path, embedder: Embedder, tuning: Tuning | None = None, alternatives: bool = False
) -> dict[str, Any]:
    """Build (or reuse) the split's store and summarise every mode (with the agent-written alternatives)."""
    data = load_split(name)
    built = build(data, workdir, embedder)
    questions = with_alternatives(built.questions, str(data.get("split", name))) if alternatives else built.questions
    conn = connect(built.path, "wal", readonly=True)
    try:
        rows = run_questions(conn, embedder, questions, tuning)
    finally:
        conn.close()
    return summarise(rows)


def print_table(sets: Mapping[str, Mapping[str, Mapping[str, Mapping[str, float]]]]) -> None:
    """One table: a row per (set, mode)."""
    head = (
        f"{'set':14} {'mode':8} {'n':>4} {'r@5':>6} {'every@5':>7} {'r@10':>6} {'MRR':>6} {'seq@5':>6} "
        f"{'absent→abst':>12} {'near→abst':>10} {'answerable→abst':>16}"
    )
    print(head)
    print("-" * len(head))
    for set_name, modes in sets.items():
        for mode, groups in modes.items():
            a = groups["all"]

            def share(key: str, a: Mapping[str, float] = a, mode: str = mode) -> str:
                return f"{a[key]:.3f}" if mode == "hybrid" and key in a else "—"

            def cell(key: str, a: Mapping[str, float] = a) -> str:
                return f"{a[key]:.3f}" if key in a else "—"  # LoCoMo has no every@5 or sequences

            print(
                f"{set_name:14} {mode:8} {int(a['n']):>4} {cell('recall@5'):>6} {cell('every_answer@5'):>7} "
                f"{cell('recall@10'):>6} {cell('mrr'):>6} {cell('sequence_recall@5'):>6} "
                f"{share('absent_abstained'):>12} {share('absent_near_abstained'):>10} "
                f"{share('answerable_abstained'):>16}"
            )


def print_types(name: str, modes: Mapping[str, Mapping[str, Mapping[str, float]]]) -> None:
    """Per question type, hybrid beside its halves (recall@5 / MRR)."""
    kinds = [k for k in modes["hybrid"] if k != "all"]
    for kind in sorted(kinds):
        cells = []
        for mode in MODES:
            g = modes[mode].get(kind, {})
            if "recall@5" in g:
                cells.append(f"{mode} r@5 {g['recall@5']:.3f} r@10 {g['recall@10']:.3f} MRR {g['mrr']:.3f}")
        hybrid = modes["hybrid"][kind]
        abst = hybrid.get("never_stored_abstained", hybrid.get("answerable_abstained", 0.0))
        print(f"  {name} {kind:12} n={int(hybrid['n']):>3} abstain {abst:.3f}  " + " | ".join(cells))


def main(argv: Sequence[str] | None = None) -> None:
    """Evaluate the requested splits (and LoCoMo) and print one table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", default="dev,test")
    parser.add_argument("--locomo", action="store_true", help="also run LoCoMo, all ten conversations")
    parser.add_argument(
        "--alternatives",
        choices=("off", "on", "both"),
        default="off",
        const="on",
        nargs="?",
        help="send the agent-written alternatives with each question (both: each split twice)",
    )
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "thoughtline-eval-stores")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--model", type=Path, help="an ONNX embedding model other than the shipped one")
    parser.add_argument("--pooling", choices=("mean", "cls"), default="mean", help="how --model pools tokens")
    parser.add_argument("--query-prefix", default="", help="an instruction put before each query (BGE's)")
    args = parser.parse_args(argv)
    # Stores hold vectors, so each model gets stores of its own.
    args.workdir = args.workdir / model_tag(args.model, args.pooling)
    embedder = cached_embedder(args.model, args.pooling, args.query_prefix)
    args.workdir.mkdir(parents=True, exist_ok=True)
    sets: dict[str, Any] = {}
    for name in [s.strip() for s in args.splits.split(",") if s.strip()]:
        label = name if "/" not in name and not name.endswith(".json") else str(load_split(name)["split"])
        if args.alternatives in ("off", "both"):
            sets[label] = evaluate_split(name, args.workdir, embedder)
        if args.alternatives in ("on", "both"):
            sets[f"{label}+alts"] = evaluate_split(name, args.workdir, embedder, alternatives=True)
    if args.locomo:
        from bench import eval_locomo

        sets["LoCoMo"] = eval_locomo.summary_by_mode(args.workdir, embedder)
    if args.json:
        print(json.dumps(sets, indent=1))
        return
    print_table(sets)
    for name, modes in sets.items():
        if name != "LoCoMo":
            print_types(name, modes)


if __name__ == "__main__":
    main()
