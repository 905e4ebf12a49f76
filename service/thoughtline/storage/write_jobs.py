"""Running one commit group's jobs and answering their callers (the writer thread's inner loop).

Each job is a function of the write connection plus the future its caller awaits. A group's jobs
run in the writer's open transaction, each in its own savepoint when there are several, so a
failing one rolls back alone; callers are answered with one wake-up per event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import apsw

T = TypeVar("T")


@dataclass
class Job(Generic[T]):
    """One queued write: `fn(conn)` to run, and the future (on `loop`) its caller awaits."""

    fn: Callable[[apsw.Connection], T]
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[T]


Outcome = tuple[Job[Any], Any, BaseException | None]


def settle(outcomes: list[Outcome]) -> None:
    """Resolve each job's future with its result or error, with one wake-up per event loop.

    A group's callers usually wait on one loop; one `call_soon_threadsafe` (one self-pipe write
    and one callback) for all of them instead of one each keeps the writer thread's share of a
    large group small (issue 19).
    """
    by_loop: dict[asyncio.AbstractEventLoop, list[Outcome]] = {}
    for outcome in outcomes:
        by_loop.setdefault(outcome[0].loop, []).append(outcome)
    for loop, settled in by_loop.items():
        # A closed loop (shutdown) raises RuntimeError: then nobody is waiting for the answer.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(_apply, settled)


def _apply(outcomes: list[Outcome]) -> None:
    for job, result, error in outcomes:
        if job.future.done():  # the caller went away (cancelled); nothing to tell
            continue
        if error is not None:
            job.future.set_exception(error)
        else:
            job.future.set_result(result)


def run_jobs(conn: apsw.Connection, group: list[Job[Any]]) -> list[Outcome] | None:
    """Run a group's jobs in the open transaction, each in its own savepoint so a failing one rolls back alone.

    A job alone needs no savepoint (two statements fewer on every sequential write): when it
    fails, the transaction holds nothing else, so it is rolled back whole and the caller told
    here (None: nothing to commit).
    """
    if len(group) > 1:
        return [_run_in_savepoint(conn, job) for job in group]
    job = group[0]
    try:
        return [(job, job.fn(conn), None)]
    except BaseException as exc:
        if conn.get_autocommit():
            raise  # SQLite rolled back already (I/O error, full disk): the caller's storage failure
        rollback(conn)
        settle([(job, None, exc)])
        return None


def _run_in_savepoint(conn: apsw.Connection, job: Job[Any]) -> Outcome:
    """One job of a group, inside its own savepoint so a failing job rolls back alone."""
    conn.execute("SAVEPOINT job")
    try:
        result = job.fn(conn)
    except BaseException as exc:
        if conn.get_autocommit():
            # SQLite already rolled the whole transaction back (an I/O error, a full disk): the
            # savepoint is gone, and so are the group's earlier writes.
            raise
        conn.execute("ROLLBACK TO job")
        conn.execute("RELEASE job")
        return job, None, exc
    conn.execute("RELEASE job")
    return job, result, None


def rollback(conn: apsw.Connection) -> None:
    """ROLLBACK the open transaction, if SQLite has not already."""
    # A failing ROLLBACK must not kill the writer thread: the callers are told about the first error.
    if not conn.get_autocommit():
        with contextlib.suppress(apsw.Error):
            conn.execute("ROLLBACK")
