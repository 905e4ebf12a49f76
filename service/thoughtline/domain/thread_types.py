"""Thread types (SPEC §5.3): the four kinds a thread can be, and the one derived from its events.

A user may set a thread's type; until then it is derived here, a pure function of which event
kinds its member thoughts carry, so it changes as the thread's reasoning does:

- `case`: a resolution together with a blocker or a setback — a problem worked to its end (an
  incident, an investigation).
- `work`: a decision or a milestone — an effort that builds something and takes steps.
- `topic`: everything else (observations, questions and answers, conclusions only, or nothing yet).

`relationship` (a recurring relation between people, behaviours or preferences) has no event that
signals it, so it is never derived: only a user sets it. Earlier rules win: a case that also
recorded decisions is still a case.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Literal, get_args

ThreadType = Literal["work", "case", "relationship", "topic"]
THREAD_TYPES: tuple[str, ...] = get_args(ThreadType)
# What a user may set: a type, or `auto` to have it derived from the events again.
TypeSetting = Literal[ThreadType, "auto"]
TYPE_SETTINGS: tuple[str, ...] = (*THREAD_TYPES, "auto")
_TYPE_OF: dict[str, ThreadType] = {kind: kind for kind in get_args(ThreadType)}

# The event kinds the derivation reads; storage fetches only these.
CASE_PROBLEMS = frozenset({"blocker", "setback"})
WORK_STEPS = frozenset({"decision", "milestone"})
TYPE_EVENT_KINDS = CASE_PROBLEMS | WORK_STEPS | {"resolution"}


def derive_type(kinds: Collection[str]) -> ThreadType:
    """The type of a thread whose member thoughts carry these event kinds (any order, repeats fine)."""
    present = set(kinds)
    if "resolution" in present and present & CASE_PROBLEMS:
        return "case"
    if present & WORK_STEPS:
        return "work"
    return "topic"


def thread_type(stored: str | None, kinds: Collection[str]) -> tuple[ThreadType, bool]:
    """(type, set by the user): the stored type when the user set one, else the derived one."""
    if stored is not None and stored in _TYPE_OF:
        return _TYPE_OF[stored], True
    return derive_type(kinds), False
