"""The embedder fine-tuning's training examples: pairs, hard negatives, batches, held-out splits."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from bench.finetune.pairs import batches, build_examples, index_split, refuse_held_out, restrict


def _split() -> dict[str, Any]:
    def seq(topic: str, n: int, count: int) -> dict[str, Any]:
        thoughts = [{"id": f"{topic}-{n}.{i}", "thought": f"{topic} step {n}.{i}"} for i in range(1, count + 1)]
        return {"id": f"{topic}-{n}", "topics": [topic], "thoughts": thoughts}

    return {
        "split": "train",
        "topics": [
            {"id": "memory-leak", "summary": "a heap that grows", "thread": {"name": "Leaks", "description": "heap"}},
            {"id": "hose-leak", "summary": "a garden hose", "thread": None, "nearMissOf": "memory-leak"},
            {"id": "tax-return", "summary": "filing taxes", "thread": None},
        ],
        "sequences": [seq("memory-leak", 1, 3), seq("hose-leak", 1, 2), seq("tax-return", 1, 2)],
        "questions": [
            {
                "id": "q1",
                "type": "multi",
                "query": "why the heap grew",
                "answers": ["memory-leak-1.1", "memory-leak-1.2"],
            },
            {"id": "q2", "type": "absent", "query": "a topic never stored", "answers": []},
        ],
    }


def test_each_answer_of_a_question_is_a_pair_with_the_trap_topic_and_other_steps_as_negatives() -> None:
    examples = build_examples([index_split(_split(), "t")])
    assert [(e.anchor, e.positive_id) for e in examples] == [
        ("why the heap grew", "t:memory-leak-1.1"),
        ("why the heap grew", "t:memory-leak-1.2"),
    ]
    negatives = {tid for tid, _ in examples[0].negatives}
    assert negatives == {"t:hose-leak-1.1", "t:hose-leak-1.2", "t:memory-leak-1.3"}
    assert examples[0].right == {"t:memory-leak-1.1", "t:memory-leak-1.2"}


def test_trap_negatives_come_only_from_the_near_miss_twin() -> None:
    examples = build_examples([index_split(_split(), "t")], negatives="trap")
    assert {tid for tid, _ in examples[0].negatives} == {"t:hose-leak-1.1", "t:hose-leak-1.2"}


def test_no_hard_negatives_leaves_in_batch_ones_alone() -> None:
    examples = build_examples([index_split(_split(), "t")], kinds=["question", "thread"], negatives="none")
    assert examples
    assert all(e.negatives == () for e in examples)


def test_topic_share_caps_topical_pairs() -> None:
    split = index_split(_split(), "t")
    uncapped = build_examples([split], kinds=["question", "summary"], per_topic=3)
    capped = build_examples([split], kinds=["question", "summary"], per_topic=3, topic_share=0.3)
    questions = sum(1 for e in uncapped if e.kind == "question")
    topical = [e for e in capped if e.kind == "summary"]
    assert sum(1 for e in uncapped if e.kind == "summary") > len(topical)
    assert len(topical) <= 0.3 * len(capped)
    assert len(capped) == questions + len(topical)


def test_unknown_negatives_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown negatives"):
        build_examples([index_split(_split(), "t")], negatives="all")


def test_thread_and_summary_anchors_pair_with_member_thoughts() -> None:
    examples = build_examples([index_split(_split(), "t")], kinds=["thread", "summary"], per_topic=2)
    threads = [e for e in examples if e.kind == "thread"]
    assert {e.anchor for e in threads} == {"Leaks: heap"}
    assert len(threads) == 2
    assert all(e.positive_id.startswith("t:memory-leak") for e in threads)
    assert len([e for e in examples if e.kind == "summary"]) == 2 + 2 + 2


def test_an_unknown_pair_kind_is_named() -> None:
    with pytest.raises(ValueError, match="unknown pair kinds \\['answers'\\]"):
        build_examples([index_split(_split(), "t")], kinds=["answers"])


def test_restricting_to_topics_drops_other_thoughts_and_questions() -> None:
    split = restrict(index_split(_split(), "t"), {"t:hose-leak", "t:tax-return"})
    assert build_examples([split]) == []
    assert set(split.texts) == {"t:hose-leak-1.1", "t:hose-leak-1.2", "t:tax-return-1.1", "t:tax-return-1.2"}


def test_a_batch_never_holds_the_same_positive_twice() -> None:
    examples = build_examples([index_split(_split(), "t")], kinds=["question", "summary"], per_topic=3)
    doubled = examples + examples
    for batch in batches(doubled, 4, random.Random(1)):
        ids = [e.positive_id for e in batch]
        assert len(ids) == len(set(ids))
    assert sum(len(b) for b in batches(doubled, 4, random.Random(1))) == len(doubled)


def test_training_on_test_or_on_all_of_dev_is_refused() -> None:
    with pytest.raises(SystemExit, match="never train on it"):
        refuse_held_out(Path("bench/data/reasoning/test.json"), None)
    with pytest.raises(SystemExit, match="--dev-half"):
        refuse_held_out(Path("bench/data/reasoning/dev.json"), None)
    refuse_held_out(Path("bench/data/reasoning/dev.json"), "a")
    refuse_held_out(Path("bench/data/reasoning/train.json"), None)
