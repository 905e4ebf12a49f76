"""The `review_proposals` handler (SPEC §5.3): list, accept and reject thread proposals.

A thin adapter: parse arguments, call `library/review.py`, render the typed result as structured
content (`wire/proposals.py`) plus readable text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from thoughtline.clock import now_ms
from thoughtline.domain.arguments import parse_proposal_id
from thoughtline.domain.coercion import coerce_int, coerce_str, one_of, reject_unknown
from thoughtline.domain.thread_names import check_name
from thoughtline.domain.wording import counted
from thoughtline.library.review import DEFAULT_LIMIT, MAX_LIMIT, ProposalReview
from thoughtline.mcp.proposal_schemas import REVIEW_ACTIONS, review_tool
from thoughtline.mcp.tools import ToolContext, ToolOutput, ToolSpec
from thoughtline.wire.proposals import decision_json, page_json

if TYPE_CHECKING:
    from thoughtline.library.embed import Embedder
    from thoughtline.library.term_cache import TermCaches

_ACTION_FIELDS = {
    "list": frozenset({"action", "thread", "cursor", "limit"}),
    "accept": frozenset({"action", "proposalId"}),
    "reject": frozenset({"action", "proposalId"}),
}


class ProposalTools:
    """`review_proposals`, with the embedder the matching needs (the Library's, created on first use)."""

    def __init__(
        self, embedder: Callable[[], Embedder], terms: TermCaches | None = None, budget_seconds: float | None = None
    ) -> None:
        self._review = ProposalReview(embedder, terms, budget_seconds)

    def tools(self) -> list[ToolSpec]:
        """The tool spec (registered only when the library is on)."""
        return [ToolSpec(review_tool(), self._handle)]

    async def _handle(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        action = one_of(args.get("action"), "action", REVIEW_ACTIONS)
        reject_unknown(args, _ACTION_FIELDS[action])
        if action == "list":
            return await self._list(args, ctx)
        decided = await self._review.decide(ctx.store, parse_proposal_id(args), action == "accept", now_ms(ctx.clock))
        if decided.member:
            text = f"Sequence {decided.sequence_id} joined thread {decided.thread!r} (addedBy: review)."
        else:
            text = f"Rejected: sequence {decided.sequence_id} will not be proposed for thread {decided.thread!r} again."
        return ToolOutput(text=text, structured={"action": action, **decision_json(decided)})

    async def _list(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        name = args.get("thread")
        thread_name = None if name is None else check_name(name, "thread")
        limit = coerce_int(args, "limit", high=MAX_LIMIT) or DEFAULT_LIMIT
        token = coerce_str(args, "cursor", max_chars=500)
        page = await self._review.pending(ctx.store, thread_name, limit, token)
        structured = {"action": "list", **page_json(page)}
        return ToolOutput(text=_render_list(structured, thread_name, token), structured=structured)


def _still_matching(result: Mapping[str, Any]) -> list[str]:
    left = result.get("matchingPending")
    if not left:
        return []
    parts = []
    if left["threads"]:
        parts.append(f"{left['threads']} thread{'s' if left['threads'] != 1 else ''}")
    if left["sequences"]:
        parts.append(f"{left['sequences']} completed sequence{'s' if left['sequences'] != 1 else ''}")
    return [f"Matching is still running for {' and '.join(parts)}; more proposals may come, list again shortly."]


def _render_list(result: Mapping[str, Any], thread: str | None, cursor: str | None) -> str:
    proposals = result["proposals"]
    scope = f" for thread {thread!r}" if thread else ""
    if not proposals:
        return "\n".join([f"No pending proposals{scope}.", *_still_matching(result)])
    total = int(result["pendingCount"])
    if len(proposals) < total:  # one page of several: its count is not passed off as all of them
        lines = [f"{len(proposals)} of {counted(total, 'pending proposal')}{scope} on this page:"]
    else:
        lines = [f"{counted(len(proposals), 'pending proposal')}{scope}:"]
    for p in proposals:
        lines.append(f"- {p['proposalId']}: {p['title']} → {p['thread']} (similarity {p['similarity']:.2f})")
        lines.append(f"  {p['sequenceId']} · evidence: {p['evidence']}")
    lines.append("Accept or reject each with review_proposals action 'accept' / 'reject' and its proposalId.")
    if result["nextCursor"]:
        same = f", thread {thread!r}" if thread else ""
        lines.append(
            f"More proposals follow: call review_proposals action 'list' with cursor {result['nextCursor']!r}{same} "
            "to continue."
        )
    return "\n".join([*lines, *_still_matching(result)])
