"""A whole library search, from a checked request to a typed result (SPEC §5.1).

The MCP tool (and the REST route) parse their arguments into a `SearchRequest`, call `search`,
and only render the `SearchResult`. Everything the search reads comes from one read snapshot:
the thread check, the store's model, the ranking, the queue of thoughts still without vectors
and, for results grouped by sequence, how each sequence ended. The query's phrasings are
embedded in that snapshot's worker thread, in one call, never on the event loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import apsw

from thoughtline.errors import DomainError
from thoughtline.library import model_identity
from thoughtline.library.query import build_query
from thoughtline.library.retrieval import search_query
from thoughtline.library.search import make_snippet
from thoughtline.library.search_types import Hit, Outcome, Scope, Tuning
from thoughtline.storage import search as search_store
from thoughtline.storage import vectors as vector_store
from thoughtline.storage.search import SearchFilters, SequenceEnd

if TYPE_CHECKING:
    from thoughtline.library.after_commit import AfterCommitWork
    from thoughtline.storage.router import UserStore

# Bands of the first result's similarity for the one-line verdict. On the reasoning set's dev
# split with alternatives (MiniLM; the best cosine of any phrasing), a first result that answers
# the question has median 0.66 (10th percentile 0.50), a near miss's best median 0.37 (90th
# percentile 0.51), a foreign question's median 0.30. The bands tell the agent how hard to read
# the snippets, never what to drop.
STRONG_SIMILARITY = 0.6
FAIR_SIMILARITY = 0.45
CONCLUSION_CHARS = 200


@dataclass(frozen=True)
class SearchRequest:
    """A checked `search_thoughts` request."""

    question: str
    alternatives: tuple[str, ...] = ()
    limit: int = 10
    by: str = "thought"
    filters: SearchFilters = field(default_factory=SearchFilters)


@dataclass(frozen=True)
class Conclusion:
    """How a sequence ended: its final thought's opening, or its latest while it is still open."""

    thought_number: int
    branch: str | None
    text: str
    final: bool


@dataclass(frozen=True)
class Found:
    """One result: the hit, and for results grouped by sequence its sequence's size and conclusion."""

    hit: Hit
    thought_count: int | None = None
    updated_at: int | None = None
    conclusion: Conclusion | None = None


@dataclass(frozen=True)
class SearchResult:
    """What a search found, how strong its best match is, and how many thoughts wait for vectors."""

    request: SearchRequest
    outcome: Outcome
    found: list[Found]
    unindexed: int
    # "strong", "fair" or "weak" by the best match's similarity; "keyword" without one; "none".
    strength: str
    # True when the filters leave no stored thought at all to rank (not an abstention).
    filtered_out: bool = False


def strength_of(outcome: Outcome) -> str:
    """The one-word verdict on the best match (the first result's similarity)."""
    if outcome.abstained or not outcome.hits:
        return "none"
    best = outcome.hits[0].similarity
    if best is None:
        return "keyword"
    if best >= STRONG_SIMILARITY:
        return "strong"
    return "fair" if best >= FAIR_SIMILARITY else "weak"


async def search(work: AfterCommitWork, opened: UserStore, request: SearchRequest) -> SearchResult:
    """Run one search on a user's store: embed what is missing, then read everything in one snapshot."""
    # Thoughts written since the last search get their vectors now (bounded; see INLINE_MAX).
    await work.embed_for_search(opened)
    embedder = work.embedder()
    current = await work.model_id()
    index = work.index_for(opened)
    filters = request.filters

    def run(conn: apsw.Connection) -> SearchResult:
        if filters.thread is not None and not search_store.thread_exists(conn, filters.thread):
            raise DomainError(
                "thread_not_found", f"no thread named {filters.thread!r}; check the name or omit 'thread'."
            )
        if filters.sequence_id is not None and not search_store.sequence_exists(conn, filters.sequence_id):
            raise DomainError(
                "sequence_not_found",
                f"no sequence {filters.sequence_id} in your store; check the id or omit 'sequenceId'.",
            )
        waiting = vector_store.pending_count(conn)
        if filters.active and not search_store.any_thought_matches(conn, filters):
            # Nothing to rank is not "nothing relevant": the filters removed everything.
            return SearchResult(request, Outcome([], False, None), [], waiting, "none", filtered_out=True)
        # Checked in the search's own snapshot: vectors another model made are never compared
        # with this query. Until they are queued again (above, or by the background work, in
        # one transaction), the search answers by keyword.
        usable = embedder if model_identity.store_model(conn) == current else None
        query = build_query(request.question, request.alternatives, usable, index.helper)
        # Abstaining means being confident nothing stored is related (SPEC §5.1), which a search
        # cannot be while some thoughts have no vector: it ranks what it has instead (the
        # keyword side covers the unindexed ones) and says how many are not indexed yet.
        tuning = Tuning(abstain=not waiting)
        outcome = search_query(conn, query, Scope(filters, tuning, index), limit=request.limit, by=request.by)
        if waiting and outcome.abstained:
            outcome = replace(outcome, abstained=False)
        found = [Found(h) for h in outcome.hits]
        if request.by == "sequence":
            ends = search_store.sequence_ends(conn, [h.record.sequence_key for h in outcome.hits])
            found = [_with_end(h, ends.get(h.record.sequence_key)) for h in outcome.hits]
        return SearchResult(request, outcome, found, waiting, strength_of(outcome))

    return await opened.read(run)


def _with_end(hit: Hit, end: SequenceEnd | None) -> Found:
    if end is None:  # a sequence deleted between ranking and this read cannot happen in one snapshot
        return Found(hit, 0, hit.record.created_at)
    conclusion = Conclusion(
        end.last_number, end.last_branch, make_snippet(end.last_body, [], CONCLUSION_CHARS), end.finished
    )
    return Found(hit, end.thought_count, end.updated_at, conclusion)
