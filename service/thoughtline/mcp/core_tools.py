"""The three core tools (`sequentialthinking`, `get_thought_history`, `delete_thought_sequence`):
their declarations and the thin handlers behind them.

Handlers parse arguments (`domain/arguments.py`), run one store function in the writer or a read
snapshot, and shape the result; domain rules live in `domain/thinking.py`, SQL in `storage/thoughts.py`.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from typing import Any

import apsw
import mcp_types as types

from thoughtline.clock import now_ms
from thoughtline.domain import arguments
from thoughtline.domain.arguments import MAX_BRANCHES, ThoughtInput
from thoughtline.domain.write_text import render_write
from thoughtline.errors import DomainError
from thoughtline.identity import current_principal
from thoughtline.library.related_open import Related, RelatedOnOpen
from thoughtline.mcp import history
from thoughtline.mcp.schemas import (
    DELETE_INPUT,
    DELETE_OUTPUT,
    HISTORY_INPUT,
    HISTORY_OUTPUT,
    THOUGHT_INPUT,
    THOUGHT_INPUT_NO_LIBRARY,
    THOUGHT_OUTPUT,
    THOUGHT_OUTPUT_NO_RELATED,
)
from thoughtline.mcp.tools import Handler, ToolContext, ToolOutput, ToolSpec
from thoughtline.storage import thoughts as store
from thoughtline.storage.idempotency import Replayed
from thoughtline.storage.related import Card


def new_sequence_id() -> str:
    """`seq_` + 128 random bits: unguessable, so holding the id is the capability to read it."""
    return "seq_" + secrets.token_hex(16)


def render_written(inp: ThoughtInput, written: store.Written, related: Sequence[Related] = ()) -> ToolOutput:
    """The wire shape of an accepted thought (SPEC §2.1), with related earlier reasoning when found (§5.4)."""
    plan = written.plan
    structured: dict[str, Any] = {
        "sequenceId": written.sequence_id,
        "thoughtNumber": inp.thought_number,
        "totalThoughts": plan.total_thoughts,
        "nextThoughtNeeded": inp.next_thought_needed,
        "branches": list(written.branches),
        "thoughtHistoryLength": written.count,
    }
    if written.branch_count > len(written.branches):
        structured["branchCount"] = written.branch_count
    if plan.branch_name is not None:
        structured["branchId"] = plan.branch_name
    if plan.reopened:
        structured["reopened"] = True
    if plan.number_reused:
        structured["thoughtNumberReused"] = True
    if plan.total_raised:
        structured["totalThoughtsRaised"] = True
    guess = written.continuation
    if guess is not None and guess.continued:
        structured["continued"] = True
    notes = [guess.note] if guess is not None and guess.note else []
    if related:
        structured["related"] = [
            {
                "sequenceId": r.sequence_id,
                "title": r.title,
                "status": r.status,
                "updatedAt": r.updated_at,
                "snippet": r.snippet,
                "similarity": r.similarity,
            }
            for r in related
        ]
        notes.append(related_line(related))
    return ToolOutput(text=render_write(inp, plan, written.sequence_id, written.count, notes), structured=structured)


RELATED_TITLE_CHARS = 80


def related_line(related: Sequence[Related]) -> str:
    """One line naming each suggestion by title and sequenceId, and how to read it."""
    named = []
    for r in related:
        title = r.title if len(r.title) <= RELATED_TITLE_CHARS else r.title[: RELATED_TITLE_CHARS - 1].rstrip() + "…"
        named.append(f'"{title}" ({r.sequence_id})')
    them = "it" if len(named) == 1 else "them"
    return f"Related earlier reasoning: {', '.join(named)}; read {them} with get_thought_history."


def _think_handler(library: bool, related: RelatedOnOpen | None) -> Handler:
    # With the library off only a held sequenceId reaches a sequence (SPEC §5), so a call without
    # one never continues an open sequence: it starts a new one and says so.
    async def think(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        inp = arguments.parse_thought(args)
        at = now_ms(ctx.clock)
        # Only a call without sequenceId can start a sequence (with one, an unknown id is refused).
        seq_id = new_sequence_id() if inp.sequence_id is None else ""
        origin = current_principal().client_id  # canonical-style calls continue only this client's sequences

        def remember(written: store.Written) -> dict[str, Any]:
            # A retry gets exactly what the original call answered (without suggestions, which
            # come after the commit).
            out = render_written(inp, written)
            return {"text": out.text, "structured": out.structured}

        # Picked before the write from the index (no read); the write reads their cards in its
        # own transaction, so a second thought pays no extra round trip (library/related_open.py).
        prepared = related.prepare(ctx.store, inp.sequence_id, inp.thought_number, inp.thought) if related else None

        def write(conn: apsw.Connection) -> tuple[store.Written | Replayed, dict[int, Card] | None]:
            written = store.append_thought(conn, inp, at, seq_id, origin, continue_open=library, remember=remember)
            return written, RelatedOnOpen.read_cards(conn, prepared, written)

        try:
            result, cards = await ctx.store.write(write)
        except DomainError as refused:
            if library:
                raise
            raise _without_library(refused) from None
        if isinstance(result, Replayed):
            return ToolOutput(text=result.recorded["text"], structured=result.recorded["structured"])
        found: list[Related] = []
        if related is not None:
            found = await related.after_write(ctx.store, result, inp.thought, prepared, cards)
        return render_written(inp, result, found)

    return think


# The thread refusals name configure_thread as the fix; with the library off that tool is not
# registered, so the only fix left is to drop the names.
THREADS_OFF = "threads are off on this server (THOUGHTLINE_LIBRARY=off); drop 'threads' from the call."


def _without_library(refused: DomainError) -> DomainError:
    """A thread refusal reworded for a server without the thread tools; any other refusal as it is.

    The fix is the part after the message's last '; ' (a thread name may hold one of its own).
    """
    if refused.code not in ("thread_not_found", "thread_archived"):
        return refused
    return DomainError(refused.code, f"{refused.message.rsplit('; ', 1)[0]}; {THREADS_OFF}")


async def _history(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
    inp = arguments.parse_history(args)
    page = await ctx.store.read(lambda conn: history.read_page(conn, inp))
    return ToolOutput(text=page.text, structured=page.structured)


async def _delete(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
    inp = arguments.parse_delete(args)
    count = await ctx.store.write(lambda conn: store.delete_sequence(conn, inp.sequence_id))
    if count is None:
        text = f"No sequence {inp.sequence_id} in your store; nothing was deleted."
    else:
        text = f"Deleted sequence {inp.sequence_id} and its {count} thought{'s' if count != 1 else ''}."
    structured = {"sequenceId": inp.sequence_id, "deleted": count is not None, "deletedThoughts": count or 0}
    return ToolOutput(text=text, structured=structured)


THINK_DESCRIPTION = f"""Record one step of step-by-step reasoning; every step is stored durably before this returns.

