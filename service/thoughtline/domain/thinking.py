"""The reasoning model's rules, as pure functions: branch resolution, write planning, titles.

Thought numbers are scoped to the branch that writes them. A reference (a revision target or a
fork point) resolves on the branch being written, then on each ancestor in turn, where only the
ancestor's thoughts up to the fork point are visible; the nearest scope wins, and among several
thoughts with one number the newest wins. Nothing here touches the database: the store hands in
the sequence's state and a `Finder` that looks thoughts up.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from thoughtline.domain.arguments import LISTED_BRANCHES, MAIN_BRANCH, MAX_BRANCHES, ThoughtInput
from thoughtline.errors import DomainError, invalid

TITLE_CHARS = 160
Status = Literal["active", "paused", "completed", "abandoned"]
# The statuses of a sequence that has ended; a write that keeps it going reopens it.
ENDED: tuple[Status, ...] = ("completed", "abandoned")


@dataclass(frozen=True)
class BranchInfo:
    """A stored branch. `parent` is the key of the branch owning the fork thought (None = main)."""

    key: int
    name: str
    parent: int | None
    from_thought: int
    fork_position: int


@dataclass(frozen=True)
class ThoughtRef:
    """Where a resolved reference landed: the thought's position, number and branch key."""

    position: int
    number: int
    branch: int | None


class Finder(Protocol):
    """Newest thought numbered `number` stored on `branch` (None = main), at or before `max_position`."""

    def __call__(self, branch: int | None, number: int, max_position: int | None) -> ThoughtRef | None: ...


@dataclass(frozen=True)
class SequenceState:
    """What planning needs to know about an existing sequence."""

    public_id: str
    status: Status
    thought_count: int
    branches: Mapping[str, BranchInfo]

    def branch_by_key(self, key: int) -> BranchInfo:
        """The branch with store key `key` (keys always come from this same state)."""
        for branch in self.branches.values():
            if branch.key == key:
                return branch
        raise KeyError(key)


@dataclass(frozen=True)
class Hop:
    """One scope to search: a branch (None = main) and how far into it the reference may see."""

    branch: int | None
    max_number: int | None = None
    max_position: int | None = None


def lineage(state: SequenceState | None, branch: BranchInfo | None) -> list[Hop]:
    """The scopes a reference made on `branch` searches, nearest first."""
    if branch is None:
        return [Hop(None)]
    return [Hop(branch.key), *_ancestors(state, branch.parent, branch.from_thought, branch.fork_position)]


def _ancestors(state: SequenceState | None, parent: int | None, max_number: int, max_position: int) -> list[Hop]:
    hops: list[Hop] = []
    while True:
        hops.append(Hop(parent, max_number, max_position))
        if parent is None or state is None:
            return hops
        above = state.branch_by_key(parent)
        parent, max_number, max_position = above.parent, above.from_thought, above.fork_position


def resolve(number: int, hops: Sequence[Hop], find: Finder) -> ThoughtRef | None:
    """The thought a reference to `number` means from the first hop's point of view."""
    for hop in hops:
        if hop.max_number is not None and number > hop.max_number:
            continue
        found = find(hop.branch, number, hop.max_position)
        if found is not None:
            return found
    return None


def resolve_from(
    number: int, branch: BranchInfo | None, branches: Mapping[str, BranchInfo], find: Finder
) -> ThoughtRef | None:
    """The thought a reference to `number` written on `branch` (None = main) means, among a
    sequence's `branches`: the rule a revision follows, for a caller that holds no `SequenceState`
    (import and `thoughtline check` hold a stored revision to it)."""
    # Resolution reads only the branches; the other fields of the state play no part in it.
    state = SequenceState(public_id="", status="active", thought_count=0, branches=branches)
    return resolve(number, lineage(state, branch), find)


@dataclass(frozen=True)
class NewBranch:
    """A branch this write creates."""

    name: str
    parent: int | None
    from_thought: int
    fork_position: int
    parent_name: str | None = None  # the name of `parent` (None = the main path)


