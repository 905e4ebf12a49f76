"""Training examples for the embedder, read from files in the reasoning-set format.

Pure Python (no torch), so the rules are checked in the main venv. An example is an anchor
text, the text it should land near, a few texts it should land away from (hard negatives),
and every thought id that is right for the anchor, so that another example's positive in the
same batch is not pushed away when it answers this anchor too.

Kinds of pairs:
- `question`: a question and each of its answer thoughts. Hard negatives (`NEGATIVES`) are the
  thoughts of the answer topic's near-miss twin (a topic sharing its words but not its subject)
  and, with `same-topic`, the topic's other thoughts that do not answer the question; `trap`
  keeps the twin only (pushing a topic's own thoughts apart hurts matching them to a thread);
  `none` leaves in-batch negatives alone.
- `thread`: a thread's name and description and a member thought (a few per topic); negatives
  from the near-miss twin.
- `summary`: the topic's one-line summary and a member thought, like `thread`.
Questions about things never stored have no positive and give no example.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KINDS = ("question", "thread", "summary")
NEGATIVES = ("same-topic", "trap", "none")
# The early experiment's halves of dev (by topic, near-miss twins kept together): fine-tune on
# one half's questions, measure on the other's.
DEV_HALVES = {
    "a": frozenset(
        {
            "node-memory-leak",
            "hose-leak",
            "pandas-cohort",
            "panda-trip",
            "billing-extraction",
            "spec-decoding-paper",
            "household-budget",
            "marathon-training",
        }
    ),
    "b": frozenset(
        {
            "slow-sql-report",
            "bank-reconciliation",
            "kernel-panic",
            "popcorn-kernels",
            "grant-proposal",
            "kitchen-renovation",
            "deposit-dispute",
            "sabbatical-plan",
        }
    ),
}


@dataclass(frozen=True)
class Example:
    """One anchor with its positive, its hard-negative pool and every id right for it."""

    kind: str
    anchor: str
    positive_id: str
    positive: str
    negatives: tuple[tuple[str, str], ...] = ()
    right: frozenset[str] = field(default_factory=frozenset)


@dataclass
class Split:
    """The parts of one file the examples need, ids prefixed by the file's name."""

    texts: dict[str, str]
    topic_of: dict[str, list[str]]
    by_topic: dict[str, list[str]]
    topics: dict[str, Mapping[str, Any]]
    questions: Sequence[Mapping[str, Any]]


def refuse_held_out(path: Path, dev_half: str | None) -> None:
    """Stop before training on test (never) or on dev (only one half, for the early experiment)."""
    if path.name == "test.json":
        raise SystemExit(f"{path} is the held-out test split; never train on it.")
    if path.name == "dev.json" and not dev_half:
        raise SystemExit(f"{path} is for tuning and measuring; train on it only with --dev-half a|b.")


def read_split(path: Path) -> Split:
    """Load one file; ids get the file stem as a prefix so parts can be combined."""
    data = json.loads(path.read_text())
    return index_split(data, path.stem)


def index_split(data: Mapping[str, Any], prefix: str) -> Split:
    """Index one split's thoughts by id and by topic."""
    texts: dict[str, str] = {}
    topic_of: dict[str, list[str]] = {}
    by_topic: dict[str, list[str]] = {}
    for seq in data["sequences"]:
        seq_topics = [f"{prefix}:{t}" for t in seq["topics"]]
        for thought in seq["thoughts"]:
            tid = f"{prefix}:{thought['id']}"
            texts[tid] = str(thought["thought"])
            topic_of[tid] = seq_topics
            for topic in seq_topics:
                by_topic.setdefault(topic, []).append(tid)
    topics = {f"{prefix}:{t['id']}": t for t in data["topics"]}
    questions = [dict(q, answers=[f"{prefix}:{a}" for a in q["answers"]]) for q in data["questions"]]
    return Split(texts, topic_of, by_topic, topics, questions)


def twins(split: Split, topic: str) -> list[str]:
    """Topics that are near misses of `topic`, in either direction."""
    prefix = topic.split(":", 1)[0]
    out = []
    near = split.topics.get(topic, {}).get("nearMissOf")
    if near and f"{prefix}:{near}" in split.topics:
        out.append(f"{prefix}:{near}")
    for other, info in split.topics.items():
        if info.get("nearMissOf") and f"{prefix}:{info['nearMissOf']}" == topic:
            out.append(other)
    return out


