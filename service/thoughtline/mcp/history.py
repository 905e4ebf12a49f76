"""`get_thought_history`'s result: the library's page as structured content plus a readable transcript.

The paging itself (cursors, page assembly) is `library/history.py`; the JSON is `wire/history.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import apsw

from thoughtline.domain.arguments import HistoryInput
from thoughtline.domain.wording import counted
from thoughtline.library import history
from thoughtline.wire.history import history_json


@dataclass(frozen=True)
class HistoryPage:
    """One page of history: structured content and the readable transcript."""

    structured: dict[str, Any]
    text: str


def read_page(conn: apsw.Connection, inp: HistoryInput) -> HistoryPage:
    """Read one page (inside a read transaction) and render it."""
    structured = history_json(history.page(conn, inp))
    return HistoryPage(
        structured=structured,
        text=render_transcript(structured["sequence"], structured["thoughts"], structured["nextCursor"]),
    )


def render_transcript(sequence: dict[str, Any], thoughts: list[dict[str, Any]], next_cursor: str | None) -> str:
    """A readable transcript: title, status, branch list, one block per thought."""
    lines = [
        f"{sequence['title']}",
        f"Sequence {sequence['sequenceId']} · {sequence['status']} · "
        + (f"kind: {sequence['kind']} · " if sequence.get("kind") else "")
        + counted(sequence["thoughtHistoryLength"], "thought"),
    ]
    if sequence.get("parentSequenceId"):
        gone = " (deleted)" if sequence.get("parentDeleted") else ""
        lines.append(f"Sub-agent of {sequence['parentSequenceId']}{gone}")
    children = sequence.get("childSequenceCount", 0)
    if children:
        shown = len(sequence["childSequenceIds"])
        more = f" (the first {shown} are listed in childSequenceIds)" if shown < children else ""
        lines.append(f"Sub-agent sequences: {children}{more}")
    joined, named = sequence.get("threadCount", 0), len(sequence.get("threads", []))
    if joined > named:
        lines.append(f"In {joined} threads (the first {named} by name are listed in threads)")
    for b in sequence["branches"]:
        parent = f"branch {b['parentBranchId']}" if b["parentBranchId"] else "the main path"
        lines.append(f"Branch {b['branchId']}: from thought {b['branchFromThought']} of {parent}")
    for t in thoughts:
        tags = [f"#{t['index']}", f"Thought {t['thoughtNumber']}/{t['totalThoughts']}"]
        if "branchId" in t:
            tags.append(f"branch {t['branchId']}")
        if t.get("isRevision"):
            tags.append(f"revises {t['revisesThought']}")
        if not t["nextThoughtNeeded"]:
            tags.append("final")
        if "event" in t:
            tags.append(t["event"])
        lines += ["", " · ".join(tags), t["thought"]]
    if next_cursor:
        lines += [
            "",
            f"More thoughts follow: call get_thought_history with sequenceId {sequence['sequenceId']} and cursor "
            f"{next_cursor} to continue (the cursor keeps this page's order and branchId).",
        ]
    return "\n".join(lines)
