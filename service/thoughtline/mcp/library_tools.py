"""The library's MCP tools: `search_thoughts` and `manage_sequence` (SPEC §5, issue 5).

Thin adapters in the shape of `tools.py`: parse arguments, run one store function in a read
snapshot or the writer, shape text + structured output. `Library` adds them to the process-wide
parts of search in `library/after_commit.py` (the lazily loaded embedder, in-memory vector
indexes of large stores, embedding after commits or at query time).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import apsw

from thoughtline.clock import now_ms
from thoughtline.domain.arguments import (
    coerce_int,
    coerce_sequence_id,
    coerce_str,
    one_of,
    optional_one_of,
    parse_instant,
    reject_unknown,
)
from thoughtline.domain.wording import counted
from thoughtline.errors import DomainError, invalid
from thoughtline.library import model_identity, sequences
from thoughtline.library.after_commit import AfterCommitWork
from thoughtline.library.retrieval import Outcome, hybrid_search
from thoughtline.mcp.library_schemas import (
    ACTIONS,
    DEFAULT_LIMIT,
    LIST_ACTION,
    MAX_LIMIT,
    MAX_QUERY_CHARS,
    SEARCH_BY,
    manage_tool,
    search_tool,
)
from thoughtline.mcp.tools import ToolContext, ToolOutput, ToolSpec
from thoughtline.storage import search as search_store
from thoughtline.storage import thoughts as store
from thoughtline.storage.search import STATUSES, SearchFilters
from thoughtline.wire.sequences import summary_json, transition_json


class Library(AfterCommitWork):
    """The library tools over the process-wide search state (embedder, indexes, after-commit work)."""

    def tools(self, discovery: bool) -> list[ToolSpec]:
        """`search_thoughts` and `manage_sequence`; with `discovery` off only id-held lifecycle."""
        manage = ToolSpec(manage_tool(discovery), _manage_handler(discovery))
        if not discovery:
            return [manage]
        return [ToolSpec(search_tool(), self._search), manage]

    async def _search(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        query, limit, filters = parse_search(args)
        by = parse_by(args)
        opened = ctx.store
        if filters.thread is not None:
            name = filters.thread
            if not await opened.read(lambda conn: search_store.thread_exists(conn, name)):
                raise DomainError("thread_not_found", f"no thread named {name!r}; check the name or omit 'thread'.")
        # Thoughts written since the last search get their vectors now (bounded; see INLINE_MAX).
        await self.embed_for_search(opened)
        embedder = self.embedder()
        current = await self.model_id()
        count = await opened.read(search_store.vector_count)
        index = self.index_for(opened, count)

        def run(conn: apsw.Connection) -> Outcome:
            # Checked in the search's own snapshot: vectors another model made are never compared
            # with this query. Until they are queued again (above, or by the background work, in
            # one transaction), the search answers by keyword.
            usable = embedder if model_identity.store_model(conn) == current else None
            return hybrid_search(conn, usable, query, limit=limit, filters=filters, index=index, by=by)

        outcome = await opened.read(run)
        waiting = await opened.read(search_store.pending_count)
        if by == "sequence":
            keys = [h.record.sequence_key for h in outcome.hits]
            summaries = await opened.read(lambda conn: search_store.sequence_summaries(conn, keys))
            return render_sequences(query, outcome, summaries, waiting)
        return render_search(query, outcome, waiting)


SEARCH_FIELDS = frozenset({"query", "limit", "by", "sequenceId", "status", "since", "until", "thread"})


def parse_by(args: Mapping[str, Any]) -> str:
    """`by`: "thought" (default) or "sequence" (each sequence once, with its best thought)."""
    by = args.get("by", "thought")
    if by not in SEARCH_BY:
        raise invalid(f"'by' must be one of {', '.join(SEARCH_BY)}; got {str(by)[:30]!r}.")
    return str(by)


def parse_search(args: Mapping[str, Any]) -> tuple[str, int, SearchFilters]:
    """Validate `search_thoughts` arguments into (query, limit, filters)."""
    reject_unknown(args, SEARCH_FIELDS)
    query = coerce_str(args, "query", max_chars=MAX_QUERY_CHARS)
    if query is None:
        raise invalid("'query' is required: words or a question describing what you are looking for.")
    status = args.get("status")
    if status is not None and status not in STATUSES:
        raise invalid(f"'status' must be one of {', '.join(STATUSES)}; got {str(status)[:30]!r}.")
    since, until = parse_instant(args, "since"), parse_instant(args, "until")
    if since is not None and until is not None and since > until:
        raise invalid("'since' is after 'until'; swap them or drop one.")
    filters = SearchFilters(
        sequence_id=coerce_sequence_id(args, "sequenceId"),
        status=status,
        since_ms=since,
        until_ms=until,
        thread=coerce_str(args, "thread", max_chars=128),
    )
    return query, coerce_int(args, "limit", high=MAX_LIMIT) or DEFAULT_LIMIT, filters


def _abstained_text(shown: str, outcome: Outcome) -> str:
    closest = "" if outcome.best_similarity is None else f" (closest similarity {outcome.best_similarity:.2f})"
    return (
        f'Nothing relevant is stored for "{shown}"{closest}; the search abstained rather than guess. '
        "Try other words or a broader question."
    )


def _where(r: Mapping[str, Any]) -> str:
    return f"thought {r['thoughtNumber']}" + (f" on branch {r['branchId']}" if r["branchId"] else "")


def _render(
    query: str, outcome: Outcome, results: list[dict[str, Any]], waiting: int, by: str, entries: list[str]
) -> ToolOutput:
    """The frame both result shapes share: abstention, nothing found, or a heading over `entries`."""
    structured: dict[str, Any] = {"results": results, "abstained": outcome.abstained, "by": by}
    if waiting:
        structured["unindexedThoughts"] = waiting
    shown = query if len(query) <= 80 else query[:77] + "…"
    noun = "sequence" if by == "sequence" else "thought"
    if outcome.abstained:
        lines = [_abstained_text(shown, outcome)]
    elif not results:
        lines = [f'No stored {noun}s match "{shown}".']
    else:
        lines = [f'{counted(len(results), noun if by == "sequence" else "result")} for "{shown}":', "", *entries]
    if waiting:
        lines.append(f"Note: {waiting} recent thoughts are not indexed for meaning yet; keyword matches include them.")
    return ToolOutput(text="\n".join(lines), structured=structured)


def render_sequences(
    query: str, outcome: Outcome, summaries: Mapping[int, tuple[int, int]], waiting: int
) -> ToolOutput:
    """Text and structured output of a search grouped by sequence (each sequence once)."""
    results = []
    entries: list[str] = []
    for i, h in enumerate(outcome.hits, start=1):
        count, updated = summaries.get(h.record.sequence_key, (0, h.record.created_at))
        r = {
            "sequenceId": h.record.sequence_id,
            "title": h.record.title,
            "status": h.record.status,
            "thoughtCount": count,
            "updatedAt": store.iso(updated),
            "score": h.score,
            "thoughtNumber": h.record.number,
            "branchId": h.record.branch,
            "snippet": h.snippet,
            "similarity": h.similarity,
        }
        results.append(r)
        entries += [
            f"{i}. {r['title']} [{r['status']}] · {counted(count, 'thought')} · best match {_where(r)}",
            f"   {r['snippet']}",
            f"   {r['sequenceId']} · updated {r['updatedAt']}",
        ]
    return _render(query, outcome, results, waiting, "sequence", entries)


def render_search(query: str, outcome: Outcome, waiting: int) -> ToolOutput:
    """Text and structured output of one search."""
    results = []
    entries: list[str] = []
    for i, h in enumerate(outcome.hits, start=1):
        r = {
            "sequenceId": h.record.sequence_id,
            "thoughtNumber": h.record.number,
            "branchId": h.record.branch,
            "title": h.record.title,
            "snippet": h.snippet,
            "score": h.score,
            "similarity": h.similarity,
            "status": h.record.status,
            "createdAt": store.iso(h.record.created_at),
        }
        results.append(r)
        sim = (
            f"similarity {h.similarity:.2f}"
            if h.similarity is not None
            else ("keyword match" if h.keyword else "next to a match")
        )
        entries += [
            f"{i}. {r['title']} [{r['status']}] · {_where(r)} · {sim}",
            f"   {r['snippet']}",
            f"   {r['sequenceId']} · {r['createdAt']}",
        ]
    return _render(query, outcome, results, waiting, "thought", entries)


def _manage_handler(discovery: bool) -> Callable[[Mapping[str, Any], ToolContext], Any]:
    async def handle(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        allowed = {"action", "sequenceId", "status", "limit", "thread"} if discovery else {"action", "sequenceId"}
        reject_unknown(args, frozenset(allowed))
        action = one_of(args.get("action"), "action", (*ACTIONS, LIST_ACTION) if discovery else ACTIONS)
        if action == LIST_ACTION:
            return await _list(args, ctx)
        sequence_id = coerce_sequence_id(args, "sequenceId")
        if sequence_id is None:
            raise invalid(f"'sequenceId' is required to {action} a sequence: the id sequentialthinking returned.")
        return await _transition(action, sequence_id, ctx)

    return handle


async def _transition(action: str, sequence_id: str, ctx: ToolContext) -> ToolOutput:
    done = await sequences.change_status(ctx.store, sequence_id, action, now_ms(ctx.clock))
    seq = done.sequence
    lines = [f"Sequence {sequence_id} is now {seq.status}: {seq.title}"]
    t = done.last_thought
    if t is not None:
        where = f" on branch {t.branch_name}" if t.branch_name else ""
        lines += [
            "",
            f"Last thought ({t.number}/{t.total}{where}):",
            t.body,
            "",
            f"Continue with sequentialthinking, sequenceId {sequence_id}, thoughtNumber {t.number + 1}.",
        ]
    return ToolOutput(text="\n".join(lines), structured=transition_json(done))


async def _list(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
    status = optional_one_of(args, "status", STATUSES)
    limit = coerce_int(args, "limit", high=MAX_LIMIT) or DEFAULT_LIMIT
    thread = coerce_str(args, "thread", max_chars=128)
    found = await sequences.recent_sequences(ctx.store, status, thread, limit)
    items = [summary_json(s) for s in found.sequences]
    kind = (f"{status} sequences" if status else "sequences") + (f" in thread {thread!r}" if thread else "")
    lines = [f"{len(items)} most recently updated {kind}:" if items else f"No {kind} stored."]
    lines += [
        f"- {i['sequenceId']} [{i['status']}] {i['title']} ({counted(i['thoughtHistoryLength'], 'thought')})"
        for i in items
    ]
    return ToolOutput(text="\n".join(lines), structured={"sequences": items})