@dataclass(frozen=True)
class Plan:
    """Everything the store must write for one accepted thought, and the flags to report."""

    branch: BranchInfo | None
    new_branch: NewBranch | None
    revises: ThoughtRef | None
    total_thoughts: int
    total_raised: bool
    reopened: bool
    number_reused: bool
    status: Status
    # The status other than active (completed, abandoned or paused) this write moves the sequence
    # out of, else None; only leaving an ended one is `reopened` (SPEC §2.1).
    left_status: Status | None = None

    @property
    def branch_name(self) -> str | None:
        """The name of the branch written to, or None for the main path."""
        if self.new_branch is not None:
            return self.new_branch.name
        return self.branch.name if self.branch is not None else None


def check_shape(inp: ThoughtInput) -> None:
    """Rules that need no stored state; raises the matching DomainError."""
    if inp.revises_thought is not None and inp.is_revision is not True:
        raise invalid(
            "'revisesThought' is set but 'isRevision' is not true; set isRevision: true to revise "
            "that thought, or drop revisesThought."
        )
    if inp.is_revision and inp.revises_thought is None:
        raise DomainError(
            "revision_target_required",
            "isRevision is true but 'revisesThought' is missing; pass the number of the thought being revised.",
        )
    if (inp.branch_from_thought is not None or inp.branch_from_branch_id is not None) and inp.branch_id is None:
        raise DomainError(
            "branch_id_required",
            "a fork (branchFromThought / branchFromBranchId) needs 'branchId', the name of the new branch.",
        )
    if inp.branch_from_branch_id is not None and inp.branch_from_thought is None:
        raise invalid(
            "'branchFromBranchId' needs 'branchFromThought': the number of the thought on that branch to fork from."
        )
    if inp.branch_id is not None and inp.branch_from_branch_id == inp.branch_id:
        raise invalid(f"branch '{inp.branch_id}' cannot fork from itself; name its parent branch instead.")


def _fork_point(inp: ThoughtInput, state: SequenceState | None, find: Finder, as_of: int | None = None) -> ThoughtRef:
    """The thought a fork declaration names; with `as_of`, as it resolved when the sequence's
    newest position was `as_of` (thoughts written later, even reused numbers, are not seen)."""
    assert inp.branch_from_thought is not None  # checked by the caller
    source: BranchInfo | None = None
    if inp.branch_from_branch_id not in (None, MAIN_BRANCH):
        known = state.branches if state is not None else {}
        source = known.get(inp.branch_from_branch_id or "")
        if source is None:
            raise DomainError(
                "branch_not_found",
                f"branchFromBranchId '{inp.branch_from_branch_id}' is not a branch of this sequence "
                f"(branches: {_names(known)}); fork from an existing branch or omit it to fork from the main path.",
            )
    hops = lineage(state, source)
    if as_of is not None:
        hops = [
            Hop(h.branch, h.max_number, as_of if h.max_position is None else min(as_of, h.max_position)) for h in hops
        ]
    ref = resolve(inp.branch_from_thought, hops, find) if state is not None else None
    if ref is None:
        where = f"branch '{source.name}' (or its ancestors)" if source else "the main path"
        raise DomainError(
            "branch_point_not_found",
            f"thought {inp.branch_from_thought} does not exist on {where}; fork from a thought that has been written.",
        )
    return ref