Use it for problems that need planning, revision or exploring alternatives. Call it once per thought:
- Start a sequence without sequenceId; the result gives you one (seq_…). Pass it on every later call.
- thoughtNumber counts up from 1; totalThoughts is your current estimate and may change (a thoughtNumber
  above it raises it). Set nextThoughtNeeded to false on the final thought.
- Revise: isRevision: true with revisesThought: N.
- Branch: branchId + branchFromThought: N forks from the main path; add branchFromBranchId to fork from
  inside another branch. Numbers are scoped to their branch; keep passing branchId on the branch's later steps.
  A sequence holds at most {MAX_BRANCHES} branches.
- Pass a new requestId (any unique string) on every call and reuse it to retry: the same id and arguments
  return the original result without writing again, so a retry after an error or a lost answer is exact.
Read a sequence back with get_thought_history."""
# Said only where the server suggests related earlier reasoning (library on, THOUGHTLINE_RELATED on).
RELATED_NOTE = """ On a new sequence's second thought the result may name
earlier sequences of yours on the same problem (`related`): read them before repeating their work."""

HISTORY_DESCRIPTION = """Read back a stored reasoning sequence, oldest first by default, one page at a time.

Pass the sequenceId from sequentialthinking. Follow nextCursor until it is null to read everything: a
cursor keeps the order and branchId of the call that returned it, so sequenceId and cursor are enough
(an order or branchId sent with it must be the same).
branchId: 'main' for the main path only, or a branch's id for that branch's own thoughts."""

DELETE_DESCRIPTION = """Permanently delete a reasoning sequence: its thoughts, branches and search data.

Needs confirm: true. Deleting an unknown id reports deleted: false."""


def _declare(
    name: str,
    title: str,
    description: str,
    schemas: tuple[dict[str, Any], dict[str, Any]],
    hints: tuple[bool, bool, bool],
    meta: dict[str, Any] | None = None,
) -> types.Tool:
    """A tool declaration; `hints` are (read-only, destructive, idempotent). None of ours reach outside."""
    read_only, destructive, idempotent = hints
    return types.Tool(
        name=name,
        title=title,
        description=description,
        input_schema=schemas[0],
        output_schema=schemas[1],
        annotations=types.ToolAnnotations(
            title=title,
            read_only_hint=read_only,
            destructive_hint=destructive,
            idempotent_hint=idempotent,
            open_world_hint=False,
        ),
        _meta=meta,
    )


def core_tools(
    ui_meta: Mapping[str, Any] | None = None, *, library: bool = True, related: RelatedOnOpen | None = None
) -> list[ToolSpec]:
    """The three thinking tools; `ui_meta` links the write and history tools to the MCP App.

    `library` off (THOUGHTLINE_LIBRARY=off): calls without sequenceId never continue a sequence,
    and nothing is suggested. `related` suggests earlier sequences on a new one's second thought.
    """
    meta = dict(ui_meta) if ui_meta else None
    related = related if library else None
    return [
        ToolSpec(
            _declare(
                "sequentialthinking",
                "Sequential thinking",
                THINK_DESCRIPTION + (RELATED_NOTE if related is not None else ""),
                (
                    THOUGHT_INPUT if library else THOUGHT_INPUT_NO_LIBRARY,
                    THOUGHT_OUTPUT if related is not None else THOUGHT_OUTPUT_NO_RELATED,
                ),
                (False, False, False),
                meta,
            ),
            _think_handler(library, related),
        ),
        ToolSpec(
            _declare(
                "get_thought_history",
                "Get thought history",
                HISTORY_DESCRIPTION,
                (HISTORY_INPUT, HISTORY_OUTPUT),
                (True, False, True),
                meta,
            ),
            _history,
        ),
        ToolSpec(
            _declare(
                "delete_thought_sequence",
                "Delete thought sequence",
                DELETE_DESCRIPTION,
                (DELETE_INPUT, DELETE_OUTPUT),
                (False, True, True),
            ),
            _delete,
        ),
    ]
