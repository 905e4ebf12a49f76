"""The library's MCP tools: `search_thoughts` and `manage_sequence` (SPEC §5, issue 5).

Thin adapters in the shape of `tools.py`: parse arguments, run one store function in a read
snapshot or the writer, shape text + structured output. `Library` holds the process-wide parts
of search (the lazily loaded embedder, in-memory vector indexes of large stores, background
embedding after commits).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from thoughtline.clock import now_ms
from thoughtline.domain.arguments import coerce_int, coerce_sequence_id, coerce_str, reject_unknown
from thoughtline.errors import DomainError, invalid
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
from thoughtline.storage import history as history_store
from thoughtline.storage import lifecycle as lifecycle_store
from thoughtline.storage import search as search_store
from thoughtline.storage import thoughts as store
from thoughtline.storage.search import STATUSES, SearchFilters

if TYPE_CHECKING:
    from thoughtline.library.dense import DenseIndex
    from thoughtline.library.embed import Embedder
    from thoughtline.storage.router import UserStore

logger = logging.getLogger(__name__)

# At most this many missing vectors are embedded inside one search call (~5 s on two cores);
# the rest are left to the background task so a search never stalls on a large import.
INLINE_BACKFILL = 512
# Every store's vectors are kept in memory once searched: ranking reads every thought's whole,
# passage and sequence cosines, which one numpy product gives (~2 ms at 5k thoughts, issue 8).
INDEX_MIN_VECTORS = 0
TARGET_STATUS = {"pause": "paused", "resume": "active", "complete": "completed", "abandon": "abandoned"}


def _default_embedder() -> Embedder:
    from thoughtline.library.embed import MiniLMEmbedder

    return MiniLMEmbedder()


class Library:
    """Process-wide search state shared by every store of one app.

    The embedder is created on the first search, never at start or on a write. Once it exists,
    commits schedule background embedding of the new thoughts; before that, a search embeds
    whatever is missing itself.
    """

    def __init__(
        self,
        embedder_factory: Callable[[], Embedder] = _default_embedder,
        *,
        index_min_vectors: int = INDEX_MIN_VECTORS,
    ) -> None:
        self._factory = embedder_factory
        self._index_min = index_min_vectors
        self._embedder: Embedder | None = None
        self._indexes: dict[str, DenseIndex] = {}
        self._running: dict[str, asyncio.Task[None]] = {}
        self._dirty: set[str] = set()
        self._progress = asyncio.Event()

    def embedder(self) -> Embedder:
        """The embedder, created on first use."""
        if self._embedder is None:
            self._embedder = self._factory()
        return self._embedder

    def attach(self, opened: UserStore) -> None:
        """Hook a freshly opened store (register with `StoreRouter.on_open`, on the event loop)."""
        loop = asyncio.get_running_loop()

        def committed(s: UserStore) -> None:
            # Runs on the writer thread right after COMMIT: hop to the loop, never block, never
            # raise (an exception here would escape into the writer). A closed loop means the
            # app is shutting down; the queue keeps the work for the next search or reindex.
            if self._embedder is not None:
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(self._kick, s)

        opened.after_commit.append(committed)

    @property
    def indexed_stores(self) -> int:
        """How many stores currently have their vectors held in memory."""
        return len(self._indexes)

    def detach(self, opened: UserStore) -> None:
        """Forget a closing store's in-memory vectors (register with `StoreRouter.on_close`)."""
        self._indexes.pop(str(opened.path), None)

    def _kick(self, opened: UserStore) -> None:
        key = str(opened.path)
        self._dirty.add(key)
        running = self._running.get(key)
        # A finished task may still be listed (its done-callback runs later); start a fresh one.
        if running is None or running.done():
            self._running[key] = asyncio.create_task(self._drain(opened))

    async def _drain(self, opened: UserStore) -> None:
        key = str(opened.path)
        try:
            while key in self._dirty:
                self._dirty.discard(key)
                while await self.backfill(opened, limit=64):
                    self._progress.set()
        except Exception as exc:  # background work: log the kind, retry on the next commit
            logger.warning("background embedding failed: %s", type(exc).__name__)

    async def idle(self) -> None:
        """Wait until background embedding has caught up (tests, graceful shutdown)."""
        while pending := [t for t in self._running.values() if not t.done()]:
            await asyncio.gather(*pending, return_exceptions=True)

    async def caught_up(self, opened: UserStore) -> None:
        """Wait until every committed thought of `opened` has a vector (wrap it in a timeout).

        The commit hook reaches the event loop from the writer thread, possibly after the write's
        caller has already resumed, so waiting for running tasks alone could miss it.
        """
        while await opened.read(search_store.pending_count):
            self._progress.clear()
            if not await opened.read(search_store.pending_count):
                return
            await self._progress.wait()

    async def backfill(self, opened: UserStore, limit: int = INLINE_BACKFILL) -> int:
        """Embed up to `limit` thoughts that have no vector yet; returns how many were stored."""
        from thoughtline.library import vectors

        pending = await opened.read(lambda conn: vectors.collect_pending(conn, limit))
        if not pending:
            return 0
        embedder = self.embedder()
        rows = await asyncio.to_thread(vectors.embed_pending, embedder, pending)
        return await opened.write(lambda conn: search_store.store_vectors(conn, rows))

    def index_for(self, opened: UserStore, vector_count: int) -> DenseIndex | None:
        """The in-memory index of a large store (None for small ones)."""
        key = str(opened.path)
        if vector_count < self._index_min:
            self._indexes.pop(key, None)
            return None
        if key not in self._indexes:
            from thoughtline.library.dense import DenseIndex

            self._indexes[key] = DenseIndex()
        return self._indexes[key]

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
        # Thoughts written since the last search get their vectors now (bounded; see INLINE_BACKFILL).
        await self.backfill(opened)
        embedder = self.embedder()
        count = await opened.read(search_store.vector_count)
        index = self.index_for(opened, count)
        outcome = await opened.read(
            lambda conn: hybrid_search(conn, embedder, query, limit=limit, filters=filters, index=index, by=by)
        )
        waiting = await opened.read(search_store.pending_count)
        if by == "sequence":
            keys = [h.record.sequence_key for h in outcome.hits]
            summaries = await opened.read(lambda conn: search_store.sequence_summaries(conn, keys))
            return render_sequences(query, outcome, summaries, waiting)
        return render_search(query, outcome, waiting)


