"""The `review_proposals` handler (SPEC §5.3): list, accept and reject thread proposals.

A thin adapter in the shape of `thread_tools.py`. `list` first runs `match_pending`, so a list
right after a completing write already holds its proposals; accept and reject are one write
transaction each. Cursors are signed with the store's own secret, like history's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import apsw
from itsdangerous import BadSignature, URLSafeSerializer

from thoughtline.clock import now_ms
from thoughtline.domain.arguments import coerce_int, coerce_str, reject_unknown
from thoughtline.domain.thread_names import check_name
from thoughtline.errors import DomainError, invalid
from thoughtline.library.search import make_snippet
from thoughtline.mcp.proposal_schemas import DEFAULT_LIMIT, MAX_LIMIT, REVIEW_ACTIONS, review_tool
from thoughtline.mcp.tools import ToolContext, ToolOutput, ToolSpec
from thoughtline.storage import proposals as proposal_store
from thoughtline.storage import threads as thread_store
from thoughtline.storage.thoughts import cursor_secret, iso

if TYPE_CHECKING:
    from thoughtline.library.embed import Embedder
    from thoughtline.library.proposals import Vector

_SALT = "thoughtline.mcp.proposals.v1"
_PREFIX = "prp_"
_ACTION_FIELDS = {
    "list": frozenset({"action", "thread", "cursor", "limit"}),
    "accept": frozenset({"action", "proposalId"}),
    "reject": frozenset({"action", "proposalId"}),
}
EVIDENCE_CHARS = 200


def proposal_id(rowid: int) -> str:
    """The public id of a proposal row."""
    return f"{_PREFIX}{rowid}"


def _parse_id(args: Mapping[str, Any]) -> int:
    raw = coerce_str(args, "proposalId", max_chars=40)
    if raw is None:
        raise invalid("'proposalId' is required: the id review_proposals action 'list' returned.")
    digits = raw.strip()[len(_PREFIX) :] if raw.strip().startswith(_PREFIX) else ""
    if not digits.isascii() or not digits.isdigit() or len(digits) > 18 or int(digits) == 0:
        raise invalid(f"'proposalId' must look like prp_123 (from action 'list'); got {raw[:40]!r}.")
    return int(digits)


def _cursor(secret: str, thread: int | None, token: str | None) -> int:
    if token is None:
        return 0
    try:
        payload = URLSafeSerializer(secret, salt=_SALT).loads(token)
    except BadSignature:
        raise invalid(
            "'cursor' is not a cursor this server issued for your store (edited or foreign); start again without one."
        ) from None
    if not (isinstance(payload, list) and len(payload) == 2 and isinstance(payload[1], int)):
        raise invalid("'cursor' is malformed; start again without a cursor.")
    if payload[0] != thread:
        raise invalid("'cursor' was issued for another 'thread' filter; pass the same thread, or start again.")
    return int(payload[1])


def _not_found(pid: int) -> DomainError:
    return DomainError(
        "proposal_not_found",
        f"no pending proposal {proposal_id(pid)}; it may have been accepted or rejected already. "
        "List the current ones with review_proposals action 'list'.",
    )


def _item(p: proposal_store.ProposalRow) -> dict[str, Any]:
    return {
        "proposalId": proposal_id(p.rowid),
        "thread": p.thread,
        "sequenceId": p.sequence_id,
        "title": p.title,
        "similarity": round(p.similarity, 3),
        "evidence": make_snippet(p.evidence, [], EVIDENCE_CHARS),
        "proposedAt": iso(p.proposed_at),
    }


class ProposalTools:
    """`review_proposals`, with the embedder the matching needs (the Library's, created on first use)."""

    def __init__(self, embedder: Callable[[], Embedder]) -> None:
        self._embedder = embedder
        self._descriptions: dict[str, Vector | None] = {}

    def tools(self) -> list[ToolSpec]:
        """The tool spec (registered only when the library is on)."""
        return [ToolSpec(review_tool(), self._review)]

    async def _review(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        action = args.get("action")
        if not isinstance(action, str) or action not in REVIEW_ACTIONS:
            raise invalid(f"'action' must be one of {', '.join(REVIEW_ACTIONS)}; got {str(action)[:30]!r}.")
        reject_unknown(args, _ACTION_FIELDS[action])
        if action == "list":
            return await self._list(args, ctx)
        pid = _parse_id(args)
        at = now_ms(ctx.clock)

        def decide(conn: apsw.Connection) -> dict[str, Any]:
            found = proposal_store.get_proposal(conn, pid)
            if found is None:
                raise _not_found(pid)
            if found.thread_archived:
                # Archiving stops proposals (SPEC §5.3); the pending ones wait for an unarchive.
                raise DomainError(
                    "thread_archived",
                    f"thread {found.thread!r} is archived, so its proposals are on hold; unarchive it with "
                    "configure_thread action 'unarchive' to review them.",
                )
            if action == "accept":
                thread_store.add_member(conn, found.thread_rowid, found.sequence_rowid, "review", at)
            else:
                proposal_store.reject(conn, found, at)
            return {
                "action": action,
                "proposalId": proposal_id(pid),
                "thread": found.thread,
                "sequenceId": found.sequence_id,
                "member": action == "accept",
                **({"addedBy": "review"} if action == "accept" else {}),
            }

        structured = await ctx.store.write(decide)
        if action == "accept":
            text = f"Sequence {structured['sequenceId']} joined thread {structured['thread']!r} (addedBy: review)."
        else:
            text = (
                f"Rejected: sequence {structured['sequenceId']} will not be proposed for "
                f"thread {structured['thread']!r} again."
            )
        return ToolOutput(text=text, structured=structured)

    async def _list(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        name = args.get("thread")
        thread_name = None if name is None else check_name(name, "thread")
        limit = coerce_int(args, "limit", high=MAX_LIMIT) or DEFAULT_LIMIT
        token = coerce_str(args, "cursor", max_chars=500)
        if thread_name is not None:
            await ctx.store.read(lambda conn: thread_store.require_thread(conn, thread_name))
        # Listing first finishes pending matching for this user, so the list is complete. The
        # matching module brings numpy, which a cold start must not import (SPEC §7).
        from thoughtline.library.matching import match_pending

        await match_pending(ctx.store, self._embedder, cache=self._descriptions)

        def page(conn: apsw.Connection) -> dict[str, Any]:
            thread = thread_store.require_thread(conn, thread_name) if thread_name is not None else None
            rowid = None if thread is None else thread.rowid
            secret = cursor_secret(conn)
            after = _cursor(secret, rowid, token)
            found = proposal_store.list_proposals(conn, rowid, after, limit + 1)
            shown = found[:limit]
            more = len(found) > limit and bool(shown)
            cursor = URLSafeSerializer(secret, salt=_SALT).dumps([rowid, shown[-1].rowid]) if more else None
            return {"action": "list", "proposals": [_item(p) for p in shown], "nextCursor": cursor}

        structured = await ctx.store.read(page)
        return ToolOutput(text=_render_list(structured, thread_name), structured=structured)


def _render_list(result: Mapping[str, Any], thread: str | None) -> str:
    proposals = result["proposals"]
    scope = f" for thread {thread!r}" if thread else ""
    if not proposals:
        return f"No pending proposals{scope}."
    lines = [f"{len(proposals)} pending proposal{'s' if len(proposals) != 1 else ''}{scope}:"]
    for p in proposals:
        lines.append(f"- {p['proposalId']}: {p['title']} → {p['thread']} (similarity {p['similarity']:.2f})")
        lines.append(f"  {p['sequenceId']} · evidence: {p['evidence']}")
    lines.append("Accept or reject each with review_proposals action 'accept' / 'reject' and its proposalId.")
    if result["nextCursor"]:
        lines.append(f"More proposals follow; pass cursor={result['nextCursor']} to continue.")
    return "\n".join(lines)
