"""The training data of the search ranker and abstention model: one pool per question of a split.

Each question of a split (`replay.load_split`: a name or a glob of parts) is searched in
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

from bench.eval_reasoning import build, load_alternatives
from bench.replay import load_split
from thoughtline.library import ranker
from thoughtline.library.dense import DenseIndex
from thoughtline.library.embed import Embedder
from thoughtline.library.pipeline import gather
from thoughtline.library.query import build_query
from thoughtline.library.search_types import Scope
from thoughtline.storage.db import connect

F = NDArray[np.float64]


@dataclass(frozen=True)
class Example:
    """One question's pool: features, which rows answer it, its query features, its split and topic."""

    qid: str
    kind: str
    split: str
    topic: str
    x: ranker.Table
    y: NDArray[np.bool_]
    q: ranker.Table
    answerable: bool
    # The writer's part of a train question ("a".."j"), which cross-validation holds out whole.
    part: str = ""

    def with_query(self, q: ranker.Table) -> Example:
        """The same example with other query features."""
        return replace(self, q=q)


def _topics(data: dict[str, Any]) -> dict[str, str]:
    return {t["id"]: s["topics"][0] for s in data["sequences"] for t in s["thoughts"]}


def _part(name: str) -> str:
    """The writer's part a topic or question id belongs to ("a-kafka-lag", "train-a-q001" -> "a")."""
    pieces = name.split("-")
    if len(pieces) > 1 and len(pieces[0]) == 1:
        return pieces[0]
    if len(pieces) > 2 and pieces[0] == "train" and len(pieces[1]) == 1:
        return pieces[1]
    return ""


def _parts_of(question: dict[str, Any]) -> set[str]:
    answers = question["answers"]
    return {_part(a) for a in answers} if answers else {_part(question["id"])}


def shards(data: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """The split cut into `n` stores by writer part (each part holds its own traps and never-stored questions).

    The train split is about twice dev's size; cut in two, each store is near the ~500 thoughts
    dev and test have and the abstention model is calibrated for.
    """
    parts = sorted({_part(t["id"]) for t in data["topics"]})
    if n <= 1 or len(parts) < n:
        return [data]
    shard_of = {p: i % n for i, p in enumerate(parts)}
    out = []
    for i in range(n):
        topics = {t["id"] for t in data["topics"] if shard_of[_part(t["id"])] == i}
        sequences = [s for s in data["sequences"] if s["topics"][0] in topics]
        # A question goes where its answers are (where its id says, if never stored); one whose
        # answers span shards is left out (no shard holds all of them).
        questions = [q for q in data["questions"] if {shard_of.get(p, -1) for p in _parts_of(q)} == {i}]
        name = f"{data.get('split', 'split')}-shard{i + 1}of{n}"
        out.append({**data, "split": name, "topics": [t for t in data["topics"] if t["id"] in topics],
                    "sequences": sequences, "questions": questions})  # fmt: skip
    return out


@dataclass(frozen=True)
class Setup:
    """How pools are gathered: the models, the stores' directory, the embedder, and whether
    questions carry their agent-written alternatives."""

    models: ranker.ModelSet
    workdir: Path
    embedder: Embedder
    alternatives: bool = False
    n_shards: int = 1

    def alternatives_of(self, split: str) -> dict[str, tuple[str, ...]]:
        """Question id -> alternatives (empty without `alternatives`)."""
        return load_alternatives(split) if self.alternatives else {}


def collect(spec: str, setup: Setup) -> list[Example]:
    """Pools of every question of one split; a never-stored question is a topic of its own."""
    whole = load_split(spec)
    split = str(whole.get("split", spec))
    if split == "dev" or setup.n_shards <= 1:
        return _collect(whole, split, setup)
    return [e for part in shards(whole, setup.n_shards) for e in _collect(part, split, setup)]


def _collect(data: dict[str, Any], split: str, setup: Setup) -> list[Example]:
    built = build(data, setup.workdir, setup.embedder)
    topic_of = _topics(data)
    by_qid = {q["id"]: q for q in data["questions"]}
    alts = setup.alternatives_of(split)
    conn = connect(built.path, "wal", readonly=True)
    scope = Scope(index=DenseIndex(), models=setup.models)
    out: list[Example] = []
    try:
        for q in built.questions:
            pool = gather(conn, build_query(q.text, alts.get(q.qid, ()), setup.embedder), scope)
            y = np.array([tid in q.answers for tid in pool.ids], dtype=np.bool_)
            raw = by_qid[q.qid]
            topic = topic_of[raw["answers"][0]] if raw["answers"] else f"absent:{q.qid}"
            part = _part(topic) if raw["answers"] else _part(q.qid)
            ex = Example(
                q.qid, q.kind, split, f"{split}:{topic}", pool.features, y, pool.query_features, bool(q.answers)
            )
            out.append(replace(ex, part=part))
    finally:
        conn.close()
    return out


def collect_ablated(spec: str, setup: Setup) -> list[Example]:
    """Topic ablation: each topic's answerable questions, asked of the split without that topic.

    One in-domain never-stored question per answerable one, about a topic that is now absent
    while its neighbours (the near-miss distractors that share its words) stay. Each is grouped
    under its own topic, so cross-validation holds it out with the topic.
    """
    whole = load_split(spec)
    split = str(whole.get("split", spec))
    pieces = [whole] if split == "dev" else shards(whole, setup.n_shards)
    return [e for data in pieces for e in _ablated(data, split, setup)]


def _ablated(data: dict[str, Any], split: str, setup: Setup) -> list[Example]:
    topic_of = _topics(data)
    alts = setup.alternatives_of(split)
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
        part = {**data, "split": f"{data.get('split', split)}-without-{topic}", "sequences": kept, "questions": []}
        built = build(part, setup.workdir, setup.embedder)
        conn = connect(built.path, "wal", readonly=True)
        scope = Scope(index=DenseIndex(), models=setup.models)
        try:
            for q in asked:
                query = build_query(q["query"], alts.get(q["id"], ()), setup.embedder)
                pool = gather(conn, query, scope)
                none = np.zeros(len(pool.ids), dtype=np.bool_)
                qid = f"{q['id']}-ablated"
                ex = Example(qid, "ablated", split, f"{split}:{topic}", pool.features, none, pool.query_features, False)
                out.append(replace(ex, part=_part(topic)))
        finally:
            conn.close()
    return out