def _parse_time(args: Mapping[str, Any], field: str) -> int | None:
    raw = coerce_str(args, field, max_chars=64)
    if raw is None:
        return None
    text = raw.strip()
    try:
        parsed = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
    except ValueError:
        raise invalid(
            f"'{field}' must be an ISO-8601 date or time such as 2026-03-01 or 2026-03-01T12:00:00Z; got {text[:40]!r}."
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return int(parsed.timestamp() * 1000)


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
    since, until = _parse_time(args, "since"), _parse_time(args, "until")
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


def render_sequences(
    query: str, outcome: Outcome, summaries: Mapping[int, tuple[int, int]], waiting: int
) -> ToolOutput:
    """Text and structured output of a search grouped by sequence (each sequence once)."""
    results = []
    for h in outcome.hits:
        count, updated = summaries.get(h.record.sequence_key, (0, h.record.created_at))
        results.append(
            {
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
        )
    structured: dict[str, Any] = {"results": results, "abstained": outcome.abstained, "by": "sequence"}
    if waiting:
        structured["unindexedThoughts"] = waiting
    shown = query if len(query) <= 80 else query[:77] + "…"
    if outcome.abstained:
        lines = [_abstained_text(shown, outcome)]
    elif not results:
        lines = [f'No stored sequences match "{shown}".']
    else:
        lines = [f'{len(results)} sequence{"s" if len(results) != 1 else ""} for "{shown}":', ""]
        for i, r in enumerate(results, start=1):
            where = f"thought {r['thoughtNumber']}" + (f" on branch {r['branchId']}" if r["branchId"] else "")
            lines.append(f"{i}. {r['title']} [{r['status']}] · {r['thoughtCount']} thoughts · best match {where}")
            lines.append(f"   {r['snippet']}")
            lines.append(f"   {r['sequenceId']} · updated {r['updatedAt']}")
    if waiting:
        lines.append(f"Note: {waiting} recent thoughts are not indexed for meaning yet; keyword matches include them.")
    return ToolOutput(text="\n".join(lines), structured=structured)


def render_search(query: str, outcome: Outcome, waiting: int) -> ToolOutput:
    """Text and structured output of one search."""
    results = [
        {
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
        for h in outcome.hits
    ]
    structured: dict[str, Any] = {"results": results, "abstained": outcome.abstained, "by": "thought"}
    if waiting:
        structured["unindexedThoughts"] = waiting
    shown = query if len(query) <= 80 else query[:77] + "…"
    if outcome.abstained:
        lines = [_abstained_text(shown, outcome)]
    elif not results:
        lines = [f'No stored thoughts match "{shown}".']
    else:
        lines = [f'{len(results)} result{"s" if len(results) != 1 else ""} for "{shown}":', ""]
        for i, (r, h) in enumerate(zip(results, outcome.hits, strict=True), start=1):
            where = f"thought {r['thoughtNumber']}" + (f" on branch {r['branchId']}" if r["branchId"] else "")
            sim = (
                f"similarity {h.similarity:.2f}"
                if h.similarity is not None
                else ("keyword match" if h.keyword else "next to a match")
            )
            lines.append(f"{i}. {r['title']} [{r['status']}] · {where} · {sim}")
            lines.append(f"   {r['snippet']}")
            lines.append(f"   {r['sequenceId']} · {r['createdAt']}")
    if waiting:
        lines.append(f"Note: {waiting} recent thoughts are not indexed for meaning yet; keyword matches include them.")
    return ToolOutput(text="\n".join(lines), structured=structured)


def _manage_handler(discovery: bool) -> Callable[[Mapping[str, Any], ToolContext], Any]:
    async def handle(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
        allowed = {"action", "sequenceId", "status", "limit"} if discovery else {"action", "sequenceId"}
        reject_unknown(args, frozenset(allowed))
        action = args.get("action")
        choices = (*ACTIONS, LIST_ACTION) if discovery else ACTIONS
        if action not in choices:
            raise invalid(f"'action' must be one of {', '.join(choices)}; got {str(action)[:30]!r}.")
        if action == LIST_ACTION:
            return await _list(args, ctx)
        sequence_id = coerce_sequence_id(args, "sequenceId")
        if sequence_id is None:
            raise invalid(f"'sequenceId' is required to {action} a sequence: the id sequentialthinking returned.")
        return await _transition(str(action), sequence_id, ctx)

    return handle


async def _transition(action: str, sequence_id: str, ctx: ToolContext) -> ToolOutput:
    status = TARGET_STATUS[action]
    at = now_ms(ctx.clock)
    changed = await ctx.store.write(lambda conn: lifecycle_store.set_status(conn, sequence_id, status, at))
    if not changed:
        raise DomainError("sequence_not_found", f"no sequence {sequence_id} in your store; check the id.")

    def snapshot(conn: Any) -> tuple[store.SequenceRow | None, list[history_store.ThoughtRow]]:
        seq = store.get_sequence(conn, sequence_id)
        last = history_store.history_rows(conn, seq.rowid, True, None, "desc", 1) if seq else []
        return seq, last

    seq, last = await ctx.store.read(snapshot)
    if seq is None:  # deleted between the two calls
        raise DomainError("sequence_not_found", f"sequence {sequence_id} was deleted meanwhile.")
    structured: dict[str, Any] = {
        "sequenceId": sequence_id,
        "status": seq.status,
        "thoughtHistoryLength": seq.thought_count,
        "totalThoughts": seq.total_thoughts,
    }
    lines = [f"Sequence {sequence_id} is now {seq.status}: {seq.title}"]
    if action == "resume" and last:
        t = last[0]
        structured["lastThought"] = {
            "thoughtNumber": t.number,
            "totalThoughts": t.total,
            "thought": t.body,
            **({"branchId": t.branch_name} if t.branch_name else {}),
            "nextThoughtNeeded": t.next_needed,
        }
        where = f" on branch {t.branch_name}" if t.branch_name else ""
        lines += [
            "",
            f"Last thought ({t.number}/{t.total}{where}):",
            t.body,
            "",
            f"Continue with sequentialthinking, sequenceId {sequence_id}, thoughtNumber {t.number + 1}.",
        ]
    return ToolOutput(text="\n".join(lines), structured=structured)


async def _list(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutput:
    status = args.get("status")
    if status is not None and status not in STATUSES:
        raise invalid(f"'status' must be one of {', '.join(STATUSES)}; got {str(status)[:30]!r}.")
    limit = coerce_int(args, "limit", high=MAX_LIMIT) or DEFAULT_LIMIT
    found = await ctx.store.read(lambda conn: lifecycle_store.list_sequences(conn, status, limit))
    items = [
        {
            "sequenceId": s.sequence_id,
            "title": s.title,
            "status": s.status,
            "thoughtHistoryLength": s.thought_count,
            "parentSequenceId": s.parent_sequence_id,
            "createdAt": store.iso(s.created_at),
            "updatedAt": store.iso(s.updated_at),
        }
        for s in found
    ]
    kind = f"{status} sequences" if status else "sequences"
    lines = [f"{len(items)} most recently updated {kind}:" if items else f"No {kind} stored."]
    lines += [f"- {i['sequenceId']} [{i['status']}] {i['title']} ({i['thoughtHistoryLength']} thoughts)" for i in items]
    return ToolOutput(text="\n".join(lines), structured={"sequences": items})