def _pool(split: Split, topics: Iterable[str], exclude: set[str], same_topic: Iterable[str]) -> tuple[str, ...]:
    ids: list[str] = []
    for topic in topics:
        for twin in twins(split, topic):
            ids.extend(split.by_topic.get(twin, []))
    ids.extend(same_topic)
    # dict.fromkeys keeps the first of each id, in order.
    return tuple(t for t in dict.fromkeys(ids) if t not in exclude)


def question_examples(split: Split, negatives: str = "same-topic") -> list[Example]:
    """Each answerable question with each of its answers, hard negatives as `negatives` says."""
    out = []
    for q in split.questions:
        answers = [a for a in q["answers"] if a in split.texts]
        if not answers:
            continue
        right = frozenset(answers)
        topics = sorted({t for a in answers for t in split.topic_of[a]})
        same = [t for topic in topics for t in split.by_topic[topic]] if negatives == "same-topic" else []
        pool = _pool(split, topics, set(right), same) if negatives != "none" else ()
        negs = tuple((t, split.texts[t]) for t in pool)
        for a in answers:
            out.append(Example("question", str(q["query"]), a, split.texts[a], negs, right))
    return out


def _member_examples(split: Split, kind: str, per_topic: int, rng: random.Random, twins_too: bool) -> list[Example]:
    out = []
    for topic, info in sorted(split.topics.items()):
        if kind == "thread":
            thread = info.get("thread")
            if not thread:
                continue
            anchor = f"{thread['name']}: {thread['description']}"
        else:
            anchor = str(info.get("summary") or "")
            if not anchor:
                continue
        members = split.by_topic.get(topic, [])
        if not members:
            continue
        right = frozenset(members)
        pool = _pool(split, [topic], set(right), []) if twins_too else ()
        negs = tuple((t, split.texts[t]) for t in pool)
        for tid in rng.sample(members, min(per_topic, len(members))):
            out.append(Example(kind, anchor, tid, split.texts[tid], negs, right))
    return out


def build_examples(
    splits: Sequence[Split],
    kinds: Sequence[str] = ("question",),
    per_topic: int = 4,
    negatives: str = "same-topic",
    seed: int = 0,
    topic_share: float | None = None,
) -> list[Example]:
    """Every example of the requested kinds over all splits, in a fixed order.

    `topic_share` caps the thread and summary examples at that share of the total (sampled
    with the seed), so topical pairs teach togetherness without drowning the questions.
    """
    unknown = set(kinds) - set(KINDS)
    if unknown:
        raise ValueError(f"unknown pair kinds {sorted(unknown)}; choose from {', '.join(KINDS)}")
    if negatives not in NEGATIVES:
        raise ValueError(f"unknown negatives {negatives!r}; choose from {', '.join(NEGATIVES)}")
    rng = random.Random(seed)
    asked: list[Example] = []
    topical: list[Example] = []
    for split in splits:
        if "question" in kinds:
            asked.extend(question_examples(split, negatives))
        for kind in ("thread", "summary"):
            if kind in kinds:
                topical.extend(_member_examples(split, kind, per_topic, rng, negatives != "none"))
    if topic_share is not None and asked:
        cap = int(topic_share * len(asked) / (1 - topic_share)) if topic_share < 1 else len(topical)
        if len(topical) > cap:
            keep = set(rng.sample(range(len(topical)), cap))
            topical = [ex for i, ex in enumerate(topical) if i in keep]
    return asked + topical


def batches(examples: Sequence[Example], size: int, rng: random.Random) -> list[list[Example]]:
    """Shuffle and cut into batches, keeping two examples with the same positive apart when possible."""
    order = list(examples)
    rng.shuffle(order)
    out: list[list[Example]] = []
    pending = order
    while pending:
        batch: list[Example] = []
        used: set[str] = set()
        later: list[Example] = []
        for ex in pending:
            if len(batch) < size and ex.positive_id not in used:
                batch.append(ex)
                used.add(ex.positive_id)
            else:
                later.append(ex)
        out.append(batch)
        pending = later
    return out


def restrict(split: Split, topics: set[str]) -> Split:
    """Only `topics`: their thoughts, and the questions whose answers all lie in them."""
    texts = {t: x for t, x in split.texts.items() if set(split.topic_of[t]) & topics}
    topic_of = {t: [p for p in split.topic_of[t] if p in topics] for t in texts}
    by_topic = {p: ids for p, ids in split.by_topic.items() if p in topics}
    kept = {p: info for p, info in split.topics.items() if p in topics}
    questions = [q for q in split.questions if q["answers"] and all(a in texts for a in q["answers"])]
    return Split(texts, topic_of, by_topic, kept, questions)
