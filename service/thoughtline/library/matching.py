"""Matching after commit: completed sequences against active threads, and thread backfills.

`match_pending` is the one entry point. The Library's post-commit drain calls it, and
`review_proposals list` calls it first so a list is complete (SPEC §5.3). It never runs on the
write path: writes only queue a completed sequence (`thread_match_queue`) or leave a thread's
backfill pending (`threads.backfilled_version`). The work goes in bounded steps, each one read
snapshot, the embedding outside any transaction, and one short write, so the writer is never
held for long; the steps repeat until nothing is pending, or until the caller's time budget is
spent (a list answers in bounded time and says what is left; the drain finishes it).

Every pending backfill advances in the same step, over one shared batch of sequences: a step
reads that batch's vectors and words once and judges it against every thread still backfilling,
so N threads created at once cost one pass over the store, not N.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import apsw
import numpy as np

from thoughtline.library import model_identity, vectors
from thoughtline.library.proposals import (
    TUNING,
    Terms,
    ThreadProfile,
    Tuning,
    Vector,
    enough_words,
    picks,
    sequence_vector,
    term_vector,
    thread_terms,
    thread_vector,
    unit,
)
from thoughtline.library.term_cache import TermCache
from thoughtline.storage import proposals as proposal_store
from thoughtline.storage import threads as thread_store
from thoughtline.storage import vectors as vector_store

if TYPE_CHECKING:
    from thoughtline.library.embed import Embedder
    from thoughtline.storage.router import UserStore

# Sequences matched per step (queued ones, and the next batch of the pending backfills).
SCAN = 200
# A proposal to write: (thread, sequence, similarity, evidence thought, proposed at).
Row = tuple[int, int, float, int, int]
# A thread's words come from its description and its newest member sequences, at most this many: what it
# is about now, and a bound on the text read and the terms looked up per step, whatever its size.
WORD_MEMBERS = 16
# Thoughts of the sequences involved that are embedded per step when their vectors are missing.
EMBED_BATCH = 256


@dataclass
class _Plan:
    """One step's snapshot: what to match, against which threads, with which vectors."""

    threads: list[proposal_store.ThreadBasis]
    members: dict[int, list[int]]
    queue: list[tuple[int, int]]
    # The threads whose backfill is pending, and the next sequences they share: (row id, created_at).
    backfills: list[proposal_store.ThreadBasis]
    batch: list[tuple[int, int]]
    missing: list[int]
    vectors: dict[int, tuple[list[int], list[bytes]]] = field(default_factory=dict)
    # Words: term counts of each sequence involved and of each description, and the store's
    # statistics of those terms (from the keyword index, in the same snapshot).
    words: dict[int, Counter[str]] = field(default_factory=dict)
    description_words: dict[str, Counter[str]] = field(default_factory=dict)
    statistics: thread_store.TermStatistics = field(default_factory=lambda: thread_store.TermStatistics(0, {}))


@dataclass
class _Memo:
    """What one `match_pending` call reads once and reuses across its steps.

    The steps of one call (queued sequences, backfill batches, against the same members) meet
    the same sequences and words again and again. A sequence's words are kept with the thoughts they were
    read from, and read again when that set changed. Term frequencies live longer, in the
    store's `TermCache` (exact at each step's snapshot, kept across calls).
    """

    terms: TermCache
    words: dict[int, tuple[tuple[int, ...], Counter[str]]] = field(default_factory=dict)
    # sequence -> (the word counts and thought count it was weighed with, its TF-IDF vector)
    weights: dict[int, tuple[Counter[str], int, Terms]] = field(default_factory=dict)
    # (description, members, thought count) -> the thread's words
    threads: dict[tuple[str, tuple[int, ...], int], Terms] = field(default_factory=dict)
    # description -> its term counts (tokenized once per call, not once per step)
    descriptions: dict[str, Counter[str]] = field(default_factory=dict)


