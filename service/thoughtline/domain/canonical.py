"""Canonical-style calls: which sequence a `sequentialthinking` call without `sequenceId` continues.

Clients prompted for the canonical tool never send `sequenceId`; they just count 1, 2, 3. A call
numbered N > 1 continues the caller's sequence only when exactly one candidate fits — open (not
completed or abandoned), last written within `CONTINUE_WINDOW_MS`, highest thought number on any
branch N - 1, and (with OAuth) started by the same client. Anything else — no match, or two
agents of one user both waiting for thought N — starts a new sequence: merging two agents'
thoughts would be worse than splitting one agent's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from thoughtline.domain.thinking import Status

CONTINUE_WINDOW_MS = 30 * 60 * 1000
# How many fitting sequences the note counts exactly; beyond this it says "more than". The store
# reads at most one more candidate than this, so an ambiguous call stays a bounded lookup.
MAX_COUNTED = 9
OPEN_STATUSES: frozenset[Status] = frozenset({"active", "paused"})


@dataclass(frozen=True)
class Candidate:
    """A recent sequence of the caller's store as the rule needs to see it.

    `origin` is the OAuth client that started it (None: the static bearer token, or unknown).
    """

    public_id: str
    status: Status
    updated_at: int
    highest_number: int
    origin: str | None


@dataclass(frozen=True)
class Continuation:
    """The decision: `sequence_id` to continue (None = start a new one), the note to show, and why
    no sequence was continued (`reason`, for calls numbered above 1 that start a new one)."""

    sequence_id: str | None
    note: str | None
    reason: str | None = None

    @property
    def continued(self) -> bool:
        """Whether the call continues an existing sequence."""
        return self.sequence_id is not None


def fits(candidate: Candidate, thought_number: int, origin: str | None, now_ms: int) -> bool:
    """Whether `candidate` is a sequence a call numbered `thought_number` from `origin` may continue."""
    return (
        candidate.status in OPEN_STATUSES
        and now_ms - candidate.updated_at <= CONTINUE_WINDOW_MS
        and candidate.highest_number == thought_number - 1
        and candidate.origin == origin
    )


def choose(
    thought_number: int, origin: str | None, candidates: Iterable[Candidate], now_ms: int, *, strict: bool = False
) -> Continuation:
    """Decide for a call without `sequenceId`; `thoughtNumber: 1` always starts a new sequence.

    `candidates` needs to hold every fitting sequence only up to `MAX_COUNTED + 1`: the note
    counts that many exactly and says "more than" past it.

    `strict` (the library is off): only a held sequenceId reaches a sequence, so nothing is continued.
    """
    if thought_number <= 1:
        return Continuation(None, None)
    if strict:
        return _new_sequence(thought_number, "this server continues only a sequence whose sequenceId is sent")
    matches = [c.public_id for c in candidates if fits(c, thought_number, origin, now_ms)]
    if len(matches) == 1:
        return Continuation(
            matches[0],
            f"Note: no sequenceId was sent, so this thought continues {matches[0]}, your one open sequence "
            f"that ended at thought {thought_number - 1}. Pass sequenceId: {matches[0]} on every later call.",
        )
    if matches:
        how_many = f"more than {MAX_COUNTED}" if len(matches) > MAX_COUNTED else str(len(matches))
        why = (
            f"{how_many} of your open sequences end at thought {thought_number - 1}, "
            "so it cannot tell which one you mean"
        )
    else:
        why = (
            f"none of your open sequences written in the last {CONTINUE_WINDOW_MS // 60_000} minutes "
            f"ends at thought {thought_number - 1}"
        )
    return _new_sequence(thought_number, why)


def _new_sequence(thought_number: int, why: str) -> Continuation:
    return Continuation(
        None,
        f"Note: thought {thought_number} started a new sequence: no sequenceId was sent and {why}. "
        "To continue a sequence, pass its sequenceId (from that sequence's results); "
        "pass this result's sequenceId on later calls to continue this one.",
        why,
    )


def explain_refusal(decision: Continuation, message: str) -> str:
    """A refusal's message for a call that continued nothing: a revision or fork found no target
    because it was checked against a new, empty sequence, which the caller should hear about."""
    if decision.reason is None:
        return message
    return (
        f"{message} No sequenceId was sent and {decision.reason}, so this call would have started a new, "
        "empty sequence; pass the sequenceId of the sequence this thought belongs to."
    )
