"""Reviewing thread proposals (SPEC §5.3): list (after finishing pending matching), accept, reject.

The one implementation behind `review_proposals` and the REST proposal routes. Listing first
runs `match_pending` within a time budget, so a list right after a completing write already
holds its proposals, and a large backlog (hundreds of threads created at once) never holds the
answer for long: the page says how much matching is left, and the post-commit drain (kicked by
each step's commit) or the next list finishes it;
accept and reject are one write transaction each. Pages are signed cursors (`library/cursors.py`,
purpose PROPOSALS) bound to the thread filter.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import apsw

from thoughtline.domain.arguments import PROPOSAL_PREFIX
from thoughtline.errors import DomainError, invalid
from thoughtline.library import cursors
from thoughtline.library.search import make_snippet
from thoughtline.library.term_cache import TermCaches
from thoughtline.storage import proposals as proposal_store
from thoughtline.storage import threads as thread_store
from thoughtline.storage.router import UserStore
from thoughtline.storage.rows import cursor_secret

if TYPE_CHECKING:
    from thoughtline.library.embed import Embedder
    from thoughtline.library.proposals import Vector

EVIDENCE_CHARS = 200
# Matching a list runs before answering, at most (plus one step): like search's inline embedding.
MATCH_BUDGET_SECONDS = 2.0
MAX_LIMIT = 50
DEFAULT_LIMIT = 20


def proposal_id(rowid: int) -> str:
    """The public id of a proposal row."""
    return f"{PROPOSAL_PREFIX}{rowid}"


@dataclass(frozen=True)
class Proposal:
    """A pending proposal: the pair, how similar, the best-matching thought's snippet, when (ms)."""

    proposal_id: str
    thread: str
    sequence_id: str
    title: str
    similarity: float
    evidence: str
    proposed_at: int


@dataclass(frozen=True)
class ProposalPage:
    """One page of pending proposals, the cursor of the next (or None), and matching still to do.

    `matching` is None when nothing is left; otherwise the page may lack proposals still to come.
    """

    proposals: tuple[Proposal, ...]
    next_cursor: str | None
    matching: proposal_store.PendingWork | None = None
    total: int = 0  # every pending proposal the walk goes through, this page's included


@dataclass(frozen=True)
class Decision:
    """An accepted (`member`, addedBy review) or rejected proposal."""

    proposal_id: str
    thread: str
    sequence_id: str
    member: bool


def _proposal(p: proposal_store.ProposalRow) -> Proposal:
    return Proposal(
        proposal_id=proposal_id(p.rowid),
        thread=p.thread,
        sequence_id=p.sequence_id,
        title=p.title,
        similarity=round(p.similarity, 3),
        evidence=make_snippet(p.evidence, [], EVIDENCE_CHARS),
        proposed_at=p.proposed_at,
    )


def _after(secret: str, thread: int | None, token: str | None) -> int:
    if token is None:
        return 0
    filtered, after = cursors.read(secret, cursors.Purpose.PROPOSALS, token, 2)
    if filtered != thread:
        raise invalid("'cursor' was issued for another 'thread' filter; pass the same thread, or start again.")
    return int(after)


class ProposalReview:
    """Review over one process's embedder (created on first use), keeping description vectors across calls."""

    def __init__(
        self,
        embedder: Callable[[], Embedder],
        terms: TermCaches | None = None,
        budget_seconds: float | None = None,
    ) -> None:
        self._embedder = embedder
        self._budget = budget_seconds
        self._descriptions: dict[str, Vector | None] = {}
        self._terms = terms if terms is not None else TermCaches()

    async def pending(self, opened: UserStore, thread: str | None, limit: int, cursor: str | None) -> ProposalPage:
        """Pending proposals of active threads (one thread's, or all), oldest first."""
        if thread is not None:
            await opened.read(lambda conn: thread_store.require_thread(conn, thread))
        # The matching module brings numpy, which a cold start must not import (SPEC §7).
        from thoughtline.library.matching import match_pending

        await match_pending(
            opened,
            self._embedder,
            cache=self._descriptions,
            terms=self._terms.for_store(opened),
            budget_seconds=MATCH_BUDGET_SECONDS if self._budget is None else self._budget,
        )

        def read(conn: apsw.Connection) -> ProposalPage:
            found_thread = thread_store.require_thread(conn, thread) if thread is not None else None
            rowid = None if found_thread is None else found_thread.rowid
            secret = cursor_secret(conn)
            found = proposal_store.list_proposals(conn, rowid, _after(secret, rowid, cursor), limit + 1)
            shown = found[:limit]
            more = len(found) > limit and bool(shown)
            token = cursors.issue(secret, cursors.Purpose.PROPOSALS, [rowid, shown[-1].rowid]) if more else None
            left = proposal_store.pending_work(conn)
            matching = left if left.threads or left.sequences else None
            total = proposal_store.count_proposals(conn, rowid)
            return ProposalPage(tuple(_proposal(p) for p in shown), token, matching, total)

        return await opened.read(read)

    async def decide(self, opened: UserStore, rowid: int, accept: bool, now_ms: int) -> Decision:
        """Accept (the sequence joins, addedBy review) or reject (never proposed again) one proposal."""

        def write(conn: apsw.Connection) -> Decision:
            found = proposal_store.get_proposal(conn, rowid)
            if found is None:
                raise DomainError(
                    "proposal_not_found",
                    f"no pending proposal {proposal_id(rowid)}; it may have been accepted or rejected already. "
                    "List the current ones with review_proposals action 'list'.",
                    api_message=f"no pending proposal {proposal_id(rowid)}; it may have been accepted or rejected "
                    "already. List the current ones with GET /api/v1/proposals.",
                )
            if found.thread_archived:
                # Archiving stops proposals (SPEC §5.3); the pending ones wait for an unarchive.
                raise DomainError(
                    "thread_archived",
                    f"thread {found.thread!r} is archived, so its proposals are on hold; unarchive it with "
                    "configure_thread action 'unarchive' to review them.",
                    api_message=f"thread {found.thread!r} is archived, so its proposals are on hold; unarchive it "
                    'with PATCH /api/v1/threads/{name} and {"status": "active"} to review them.',
                )
            if accept:
                thread_store.add_member(conn, found.thread_rowid, found.sequence_rowid, "review", now_ms)
            else:
                proposal_store.reject(conn, found, now_ms)
            return Decision(proposal_id(rowid), found.thread, found.sequence_id, accept)

        return await opened.write(write)