def plan_thought(inp: ThoughtInput, state: SequenceState | None, find: Finder) -> Plan:
    """Decide how a thought is stored on `state` (None = a new sequence), or raise why it cannot be."""
    check_shape(inp)
    branch: BranchInfo | None = None
    new_branch: NewBranch | None = None
    if inp.branch_id is not None:
        branch = state.branches.get(inp.branch_id) if state is not None else None
        if branch is None and inp.branch_from_thought is None:
            raise DomainError(
                "branch_not_found",
                f"branch '{inp.branch_id}' does not exist yet; start it with branchFromThought "
                "(and branchFromBranchId to fork from another branch).",
            )
        if inp.branch_from_thought is not None:
            fork = _fork_point(inp, state, find)
            if branch is None:
                _check_room(state)
                owner = None if fork.branch is None or state is None else state.branch_by_key(fork.branch).name
                new_branch = NewBranch(inp.branch_id, fork.branch, inp.branch_from_thought, fork.position, owner)
            elif not _same_fork(fork, branch) and not _declared_then(inp, state, find, branch):
                raise DomainError(
                    "branch_conflict",
                    f"branch '{branch.name}' already forks from thought {branch.from_thought}"
                    f"{_on(state, branch.parent)}; continue it without branchFromThought, or use a new branchId.",
                )
    revises: ThoughtRef | None = None
    if inp.revises_thought is not None:
        hops = (
            _ancestors(state, new_branch.parent, new_branch.from_thought, new_branch.fork_position)
            if new_branch is not None
            else lineage(state, branch)
        )
        revises = resolve(inp.revises_thought, hops, find) if state is not None else None
        if revises is None:
            # The main path has no fork point: only its own thoughts are visible from it.
            visible = (
                "revise a thought that was written on this branch or before its fork point"
                if inp.branch_id is not None
                else "revise a thought that was written on the main path (a branch's thoughts are not visible from it)"
            )
            raise DomainError(
                "revision_target_not_found",
                f"thought {inp.revises_thought} is not visible from {scope_name(inp.branch_id)}; {visible}.",
            )
    # A new branch has no thoughts of its own yet, so only the main path or an existing branch can reuse.
    number_reused = (
        state is not None
        and new_branch is None
        and find(branch.key if branch is not None else None, inp.thought_number, None) is not None
    )
    total = max(inp.total_thoughts, inp.thought_number)
    status: Status = "active" if inp.next_thought_needed else "completed"
    # Only a change of status is news: a final thought after a final one reopens nothing, while
    # a write to an abandoned sequence revives it as surely as one to a completed sequence. A paused
    # sequence made active again is news too (someone paused it), though SPEC's `reopened` is for
    # ended sequences only.
    before = state.status if state is not None else None
    left = before if before is not None and before != "active" and before != status else None
    return Plan(
        branch=branch,
        new_branch=new_branch,
        revises=revises,
        total_thoughts=total,
        total_raised=total != inp.total_thoughts,
        reopened=left in ENDED and status == "active",
        number_reused=number_reused,
        status=status,
        left_status=left,
    )


def _check_room(state: SequenceState | None) -> None:
    if state is not None and len(state.branches) >= MAX_BRANCHES:
        raise invalid(
            f"sequence {state.public_id} already has {len(state.branches)} branches, the most one sequence "
            f"holds ({MAX_BRANCHES}); continue one of its branches (pass its branchId without branchFromThought), "
            "or start a new sequence for this line of reasoning (omit sequenceId)."
        )


def listed_branches(names: Sequence[str], written: str | None) -> tuple[str, ...]:
    """The branch ids a write result lists, in creation order: the branch written and the newest
    others, at most LISTED_BRANCHES (history lists every branch)."""
    if len(names) <= LISTED_BRANCHES:
        return tuple(names)
    if written is None or written in names[-LISTED_BRANCHES:]:
        return tuple(names[-LISTED_BRANCHES:])
    return (written, *names[-(LISTED_BRANCHES - 1) :])


def _same_fork(fork: ThoughtRef, branch: BranchInfo) -> bool:
    return (fork.branch, fork.position) == (branch.parent, branch.fork_position)


def _declared_then(inp: ThoughtInput, state: SequenceState | None, find: Finder, branch: BranchInfo) -> bool:
    """Whether the declaration named this branch's fork thought when the branch was created.

    A later write may reuse the fork thought's number (an accepted, flagged write), so the same
    declaration now resolves to the newer thought; re-sending the branch's own declaration is
    still the same branch (SPEC §2.1: only a *different* fork point is a conflict).
    """
    if inp.branch_from_thought != branch.from_thought:
        return False
    try:
        return _same_fork(_fork_point(inp, state, find, as_of=branch.fork_position), branch)
    except DomainError:
        return False


def _names(branches: Mapping[str, BranchInfo]) -> str:
    return ", ".join(sorted(branches)) or "none yet"


def scope_name(branch_id: str | None) -> str:
    """The main path or a branch, as messages name it."""
    return f"branch '{branch_id}'" if branch_id else "the main path"


def _on(state: SequenceState | None, parent: int | None) -> str:
    if parent is None or state is None:
        return " of the main path"
    return f" of branch '{state.branch_by_key(parent).name}'"


def make_title(text: str) -> str:
    """A sequence's title: its first thought with whitespace collapsed, at most 160 characters."""
    flat = re.sub(r"\s+", " ", text).strip()
    return flat if len(flat) <= TITLE_CHARS else flat[: TITLE_CHARS - 1].rstrip() + "…"
