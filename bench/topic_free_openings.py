"""Openings that name no topic: reasoning scaffolding only. Any suggestion for one is wrong.

Hand-written for related earlier reasoning (docs/related.md) after a probe found "Let me restate
the problem." / "Next, list the constraints." named an unrelated sequence with similarity 1.0.
They were written alongside `library.related.SCAFFOLDING` (the second twenty after its first
draft), so they are not independent of it and are no held-out measure: they show the failure does
not come back. They chose no number: MIN_EVIDENCE and THRESHOLD were chosen on the train and dev
replays' recall and precision. `bench/eval_related.py` writes them, one after another, on top of
each replayed split and reports how many were given a suggestion.
"""

from __future__ import annotations

# (first thought, second thought)
TOPIC_FREE_OPENINGS: tuple[tuple[str, str], ...] = (
    ("Let me restate the problem.", "Next, list the constraints."),
    ("first", "second"),
    ("First, understand what is being asked.", "Second, break it into smaller steps."),
    ("Starting with the basics.", "Let me think about this step by step."),
    ("Okay, let's figure this out.", "What do we know so far?"),
    ("Goal: decide on the best approach.", "Options: consider each alternative and compare pros and cons."),
    ("Step 1: gather the facts.", "Step 2: identify the main question."),
    ("Let me take a step back and look at the big picture.", "The key question is what matters most here."),
    ("Breaking this down into parts.", "Part one: what is the current situation?"),
    ("I need to plan this carefully.", "Start by listing assumptions, then check each one."),
    ("Initial thoughts on the task.", "The plan: outline, evaluate, then conclude."),
    ("Summarize the request first.", "Then identify the open questions and unknowns."),
    ("Let me reason about this carefully.", "Hypothesis first, then verify it against the evidence."),
    ("Thinking it through from the start.", "What would a good outcome look like?"),
    ("Re-reading the question to be sure I understand it.", "Now, the requirements, one at a time."),
    ("Time to weigh the trade-offs.", "Criteria: cost, time, risk."),
    ("Where to begin?", "Probably with the simplest explanation."),
    ("Quick recap before going further.", "Next step: decide what to do."),
    ("Let me analyze the situation.", "Key facts, then the conclusion."),
    ("Approach: work backwards from the desired result.", "Then fill in the intermediate steps."),
    ("Alright, let's get started.", "The first thing to do is clarify the request."),
    ("Let me think.", "Then decide."),
    ("Hmm, interesting.", "Let's dig into it."),
    ("Going to work through this methodically.", "Begin with what we know for certain."),
    ("Understanding the question.", "Breaking down the question into sub-questions."),
    ("Here is my plan.", "1) gather information 2) analyze 3) recommend."),
    ("What is actually being asked here?", "I should clarify the scope before anything else."),
    ("Let me lay out the options.", "Option A, option B, or do nothing."),
    ("Recapping where we are.", "Next I will summarize what remains."),
    ("A few observations first.", "Then a proposal."),
    ("Let me double-check my reasoning.", "Walking through it again, carefully this time."),
    ("To answer this well I need more context.", "Listing what I would need to know."),
    ("So the question is simple.", "The answer may not be."),
    ("Let me write down the known facts.", "And the things I'm unsure about."),
    ("Start from the end goal.", "Work backwards to today."),
    ("Let me frame this properly.", "What does success look like, and how would we measure it?"),
    ("Okay.", "Continuing."),
    ("Step one.", "Step two."),
    ("Initial read of the situation.", "Some quick notes before going deeper."),
    ("Let me organise my thoughts.", "Three things matter here."),
)
