"""The training data of the search ranker and abstention model: one pool per question of a split.

Each question of a split (`eval_reasoning.load_split`: a name or a glob of parts) is searched in
that split's own store, and its pool's candidate features, answer flags and query features are
kept. Topic ablation asks a topic's answerable questions of the split without that topic: an
in-domain question about something absent whose near-miss neighbours stay.
Test and LoCoMo are never read here (the training script refuses them).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from bench.eval_reasoning import build, load_split
from thoughtline.library import ranker
from thoughtline.library.dense import DenseIndex
from thoughtline.library.embed import Embedder
from thoughtline.library.pipeline import gather
from thoughtline.library.retrieval import Tuning
from thoughtline.storage.db import connect
from thoughtline.storage.search import SearchFilters

F = NDArray[np.float64]


@dataclass(frozen=True)
class Example:
    """One question's pool: features, which rows answer it, its query features, its split and topic."""

    qid: str
    kind: str
    split: str
    topic: str
    x: F
    y: NDArray[np.bool_]
    q: F
    answerable: bool

    def with_query(self, q: F) -> Example:
        """The same example with other query features."""
        return replace(self, q=q)


def _topics(data: dict[str, Any]) -> dict[str, str]:
    return {t["id"]: s["topics"][0] for s in data["sequences"] for t in s["thoughts"]}


def collect(spec: str, models: ranker.Models, workdir: Path, embedder: Embedder) -> list[Example]:
    """Pools of every question of one split; a never-stored question is a topic of its own."""
    data = load_split(spec)
    split = str(data.get("split", spec))
    built = build(data, workdir, embedder)
    topic_of = _topics(data)
    by_qid = {q["id"]: q for q in data["questions"]}
    conn = connect(built.path, "wal", readonly=True)
    index = DenseIndex()
    out: list[Example] = []
    try:
        for q in built.questions:
            pool = gather(conn, embedder, q.text, SearchFilters(), Tuning(), index, "hybrid", models)
            y = np.array([tid in q.answers for tid in pool.ids], dtype=np.bool_)
            raw = by_qid[q.qid]
            topic = topic_of[raw["answers"][0]] if raw["answers"] else f"absent:{q.qid}"
            out.append(
                Example(
                    q.qid, q.kind, split, f"{split}:{topic}", pool.features, y, pool.query_features, bool(q.answers)
                )
            )
    finally:
        conn.close()
    return out


def collect_ablated(spec: str, models: ranker.Models, workdir: Path, embedder: Embedder) -> list[Example]:
    """Topic ablation: each topic's answerable questions, asked of the split without that topic.

    One in-domain never-stored question per answerable one, about a topic that is now absent
    while its neighbours (the near-miss distractors that share its words) stay. Each is grouped
    under its own topic, so cross-validation holds it out with the topic.
    """
    data = load_split(spec)
    split = str(data.get("split", spec))
    topic_of = _topics(data)
    out: list[Example] = []
    for topic in sorted({s["topics"][0] for s in data["sequences"]}):
        kept = [s for s in data["sequences"] if topic not in s["topics"]]
        kept_ids = {t["id"] for s in kept for t in s["thoughts"]}
        asked = [
            q
            for q in data["questions"]
            if q["answers"] and topic_of[q["answers"][0]] == topic and not set(q["answers"]) & kept_ids
        ]
        if not asked:
            continue
        part = {**data, "split": f"{split}-without-{topic}", "sequences": kept, "questions": []}
        built = build(part, workdir, embedder)
        conn = connect(built.path, "wal", readonly=True)
        index = DenseIndex()
        try:
            for q in asked:
                pool = gather(conn, embedder, q["query"], SearchFilters(), Tuning(), index, "hybrid", models)
                none = np.zeros(len(pool.ids), dtype=np.bool_)
                qid = f"{q['id']}-ablated"
                ex = Example(qid, "ablated", split, f"{split}:{topic}", pool.features, none, pool.query_features, False)
                out.append(ex)
        finally:
            conn.close()
    return out
