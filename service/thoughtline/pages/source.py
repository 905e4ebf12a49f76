"""Where the pages get their data and send their changes: the library's own operations.

Every read and every curation a page offers calls the same library function as its MCP tool and
its API route, in the caller's own store (the principal the session gate bound), with the same
argument rules (`domain/arguments.py`), and reads the result in the API's JSON shape (`wire/`).
A refusal is the library's `DomainError`, code and message intact. Nothing here opens a
connection, writes SQL or decides a rule.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import apsw

from thoughtline.clock import Clock, now_ms
from thoughtline.domain.arguments import (
    parse_description,
    parse_history,
    parse_proposal_id,
    parse_thread_type,
    require_sequence_id,
)
from thoughtline.domain.thread_names import check_name
from thoughtline.identity import current_principal
from thoughtline.library import history, sequences, threads
from thoughtline.library.badges import thread_badges
from thoughtline.library.briefing import read_briefing
from thoughtline.library.review import ProposalReview
from thoughtline.library.threads import DEFAULT_THREAD_PAGE, MAX_THREAD_PAGE, Periods, ThreadChange
from thoughtline.storage.router import StoreRouter, UserStore
from thoughtline.wire.history import history_json
from thoughtline.wire.proposals import decision_json
from thoughtline.wire.proposals import page_json as proposals_json
from thoughtline.wire.sequences import summary_json
from thoughtline.wire.threads import briefing_json, thread_json, thread_page_json

Search = Callable[[UserStore, Mapping[str, Any]], Awaitable[dict[str, Any]]]
"""`(store, search_thoughts arguments) -> structured result`: the library's search, as the API gets it."""

HISTORY_PAGE = 100
HISTORY_CHARACTERS = 250_000
# A sequence page shows at most this many thoughts and links the next ones.
MAX_SHOWN_THOUGHTS = 1_000
BRIEFING_EVENTS = 100
# A sequence page suggests at most this many threads to pin it to (the thread list's page limit).
PIN_CHOICES = MAX_THREAD_PAGE


