"""The library's MCP tools: `search_thoughts` and `manage_sequence` (SPEC §5, issues 5 and 17).

Thin adapters in the shape of `tools.py`: parse arguments, call the library (`library/searching.py`
runs a whole search and returns a typed result) or one store function, shape text + structured
output. `Library` adds them to the process-wide parts of search in `library/after_commit.py` (the
lazily loaded embedder, in-memory vector indexes, embedding after commits or at query time).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from thoughtline.clock import now_ms
from thoughtline.domain.arguments import coerce_sequence_id
from thoughtline.domain.coercion import (
    coerce_int,
    coerce_search_text,
    coerce_str,
    one_of,
    optional_one_of,
    parse_instant,
    reject_unknown,
)
from thoughtline.domain.resuming import continue_args
from thoughtline.domain.wording import counted
from thoughtline.errors import invalid
from thoughtline.library import searching, sequences
from thoughtline.library.after_commit import AfterCommitWork
from thoughtline.library.query import check_alternatives
from thoughtline.library.search_types import Hit
from thoughtline.library.searching import Found, SearchRequest, SearchResult
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
from thoughtline.storage.rows import iso
from thoughtline.storage.search import STATUSES, SearchFilters
from thoughtline.wire.sequences import page_json, transition_json


class Library(AfterCommitWork):
    """The library tools over the process-wide search state (embedder, indexes, after-commit work)."""

    def tools(self, discovery: bool) -> list[ToolSpec]:
        """`search_thoughts` and `manage_sequence`; with `discovery` off only id-held lifecycle."""
        manage = ToolSpec(manage_tool(discovery), _manage_handler(discovery))
        if not discovery:
            return [manage]
        return [ToolSpec(search_tool(), self._search), manage]

    async def _search(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        return render(await searching.search(self, ctx.store, parse_search(args)))


SEARCH_FIELDS = frozenset({"query", "alternatives", "limit", "by", "sequenceId", "status", "since", "until", "thread"})


def parse_search(args: Mapping[str, Any]) -> SearchRequest:
    """Validate `search_thoughts` arguments into a request."""
    reject_unknown(args, SEARCH_FIELDS)
    query = coerce_search_text(args, "query", max_chars=MAX_QUERY_CHARS)
    if query is None:
        raise invalid("'query' is required: words or a question describing what you are looking for.")
    alternatives = check_alternatives(args.get("alternatives"))
    by = optional_one_of(args, "by", SEARCH_BY) or "thought"
    status = optional_one_of(args, "status", STATUSES)
    since, until = parse_instant(args, "since"), parse_instant(args, "until", end_of_day=True)
    if since is not None and until is not None and since > until:
        raise invalid("'since' is after 'until'; swap them or drop one.")
    filters = SearchFilters(
        sequence_id=coerce_sequence_id(args, "sequenceId"),
        status=status,
        since_ms=since,
        until_ms=until,
        thread=coerce_str(args, "thread", max_chars=128),
    )
    limit = coerce_int(args, "limit", high=MAX_LIMIT) or DEFAULT_LIMIT
    return SearchRequest(query, alternatives, limit, str(by), filters)


STRENGTH_TEXT = {
    "strong": "Best match: strong (similarity {sim}); check it answers the question.",
    "fair": "Best match: fair (similarity {sim}); it may be related work, not the answer: judge by the snippets.",
    "weak": "Best match: weak (similarity {sim}); likely a near miss or unrelated, judge by the snippets.",
    "keyword": "Best match: by keyword only (no semantic similarity for it).",
}


def _tag(item: Mapping[str, Any]) -> str:
    """`[active]`, or `[active · kind: debug]` for a sequence with a kind."""
    return f"[{item['status']}" + (f" · kind: {item['kind']}]" if item.get("kind") else "]")


def _where(r: Mapping[str, Any]) -> str:
    return f"thought {r['thoughtNumber']}" + (f" on branch {r['branchId']}" if r["branchId"] else "")


def render(result: SearchResult) -> ToolOutput:
    """Text and structured output of one search: the abstention, nothing found, or the results."""
    request, outcome = result.request, result.outcome
    by = request.by
    if by == "sequence":
        results, entries = _sequence_entries(result.found)
    else:
        results, entries = _thought_entries(result.found)
    structured: dict[str, Any] = {"results": results, "abstained": outcome.abstained, "by": by}
    if result.unindexed:
        structured["unindexedThoughts"] = result.unindexed
    query = request.question
    shown = query if len(query) <= 80 else query[:77] + "…"
    also = f" (and {counted(len(request.alternatives), 'alternative')})" if request.alternatives else ""
    noun = "sequence" if by == "sequence" else "thought"
    if outcome.abstained:
        closest = "" if outcome.best_similarity is None else f" (closest similarity {outcome.best_similarity:.2f})"
        lines = [
            f'Nothing relevant is stored for "{shown}"{also}{closest}; the search abstained rather than guess. '
            "Try other words, more alternatives or a broader question."
        ]
    elif result.filtered_out:
        lines = [f"No stored thoughts match these filters: {_filters_text(request.filters)}; widen or drop them."]
    elif not results:
        lines = [f'No stored {noun}s match "{shown}"{also}.']
    else:
        top = outcome.hits[0].similarity
        verdict = STRENGTH_TEXT[result.strength].format(sim="—" if top is None else f"{top:.2f}")
        heading = f'{counted(len(results), noun if by == "sequence" else "result")} for "{shown}"{also}:'
        lines = [heading, verdict, "", *entries]
    if result.unindexed:
        lines.append(
            f"Note: {result.unindexed} recent thoughts are not indexed for meaning yet; keyword matches include them."
        )
    return ToolOutput(text="\n".join(lines), structured=structured)


def _filters_text(filters: SearchFilters) -> str:
    """The active filters, as the caller can check them against what is stored."""
    parts = [
        *([f"sequenceId {filters.sequence_id}"] if filters.sequence_id is not None else []),
        *([f"status {filters.status}"] if filters.status is not None else []),
        *([f"written at or after {iso(filters.since_ms)}"] if filters.since_ms is not None else []),
        *([f"written at or before {iso(filters.until_ms)}"] if filters.until_ms is not None else []),
        *([f"thread {filters.thread!r}"] if filters.thread is not None else []),
    ]
    return ", ".join(parts)


def _similarity_text(h: Hit) -> str:
    if h.similarity is not None:
        return f"similarity {h.similarity:.2f}"
    return "keyword match" if h.keyword else "next to a match"


def _sequence_entries(found: list[Found]) -> tuple[list[dict[str, Any]], list[str]]:
    results: list[dict[str, Any]] = []
    entries: list[str] = []
    for i, f in enumerate(found, start=1):
        h = f.hit
        count = f.thought_count or 0
        r: dict[str, Any] = {
            "sequenceId": h.record.sequence_id,
            "title": h.record.title,
            "status": h.record.status,
            "kind": h.record.kind,
            "thoughtCount": count,
            "updatedAt": iso(f.updated_at if f.updated_at is not None else h.record.created_at),
            "score": h.score,
            "thoughtNumber": h.record.number,
            "branchId": h.record.branch,
            "snippet": h.snippet,
            "similarity": h.similarity,
        }
        ending = ""
        if f.conclusion is not None:
            c = f.conclusion
            r["conclusion"] = {
                "thoughtNumber": c.thought_number,
                "branchId": c.branch,
                "text": c.text,
                "final": c.final,
            }
            label = "concluded" if c.final else "latest, still open"
            ending = f"   {label} (thought {c.thought_number}): {c.text}"
        results.append(r)
        entries += [
            f"{i}. {r['title']} {_tag(r)} · {counted(count, 'thought')} · best match {_where(r)} · "
            + _similarity_text(h),
            f"   matched: {r['snippet']}",
            *([ending] if ending else []),
            f"   {r['sequenceId']} · updated {r['updatedAt']}",
        ]
    return results, entries


def _thought_entries(found: list[Found]) -> tuple[list[dict[str, Any]], list[str]]:
    results: list[dict[str, Any]] = []
    entries: list[str] = []
    for i, f in enumerate(found, start=1):
        h = f.hit
        r = {
            "sequenceId": h.record.sequence_id,
            "thoughtNumber": h.record.number,
            "branchId": h.record.branch,
            "title": h.record.title,
            "snippet": h.snippet,
            "score": h.score,
            "similarity": h.similarity,
            "status": h.record.status,
            "kind": h.record.kind,
            "createdAt": iso(h.record.created_at),
        }
        results.append(r)
        entries += [
            f"{i}. {r['title']} {_tag(r)} · {_where(r)} · {_similarity_text(h)}",
            f"   {r['snippet']}",
            f"   {r['sequenceId']} · {r['createdAt']}",
        ]
    return results, entries


# The arguments each manage_sequence action takes besides `action`: one that another action takes
# is refused naming that action, rather than silently ignored (a `status` sent with `pause`).
_LIST_FIELDS = frozenset({"status", "limit", "thread", "cursor", "order"})
_MANAGE_FIELDS: dict[str, frozenset[str]] = {
    **{action: frozenset({"sequenceId"}) for action in ACTIONS},
    LIST_ACTION: _LIST_FIELDS,
}


def reject_misplaced(args: Mapping[str, Any], action: str, fields: Mapping[str, frozenset[str]]) -> None:
    """Refuse an argument of another action, naming it and the actions that take it.

    A null counts as not sent, as it does for every optional argument (strict clients send one
    for each field they leave unset).
    """
    sent = {name for name, value in args.items() if value is not None}
    for name in sorted(sent - fields[action] - {"action"}):
        takers = [other for other, taken in fields.items() if name in taken]
        raise invalid(
            f"'{name}' does not apply to action '{action}' (it takes: {', '.join(sorted(fields[action]))}); "
            f"'{name}' is for action {' / '.join(repr(t) for t in takers)}. Drop it, or use that action."
        )


def _manage_handler(discovery: bool) -> Callable[[Mapping[str, Any], ToolContext], Any]:
    fields = _MANAGE_FIELDS if discovery else {action: _MANAGE_FIELDS[action] for action in ACTIONS}

    async def handle(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        reject_unknown(args, frozenset({"action"}.union(*fields.values())))
        action = one_of(args.get("action"), "action", (*ACTIONS, LIST_ACTION) if discovery else ACTIONS)
        reject_misplaced(args, str(action), fields)
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
    t, step = done.last_thought, done.next
    if t is not None and step is not None:
        where = f" on branch {t.branch_name}" if t.branch_name else ""
        lines += [
            "",
            f"Last thought ({t.number}/{t.total}{where}):",
            t.body,
            "",
            f"Continue with sequentialthinking, {continue_args(sequence_id, step)}.",
        ]
    return ToolOutput(text="\n".join(lines), structured=transition_json(done))


async def _list(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
    status = optional_one_of(args, "status", STATUSES)
    limit = coerce_int(args, "limit", high=MAX_LIMIT) or DEFAULT_LIMIT
    thread = coerce_str(args, "thread", max_chars=128)
    cursor = coerce_str(args, "cursor", max_chars=sequences.MAX_LIST_CURSOR)
    order = optional_one_of(args, "order", sequences.LIST_ORDERS) or sequences.DEFAULT_ORDER
    page = await sequences.list_sequences(ctx.store, status, thread, limit, cursor, order)
    structured = page_json(page)
    items = structured["sequences"]
    kind = (f"{status} sequences" if status else "sequences") + (f" in thread {thread!r}" if thread else "")
    ordered = "most recently updated" if order == "updated" else "oldest created"
    if items:
        lines = [f"{len(items)} {kind}, {ordered} first" + (" (continued):" if cursor else ":")]
    else:
        lines = [f"No more {kind}." if cursor else f"No {kind} stored."]
    lines += [
        f"- {i['sequenceId']} {_tag(i)} {i['title']} ({counted(i['thoughtHistoryLength'], 'thought')})" for i in items
    ]
    if page.next_cursor:
        again = ", ".join(
            [
                f"cursor {page.next_cursor!r}",
                *(f"{name} {args[name]!r}" for name in ("status", "thread", "order") if args.get(name) is not None),
            ]
        )
        lines.append(f"More follow: call manage_sequence action 'list' again with {again} for the next page.")
    return ToolOutput(text="\n".join(lines), structured=structured)