def _plan(conn: apsw.Connection, memo: _Memo) -> _Plan | None:
    queue = proposal_store.queued(conn, SCAN)
    threads = proposal_store.active_threads(conn)
    backfills = [t for t in threads if t.backfill_pending]
    if not queue and not backfills:
        return None
    batch: list[tuple[int, int]] = []
    if backfills:
        # One batch for all: from the least advanced cursor, up to the latest description time;
        # `_decide` gives each thread only the sequences past its cursor and stored by its time.
        after = min(t.backfill_after for t in backfills)
        batch = proposal_store.sequences_after(conn, after, max(t.updated_at for t in backfills), SCAN)
    members = proposal_store.members_of(conn, [t.rowid for t in threads])
    plan = _Plan(threads, members, queue, backfills, batch, [])
    if not threads:
        return plan
    batched = {s for s, _ in batch}
    involved = sorted({s for s, _ in queue} | batched | {s for m in members.values() for s in m})
    plan.missing = proposal_store.unembedded_thoughts(conn, involved, EMBED_BATCH)
    grouped: dict[int, tuple[list[int], list[bytes]]] = defaultdict(lambda: ([], []))
    for seq, thought, blob in proposal_store.thought_vectors(conn, involved):
        grouped[seq][0].append(thought)
        grouped[seq][1].append(blob)
    plan.vectors = dict(grouped)
    embedded = {seq: tuple(ids) for seq, (ids, _) in plan.vectors.items()}
    # The same members `_decide` takes words from: the newest ones that have a vector.
    newest = {s for m in members.values() for s in [x for x in m if x in plan.vectors][-WORD_MEMBERS:]}
    worded = sorted({s for s, _ in queue} | batched | newest)
    stale = [s for s in worded if s not in memo.words or memo.words[s][0] != embedded.get(s, ())]
    read = thread_store.sequence_terms(conn, stale)
    memo.words.update({s: (embedded.get(s, ()), read.get(s, Counter())) for s in stale})
    plan.words = {s: memo.words[s][1] for s in worded if memo.words[s][1]}
    for text in {t.description for t in threads} - memo.descriptions.keys():
        memo.descriptions[text] = Counter(thread_store.terms(conn, text))
    plan.description_words = {t.description: memo.descriptions[t.description] for t in threads}
    wanted = {term for counts in (*plan.words.values(), *plan.description_words.values()) for term in counts}
    plan.statistics = memo.terms.statistics(conn, wanted)
    return plan


def _matrix(blobs: Sequence[bytes]) -> np.ndarray:
    return np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1)


def _model_id(embedder: Embedder) -> str:
    return embedder.model_id  # hashes the model file the first time: off the event loop


async def _embed_missing(opened: UserStore, embedder: Embedder, current: str, thought_ids: Sequence[int]) -> int:
    pending = await opened.read(lambda conn: vector_store.pending_thoughts(conn, thought_ids))
    rows = await asyncio.to_thread(vectors.embed_pending, embedder, pending)
    return await opened.write(lambda conn: vector_store.store_vectors(conn, rows, made_by=current))


# A shared description cache is cleared when it grows past this many texts.
CACHE_MAX = 4_096


class _Descriptions:
    """Description embeddings, computed once per `match_pending` call (or kept in a shared cache)."""

    def __init__(self, embedder: Embedder, known: dict[str, Vector | None] | None) -> None:
        self._embedder = embedder
        self._known: dict[str, Vector | None] = {} if known is None else known
        if len(self._known) > CACHE_MAX:
            self._known.clear()

    async def vectors(self, texts: Sequence[str]) -> dict[str, Vector | None]:
        new = sorted({t for t in texts if t not in self._known and t.strip()})
        if new:
            matrix = await asyncio.to_thread(self._embedder.embed, new)
            self._known.update({text: unit(matrix[i]) for i, text in enumerate(new)})
        return {t: self._known.get(t) for t in texts}


def _decide(plan: _Plan, descriptions: dict[str, Vector | None], tuning: Tuning, memo: _Memo) -> list[Row]:
    """The proposals of one step: every (thread, sequence) pair whose similarity reaches the threshold."""
    stats = plan.statistics
    seq_vectors: dict[int, Vector] = {}
    for seq, (_, blobs) in plan.vectors.items():
        v = sequence_vector(_matrix(blobs))
        if v is not None:
            seq_vectors[seq] = v
    seq_words: dict[int, Terms] = {}
    for seq, counts in plan.words.items():
        # A sequence's TF-IDF is kept while its words and the thought count stay the same.
        kept = memo.weights.get(seq)
        if kept is None or kept[0] is not counts or kept[1] != stats.documents:
            kept = (counts, stats.documents, term_vector(counts, stats.frequency, stats.documents))
            memo.weights[seq] = kept
        seq_words[seq] = kept[2]
    profiles: dict[int, ThreadProfile] = {}
    for t in plan.threads:
        member_ids = [s for s in plan.members.get(t.rowid, []) if s in seq_vectors]
        vector = thread_vector(descriptions.get(t.description), [seq_vectors[s] for s in member_ids], tuning.blend_k)
        worded = member_ids[-WORD_MEMBERS:]
        key = (t.description, tuple(worded), stats.documents)
        words = memo.threads.get(key)
        if words is None:
            counts = plan.description_words.get(t.description, Counter())
            described = term_vector(counts, stats.frequency, stats.documents)
            words = thread_terms(described, [seq_words.get(s, {}) for s in worded], tuning.blend_k)
            memo.threads[key] = words
        profiles[t.rowid] = ThreadProfile(vector, words)
    out: list[Row] = []

    def match(seq: int, against: dict[int, ThreadProfile]) -> list[tuple[int, float, int]]:
        if seq not in plan.vectors:
            return []
        ids, blobs = plan.vectors[seq]
        # A member is never proposed (the write re-checks, with rejections, in its transaction).
        open_threads = {t: p for t, p in against.items() if seq not in plan.members.get(t, [])}
        words = seq_words.get(seq, {})
        if not enough_words(words):
            return []
        found = picks(open_threads, ids, _matrix(blobs), words, tuning)
        return [(p.thread, p.similarity, p.evidence_thought) for p in found]

    # A completed sequence is matched against every active thread and proposed when it was
    # written; a backfilled one only against the threads backfilling past it that were described
    # after it was stored, each proposed at its description time.
    for seq, queued_at in plan.queue:
        out += [(thread, seq, sim, evidence, queued_at) for thread, sim, evidence in match(seq, profiles)]
    described_at = {t.rowid: t.updated_at for t in plan.backfills}
    for seq, created_at in plan.batch:
        wanting = {
            t.rowid: profiles[t.rowid]
            for t in plan.backfills
            if t.rowid in profiles and seq > t.backfill_after and created_at <= t.updated_at
        }
        if wanting:
            out += [(thread, seq, sim, evidence, described_at[thread]) for thread, sim, evidence in match(seq, wanting)]
    return out