@dataclass(frozen=True)
class Source:
    """The library's operations for the current caller, in the API's shapes."""

    router: StoreRouter
    clock: Clock
    periods: Periods
    review: ProposalReview
    search_fn: Search | None  # None with the library off

    @asynccontextmanager
    async def _store(self) -> AsyncIterator[UserStore]:
        opened = await self.router.get(current_principal().user_key)
        with opened.in_use():  # not evicted between this request's reads and writes
            yield opened

    def _now(self) -> int:
        return now_ms(self.clock)

    def library_on(self) -> bool:
        """Whether discovery (lists, search, threads) exists: THOUGHTLINE_LIBRARY=on."""
        return self.search_fn is not None

    async def sequences(
        self, *, status: str | None, thread: str | None, limit: int, cursor: str | None
    ) -> dict[str, Any]:
        """A page of recent sequences, newest first, each with the threads it belongs to."""
        if thread is not None:
            thread = check_name(thread, "thread")  # a name no thread can hold is a mistake, as in the API
        async with self._store() as opened:
            page = await sequences.list_sequences(opened, status, thread, limit, cursor)
            badges = await thread_badges(opened, page.sequences)
        listed = [{**summary_json(s), "threads": badges.get(s.sequence_id, [])} for s in page.sequences]
        return {"sequences": listed, "nextCursor": page.next_cursor}

    async def history(self, sequence_id: str, cursor: str | None = None) -> dict[str, Any]:
        """A sequence's record and its thoughts oldest first, up to MAX_SHOWN_THOUGHTS, and what follows.

        Every page of the history tool is read in one snapshot, so the page shows one moment of
        the sequence even while an agent is still writing to it.
        """
        # The order is said, not left to the cursor: a cursor the API issued newest first is refused
        # here rather than turning this page into that view.
        args: dict[str, Any] = {
            "sequenceId": sequence_id,
            "limit": HISTORY_PAGE,
            "maxCharacters": HISTORY_CHARACTERS,
            "order": "asc",
        }
        if cursor:
            args["cursor"] = cursor

        def read(conn: apsw.Connection) -> list[history.HistoryPage]:
            pages = [history.page(conn, parse_history(args))]
            shown = len(pages[-1].thoughts)
            while pages[-1].next_cursor and shown < MAX_SHOWN_THOUGHTS:
                pages.append(history.page(conn, parse_history({**args, "cursor": pages[-1].next_cursor})))
                shown += len(pages[-1].thoughts)
            return pages

        async with self._store() as opened:
            pages = [history_json(p) for p in await opened.read(read)]
        thoughts = [t for p in pages for t in p["thoughts"]]
        return {"sequence": pages[-1]["sequence"], "thoughts": thoughts, "nextCursor": pages[-1]["nextCursor"]}

    async def search(self, query: str, *, limit: int) -> dict[str, Any]:
        """Sequences matching `query`, best first (the search tool's operation, one hit per sequence)."""
        if self.search_fn is None:
            return {"results": []}
        async with self._store() as opened:
            return await self.search_fn(opened, {"query": query, "by": "sequence", "limit": limit})

    async def pin_choices(self) -> dict[str, Any]:
        """The first PIN_CHOICES active threads by name and how many there are (a sequence page's pin suggestions).

        Bounded: a store may hold thousands of threads, and any of them can still be typed by name.
        """
        async with self._store() as opened:
            found = await threads.thread_page(opened, self.periods, self._now(), False, PIN_CHOICES, None)
        return {"names": [t.name for t in found.threads], "threadCount": found.thread_count}

    async def thread_page(self, *, cursor: str | None) -> dict[str, Any]:
        """One page of every thread (archived too) by name, as GET /api/v1/threads pages them."""
        async with self._store() as opened:
            found = await threads.thread_page(opened, self.periods, self._now(), True, DEFAULT_THREAD_PAGE, cursor)
        return thread_page_json(found, True)

    async def briefing(self, name: str) -> dict[str, Any]:
        """A thread's briefing: state, type, open blockers and questions, decisions, events, members."""
        async with self._store() as opened:
            found = await read_briefing(
                opened, check_name(name), now_ms=self._now(), periods=self.periods, events_limit=BRIEFING_EVENTS
            )
        return briefing_json(found)

    async def proposals(self, *, cursor: str | None, limit: int) -> dict[str, Any]:
        """One page of pending thread proposals and the next page's cursor."""
        async with self._store() as opened:
            return proposals_json(await self.review.pending(opened, None, limit, cursor))

    async def decide(self, proposal_id: str, accept: bool) -> dict[str, Any]:
        """Accept or reject one proposal."""
        rowid = parse_proposal_id({"proposalId": proposal_id})
        async with self._store() as opened:
            return decision_json(await self.review.decide(opened, rowid, accept, self._now()))

    async def create_thread(self, name: str, description: str) -> dict[str, Any]:
        """A new thread."""
        text = parse_description({"description": description}, required=False) or ""
        async with self._store() as opened:
            created = await threads.create_thread(opened, self.periods, self._now(), check_name(name), text)
        return thread_json(created)

    async def change_thread(self, name: str, step: str, value: str = "") -> dict[str, Any]:
        """Rename, describe, archive or unarchive a thread; returns the thread after the change."""
        change = {
            "rename": lambda: ThreadChange(new_name=check_name(value, "newName")),
            "set_description": lambda: ThreadChange(
                description=parse_description({"description": value}, required=True)
            ),
            "archive": lambda: ThreadChange(status="archived"),
            "unarchive": lambda: ThreadChange(status="active"),
            "set_type": lambda: ThreadChange(type=parse_thread_type(value)),
        }[step]()
        async with self._store() as opened:
            changed = await threads.change_thread(opened, self.periods, self._now(), check_name(name), change)
        return thread_json(changed.thread)

    async def membership(self, name: str, sequence_id: str, member: bool) -> None:
        """Pin a sequence to a thread (addedBy user), or unpin it."""
        sequence = require_sequence_id({"sequenceId": sequence_id})
        async with self._store() as opened:
            await threads.set_membership(
                opened, self.periods, self._now(), check_name(name, "thread"), sequence, member
            )

    async def lifecycle(self, sequence_id: str, action: str) -> None:
        """Pause, resume, complete or abandon a sequence."""
        sequence = require_sequence_id({"sequenceId": sequence_id})
        async with self._store() as opened:
            await sequences.change_status(opened, sequence, action, self._now())
