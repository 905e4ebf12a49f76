"""The rules an exported thread record keeps: threads, their members and rejections, the proposal counter.

Functions of one record's `Fields`; `RecordChecker` (`domain/export_rules.py`) passes what it has
read so far (the thread file ids, the sequence a membership names). Messages never quote thought text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from thoughtline.domain.arguments import MAX_PROPOSAL_ID, PROPOSAL_ID_DIGITS, SEQUENCE_ID_RE
from thoughtline.domain.export_tallies import SequenceTally
from thoughtline.domain.record_fields import MAX_ID, Fields, is_id, kind_of
from thoughtline.domain.thread_names import MAX_DESCRIPTION, check_name
from thoughtline.domain.thread_types import THREAD_TYPES
from thoughtline.errors import DomainError


def check_thread(f: Fields, threads: dict[int, int]) -> dict[str, Any]:
    """The columns of a thread record; its file id joins `threads` (read so far, with its `created_at`)."""
    rowid = f.ident("id")
    if rowid in threads:
        raise f.problem("appears twice in the file")
    threads[rowid] = 0
    try:
        name = check_name(f.raw("name"))
    except DomainError as exc:
        raise f.problem(exc.message) from None
    description = str(f.text("description", MAX_DESCRIPTION, keep="\t\n"))
    created = threads[rowid] = f.time("created_at")
    # The type a user set (null: derived from the events); exports made before types lack it.
    kind = f.raw("thread_type", required=False)
    if kind is not None and kind not in THREAD_TYPES:
        raise f.problem(f"'thread_type' must be one of {', '.join(THREAD_TYPES)} or null, got {kind_of(kind)}")
    return {
        "id": rowid,
        "name": name,
        "description": description.strip(),
        "status": f.choice("status", ("active", "archived")),
        "created_at": created,
        "updated_at": f.not_before("updated_at", f.time("updated_at"), created, "its 'created_at'"),
        "type": kind,
    }


def check_membership(
    f: Fields, threads: dict[int, int], own_sequence: Callable[[Fields], int], tally: Callable[[int], SequenceTally]
) -> dict[str, Any]:
    """The columns of a thread_member or thread_rejection record: an earlier thread and sequence.

    Its time is not before either of them: a pin, an agent's `threads` or a rejection needs both.
    """
    thread = f.raw("thread")
    if not is_id(thread) or thread not in threads:
        raise f.problem(f"refers to thread record {kind_of(thread)}, which is not earlier in the file")
    seq = own_sequence(f)
    public_id = tally(seq).public_id
    named = f.rec.get("sequence_public_id")
    # The export writes both; a hand edit that changed one would file the membership under a
    # sequence nobody meant.
    if named is not None and named != public_id:
        raise f.problem(
            f"'sequence_public_id' is {_shown(named)} but sequence record {seq} is "
            f"{public_id}; make them name the same sequence"
        )
    out: dict[str, Any] = {"thread": thread, "sequence_id": seq}
    if f.rec.get("type") == "thread_member":
        out["added_by"] = f.choice("added_by", ("agent", "user", "review"))
    key = "created_at" if f.rec.get("type") == "thread_member" else "rejected_at"
    seq_created = tally(seq).created
    floor, what = (
        (threads[thread], "its thread's 'created_at'")
        if threads[thread] >= seq_created
        else (seq_created, "its sequence's 'created_at'")
    )
    out[key] = f.not_before(key, f.time(key), floor, what)
    return out


def check_proposal_ids(f: Fields) -> dict[str, Any]:
    """The proposal counter record: how many proposal ids the store has issued."""
    issued = int(f.integer("issued", 0, MAX_ID) or 0)
    # The store's next proposal id is issued + 1; past MAX_PROPOSAL_ID no tool could review it.
    if issued >= MAX_PROPOSAL_ID:
        raise f.problem(
            f"'issued' is {issued}, so the next proposal id would have more than {PROPOSAL_ID_DIGITS} digits, "
            f"which review_proposals cannot take; use at most {MAX_PROPOSAL_ID - 1}"
        )
    return {"issued": issued}


def _shown(value: object) -> str:
    """A sequence id as it is (ids are not thought text); anything else by its kind."""
    return value if isinstance(value, str) and SEQUENCE_ID_RE.match(value) else kind_of(value)
