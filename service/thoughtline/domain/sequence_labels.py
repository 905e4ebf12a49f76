"""What a call may set on a whole sequence: its parent (sub-agents, SPEC §5.2) and its kind (§2.1).

Either may be sent on any call of a sequence. The first call that sends one sets it; later calls
may repeat it but not change it. Keeping the first silently would drop an argument the call
reported as accepted, and changing it would rewrite what earlier reads showed (the old parent's
history listed the sequence as its child; lists showed its kind). A parent link keeps the
sub-agent links a tree: a sequence is never its own parent, nor its own ancestor (`check_parent`
for one write, `on_loops` for a whole file or store, as import and `thoughtline check` read it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from thoughtline.errors import invalid

# How many parent links a loop check follows. Every hop is one lookup while the writer is held,
# and sub-agents nest a few levels deep, so this only stops a pathological chain.
MAX_PARENT_HOPS = 1_000

# The stored parent of a sequence id (None: no parent, or no such sequence).
ParentOf = Callable[[str], str | None]


def closes_loop(sequence_id: str, parent: str, parent_of: ParentOf) -> bool | None:
    """Whether giving `sequence_id` the parent `parent` makes it its own ancestor.

    None when the chain above `parent` is longer than `MAX_PARENT_HOPS` links, so the answer is
    not known. A loop already stored above `parent` that does not pass through `sequence_id`
    (a store written before this rule) ends the walk: it cannot reach `sequence_id`.
    """
    seen: set[str] = set()
    node = parent
    for _ in range(MAX_PARENT_HOPS):
        if node == sequence_id:
            return True
        if node in seen:
            return False
        seen.add(node)
        above = parent_of(node)
        if above is None:
            return False
        node = above
    return None


def check_parent(sequence_id: str | None, current: str | None, parent: str, parent_of: ParentOf) -> None:
    """Refuse a `parentSequenceId` the sequence `sequence_id` (None: a new one) cannot take.

    `current` is its stored parent. A new sequence takes any existing parent: nothing links to
    it yet, so no loop can form.
    """
    if sequence_id is None:
        return
    if parent == sequence_id:
        raise invalid(
            f"parentSequenceId {parent} is this sequence itself; a sequence cannot be its own parent. "
            "Pass the parent agent's sequenceId, or omit parentSequenceId."
        )
    if current is not None:
        if current != parent:
            raise invalid(
                f"sequence {sequence_id} already has parent {current}, and a sequence's parent does not change; "
                f"omit parentSequenceId, or pass {current}."
            )
        return
    loop = closes_loop(sequence_id, parent, parent_of)
    if loop:
        raise invalid(
            f"parentSequenceId {parent} is a sub-agent of {sequence_id} (directly or further down), so linking "
            "them would make the sequence its own ancestor; pass the parent agent's sequenceId, or omit it."
        )
    if loop is None:
        raise invalid(
            f"the chain of parents above {parent} is more than {MAX_PARENT_HOPS:,} sequences long, too long to "
            "check for a loop; link this sequence to a sequence nearer the top, or omit parentSequenceId."
        )


def check_kind(sequence_id: str | None, current: str | None, kind: str) -> None:
    """Refuse a `kind` that would relabel the sequence `sequence_id` (None: a new one), labelled `current`."""
    if sequence_id is not None and current is not None and current != kind:
        raise invalid(
            f"sequence {sequence_id} already has kind {current!r}, and a sequence's kind does not change; "
            f"omit kind, or send {current!r}."
        )


def on_loops(parents: Mapping[str, str | None]) -> list[str]:
    """The sequences of `parents` (id -> parent id) that are their own ancestors, in the map's order.

    For a whole file or store at once, in one pass over the links: a sequence that only leads
    into a loop is not on it. A parent outside the map ends its chain.
    """
    done: set[str] = set()
    found: list[str] = []
    for start in parents:
        walk: list[str] = []
        on_walk: set[str] = set()
        node: str | None = start
        while node is not None and node in parents and node not in done and node not in on_walk:
            walk.append(node)
            on_walk.add(node)
            node = parents[node]
        if node is not None and node in on_walk:
            found += walk[walk.index(node) :]
        done.update(walk)
    order = {sid: i for i, sid in enumerate(parents)}
    return sorted(found, key=order.__getitem__)
