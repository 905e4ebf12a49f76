"""The text of an accepted `sequentialthinking` write: its headline, its `Note:` lines, the whole result.

Pure functions of the call and the `Plan` that `domain/thinking.py` made for it (SPEC §2.1's text result).
"""

from __future__ import annotations

from collections.abc import Sequence

from thoughtline.domain.arguments import ThoughtInput
from thoughtline.domain.thinking import Plan, scope_name


def headline(inp: ThoughtInput, plan: Plan) -> str:
    """`Thought 3/5`, `Branch alt from thought 2 · 3/6`, `Revision of thought 1 · 4/6`, …"""
    parts: list[str] = []
    if plan.new_branch is not None:
        # A fork from inside another branch names it: "from thought 2" alone reads as the main path's 2.
        parent = plan.new_branch.parent_name
        of = f" of branch {parent}" if parent is not None else ""
        parts.append(f"Branch {plan.new_branch.name} from thought {plan.new_branch.from_thought}{of}")
    elif plan.branch is not None:
        parts.append(f"Branch {plan.branch.name}")
    if inp.revises_thought is not None:
        parts.append(f"Revision of thought {inp.revises_thought}")
    counter = f"{inp.thought_number}/{plan.total_thoughts}"
    return " · ".join([*parts, counter]) if parts else f"Thought {counter}"


def notes(inp: ThoughtInput, plan: Plan) -> list[str]:
    """The `Note:` lines for accepted-but-flagged writes."""
    lines: list[str] = []
    if plan.reopened:
        lines.append(f"Note: this sequence was {plan.left_status}; this thought reopens it (status: active).")
    elif plan.left_status == "paused" and plan.status == "active":
        lines.append("Note: this sequence was paused; this thought makes it active again.")
    elif plan.left_status is not None:
        lines.append(f"Note: this sequence was {plan.left_status}; this final thought marks it {plan.status}.")
    if plan.number_reused:
        lines.append(
            f"Note: thought {inp.thought_number} already exists on {scope_name(plan.branch_name)}; both are kept "
            f"and later references to {inp.thought_number} mean this newer one."
        )
    if plan.total_raised:
        lines.append(
            f"Note: thoughtNumber {inp.thought_number} was above totalThoughts {inp.total_thoughts}; "
            f"totalThoughts is now {plan.total_thoughts}."
        )
    return lines


def render_write(inp: ThoughtInput, plan: Plan, sequence_id: str, count: int, extra_notes: Sequence[str] = ()) -> str:
    """The human-readable result of an accepted thought; `extra_notes` are decided outside planning."""
    head = [headline(inp, plan), *extra_notes, *notes(inp, plan)]
    stored = f"{count} thought{'s' if count != 1 else ''} stored"
    return "\n".join([*head, "", inp.thought, "", f"Sequence: {sequence_id} · {stored}"])