def _commit(plan: _Plan, picks: Sequence[Row]) -> Callable[[apsw.Connection], int]:
    def write(conn: apsw.Connection) -> int:
        made = proposal_store.record_proposals(conn, picks)
        proposal_store.dequeue(conn, plan.queue)
        # A short batch reached the end for every thread (each one's range lies within it).
        done = len(plan.batch) < SCAN
        last = plan.batch[-1][0] if plan.batch else 0
        for thread in plan.backfills:
            proposal_store.advance_backfill(conn, thread, max(thread.backfill_after, last), done=done)
        return made

    return write


async def match_pending(
    opened: UserStore,
    embedder: Callable[[], Embedder],
    tuning: Tuning = TUNING,
    cache: dict[str, Vector | None] | None = None,
    terms: TermCache | None = None,
    budget_seconds: float | None = None,
    monotonic: Callable[[], float] = time.monotonic,
) -> int:
    """Do the pending matches of one store; returns how many proposals were made.

    Without `budget_seconds` every pending match is finished. With it, no new step starts
    unless one as long as the last still fits in the budget, so the caller answers in bounded
    time and the rest stays pending (`proposal_store.pending_work` counts it). The first step
    that asks for the model and the first that embeds are not charged: a cold model load alone
    would otherwise spend the budget before a just-completed sequence is matched.

    Cheap when nothing is pending (one read, no model load). Missing vectors of the sequences
    involved are embedded first, in bounded batches. `cache` keeps description embeddings
    across calls (text -> vector, for one embedder); `terms` the store's term statistics (its
    library's `TermCaches.for_store`; a fresh cache without it).
    """
    if not await opened.read(proposal_store.has_pending_work):
        return 0
    descriptions: _Descriptions | None = None
    made = 0
    stalled: list[int] = []
    current: str | None = None  # the model id, asked for only once something needs the model
    memo = _Memo(terms if terms is not None else TermCache())
    deadline = None if budget_seconds is None else monotonic() + budget_seconds
    last, embedded_once = 0.0, False
    while deadline is None or monotonic() + last < deadline:
        started = monotonic()
        plan = await opened.read(lambda conn: _plan(conn, memo))
        if plan is None:
            break
        embedding = bool(plan.missing and plan.missing != stalled)
        if current is None and (embedding or (plan.threads and (plan.queue or plan.batch))):
            current = await asyncio.to_thread(_model_id, embedder())
            if budget_seconds is not None:  # asking for the model is not charged
                deadline, started = monotonic() + budget_seconds, monotonic()
            # Thought vectors another model made are never compared with this model's
            # descriptions: they are queued again, and the plan (which read them) is read again.
            if await model_identity.ensure(opened, current) is not None:
                continue
        if embedding and current is not None:
            # Always read again after embedding: storing nothing usually means another task (the
            # drain, a search) stored these vectors first. Only when the same thoughts are still
            # missing after a try that stored nothing does matching go on without them.
            if not await _embed_missing(opened, embedder(), current, plan.missing):
                stalled = plan.missing
            if budget_seconds is not None and not embedded_once:  # nor is the first embedding (a cold load)
                deadline, embedded_once = monotonic() + budget_seconds, True
            else:
                last = monotonic() - started
            continue
        texts: dict[str, Vector | None] = {}
        # Descriptions are embedded only when there is something to match (an empty backfill
        # or a queue with no thread to meet just moves the bookkeeping on, model unloaded).
        if plan.threads and (plan.queue or plan.batch):
            descriptions = descriptions or _Descriptions(embedder(), cache)
            texts = await descriptions.vectors([t.description for t in plan.threads])
        made += await opened.write(_commit(plan, _decide(plan, texts, tuning, memo)))
        last = monotonic() - started
    return made
