"""Writing the thinking model: appending a thought to its sequence, and deleting sequences.

Each public function takes an open apsw connection that is already inside a transaction (the
writer's group commit) and returns plain dataclasses. What a client sees of a write (camelCase
fields, prose) is the MCP layer's to render from `Written`. Reading a sequence's header and
branches is `storage/sequence_reads.py`'s; requestId replays are `storage/idempotency.py`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import apsw

from thoughtline.domain.arguments import ThoughtInput
from thoughtline.domain.canonical import Continuation, explain_refusal
from thoughtline.domain.sequence_labels import check_kind, check_parent
from thoughtline.domain.thinking import Plan, SequenceState, ThoughtRef, listed_branches, make_title, plan_thought
from thoughtline.domain.thread_names import name_key
from thoughtline.errors import DomainError
from thoughtline.storage import canonical
from thoughtline.storage.idempotency import Replayed, record_request, replay
from thoughtline.storage.rows import rows
from thoughtline.storage.sequence_reads import SequenceRow, get_branches, get_sequence, make_finder, parent_of

FLAG_REOPENED = 1
FLAG_NUMBER_REUSED = 2
# `isRevision: false` was sent: `is_revision` alone can't tell it from an omitted one (SPEC §2.2).
FLAG_SENT_NOT_REVISION = 4


@dataclass(frozen=True)
class Written:
    """What one accepted thought did: where it landed, the plan it followed, how the call was read.

    `thought_id` is the stored thought's id; `created` says this call started the sequence;
    `count` is the sequence's stored thoughts now (this one included); `branches` are the branch
    names a result lists (`listed_branches`: the one written and the newest, in creation order) and
    `branch_count` how many it has; `continuation` is the canonical-style decision for a call without
    sequenceId (None when one was sent).
    """

    sequence_id: str
    sequence_key: int
    thought_id: int
    created: bool
    plan: Plan
    branches: tuple[str, ...]
    count: int
    continuation: Continuation | None
    branch_count: int = 0


# What a caller keeps for a retry of a call with requestId: it must be JSON (stored in `requests`).
Remember = Callable[[Written], Mapping[str, Any]]


def _thread_ids(conn: apsw.Connection, names: Iterable[str], seq_rowid: int | None) -> list[int]:
    """The threads a write names, refusing unknown ones and archived ones it would join.

    An archived thread refuses new membership only (SPEC §5.3): a sequence already its member
    (`seq_rowid`, None for a new sequence) may keep naming it, as agents send `threads` on every call.
    """
    ids: list[int] = []
    for name in names:
        found = rows(conn, "SELECT id, name, status FROM threads WHERE name_key = ?", (name_key(name),))
        if not found:
            raise DomainError(
                "thread_not_found",
                f"thread '{name}' does not exist; threads are never created implicitly — "
                "create it first with configure_thread, or drop it from 'threads'.",
            )
        if found[0][2] == "archived" and not _is_member(conn, found[0][0], seq_rowid):
            raise DomainError(
                "thread_archived",
                f"thread '{found[0][1]}' is archived and takes no new sequences; unarchive it with "
                "configure_thread, or drop it from 'threads'.",
            )
        ids.append(found[0][0])
    return ids


def _is_member(conn: apsw.Connection, thread: int, seq_rowid: int | None) -> bool:
    return seq_rowid is not None and bool(
        rows(conn, "SELECT 1 FROM thread_members WHERE thread = ? AND sequence_id = ?", (thread, seq_rowid))
    )


def append_thought(
    conn: apsw.Connection,
    inp: ThoughtInput,
    now_ms: int,
    new_public_id: str,
    origin: str | None = None,
    *,
    continue_open: bool = True,
    remember: Remember | None = None,
) -> Written | Replayed:
    """Store one thought (inside the caller's transaction) and say what was written.

    `origin` is the caller's OAuth client id (None for the static token): a call without
    sequenceId continues only a sequence the same client started (SPEC §2.1, canonical-style calls),
    and none when `continue_open` is off (the library-off strict model). With a requestId, what
    `remember` makes of the result is stored in the same transaction and a retry gets it back as
    `Replayed` (without `remember`, an empty record).
    """
    replayed = replay(conn, inp, origin)
    if replayed is not None:
        return Replayed(replayed)
    seq: SequenceRow | None = None
    state: SequenceState | None = None
    guess: Continuation | None = None
    if inp.sequence_id is None:
        guess = canonical.decide(conn, inp.thought_number, origin, now_ms, strict=not continue_open)
        seq = get_sequence(conn, guess.sequence_id) if guess.sequence_id is not None else None
    else:
        seq = get_sequence(conn, inp.sequence_id)
        if seq is None:
            raise DomainError(
                "sequence_not_found",
                f"no sequence {inp.sequence_id} in your store; omit sequenceId to start a new one.",
            )
    if seq is not None:
        state = SequenceState(seq.public_id, seq.status, seq.thought_count, get_branches(conn, seq.rowid))
    # A repeat of the stored parent is accepted first: the link is set once, and a parent deleted
    # since must not lock its sub-agent out of the calls that keep sending the id it recorded.
    repeats_parent = seq is not None and inp.parent_sequence_id == seq.parent_public_id
    if inp.parent_sequence_id is not None and not repeats_parent:
        if get_sequence(conn, inp.parent_sequence_id) is None:
            raise DomainError(
                "sequence_not_found",
                f"parentSequenceId {inp.parent_sequence_id} is not a sequence in your store; "
                "pass the id of the parent agent's sequence or omit it.",
            )
        check_parent(
            seq.public_id if seq is not None else None,
            seq.parent_public_id if seq is not None else None,
            inp.parent_sequence_id,
            lambda public_id: parent_of(conn, public_id),
        )
    if inp.kind is not None and seq is not None:
        check_kind(seq.public_id, seq.kind, inp.kind)
    thread_ids = _thread_ids(conn, inp.threads, seq.rowid if seq is not None else None)
    finder = make_finder(conn, seq.rowid) if seq is not None else _no_thoughts
    try:
        plan = plan_thought(inp, state, finder)
    except DomainError as exc:
        if guess is None or state is not None:
            raise
        raise DomainError(exc.code, explain_refusal(guess, exc.message)) from None

    if seq is None:
        public_id = new_public_id
        conn.execute(
            "INSERT INTO sequences(public_id, title, status, total_thoughts, last_thought_number, thought_count, "
            "parent_public_id, kind, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 0, ?, ?, ?, ?)",
            (
                public_id,
                make_title(inp.thought),
                plan.status,
                plan.total_thoughts,
                inp.thought_number,
                inp.parent_sequence_id,
                inp.kind,
                now_ms,
                now_ms,
            ),
        )
        seq_rowid = conn.last_insert_rowid()
        canonical.record_origin(conn, seq_rowid, origin)
        count = 0
    else:
        public_id, seq_rowid, count = seq.public_id, seq.rowid, seq.thought_count
        # Briefings, `since` and the event reducer read a sequence in time order: a server clock
        # stepped back (NTP) must not date a thought before the one it follows.
        now_ms = max(now_ms, seq.updated_at)

    branch_key = _write_branch(conn, seq_rowid, plan, now_ms)
    position = count + 1
    flags = (FLAG_REOPENED if plan.reopened else 0) | (FLAG_NUMBER_REUSED if plan.number_reused else 0)
    flags |= FLAG_SENT_NOT_REVISION if inp.is_revision is False else 0
    conn.execute(
        "INSERT INTO thoughts(sequence_id, position, branch, number, total, next_needed, body, is_revision, "
        "revises_number, revises_position, needs_more, flags, created_at, sent_branch_from_thought, "
        "sent_branch_from_branch_id, event) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            seq_rowid,
            position,
            branch_key,
            inp.thought_number,
            plan.total_thoughts,
            int(inp.next_thought_needed),
            inp.thought,
            int(bool(inp.is_revision)),
            inp.revises_thought,
            plan.revises.position if plan.revises else None,
            None if inp.needs_more_thoughts is None else int(inp.needs_more_thoughts),
            flags,
            now_ms,
            inp.branch_from_thought,
            inp.branch_from_branch_id,
            inp.event,
        ),
    )
    thought_id = conn.last_insert_rowid()
    # A different parent or kind was refused above (`check_parent`, `check_kind`): COALESCE only
    # fills one not set yet.
    updates = "parent_public_id = COALESCE(parent_public_id, ?), kind = COALESCE(kind, ?), "
    conn.execute(
        f"UPDATE sequences SET status = ?, total_thoughts = ?, last_thought_number = ?, thought_count = ?, "
        f"{updates}updated_at = ? WHERE id = ?",
        (
            plan.status,
            plan.total_thoughts,
            inp.thought_number,
            position,
            inp.parent_sequence_id,
            inp.kind,
            now_ms,
            seq_rowid,
        ),
    )
    for thread in thread_ids:
        conn.execute(
            "INSERT INTO thread_members(thread, sequence_id, added_by, created_at) "
            "VALUES (?, ?, 'agent', ?) ON CONFLICT DO NOTHING",
            (thread, seq_rowid, now_ms),
        )
        # A member is never proposed (SPEC §5.3).
        conn.execute("DELETE FROM thread_proposals WHERE thread = ? AND sequence_id = ?", (thread, seq_rowid))
    if plan.status == "completed":
        # Thread proposals for this sequence are matched after commit, never here (SPEC §5.3).
        conn.execute(
            "INSERT INTO thread_match_queue(sequence_id, queued_at) VALUES (?, ?) "
            "ON CONFLICT(sequence_id) DO UPDATE SET queued_at = excluded.queued_at",
            (seq_rowid, now_ms),
        )
    known = list(state.branches) if state is not None else []
    names = [*known, plan.new_branch.name] if plan.new_branch is not None else known
    listed = listed_branches(names, plan.branch_name)
    written = Written(public_id, seq_rowid, thought_id, seq is None, plan, listed, position, guess, len(names))
    if inp.request_id is not None:
        record = dict(remember(written)) if remember is not None else {}
        record_request(conn, inp, origin, seq_rowid, record, now_ms)
    return written


def _no_thoughts(branch: int | None, number: int, max_position: int | None) -> ThoughtRef | None:
    return None


def _write_branch(conn: apsw.Connection, seq_rowid: int, plan: Plan, now_ms: int) -> int | None:
    if plan.new_branch is None:
        return plan.branch.key if plan.branch is not None else None
    nb = plan.new_branch
    conn.execute(
        "INSERT INTO branches(sequence_id, name, parent_branch, from_thought, fork_position, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (seq_rowid, nb.name, nb.parent, nb.from_thought, nb.fork_position, now_ms),
    )
    return conn.last_insert_rowid()


def delete_sequence(conn: apsw.Connection, public_id: str) -> int | None:
    """Delete a sequence and everything hanging off it; returns its thought count, or None if absent."""
    seq = get_sequence(conn, public_id)
    if seq is None:
        return None
    # Branches, thoughts, idempotency keys, thread memberships and search rows cascade.
    conn.execute("DELETE FROM sequences WHERE id = ?", (seq.rowid,))
    return seq.thought_count


def delete_idle(conn: apsw.Connection, cutoff_ms: int) -> int:
    """Retention: delete sequences not updated since `cutoff_ms`; returns how many."""
    ids = [row[0] for row in conn.execute("SELECT public_id FROM sequences WHERE updated_at < ?", (cutoff_ms,))]
    for public_id in ids:
        delete_sequence(conn, public_id)
    return len(ids)
