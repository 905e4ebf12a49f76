"""Which `/threads/...` route a path means, when thread names may themselves hold "/".

`/threads/a/briefing` is the briefing of thread `a` or the thread named `a/briefing`; Starlette
decodes `%2F` before matching, so separate routes cannot tell them apart. The whole family is
therefore one route, and this module reads it:

1. The raw path's segments are split on literal "/" only, so a client that percent-encodes the
   name (`a%2Fbriefing`, as docs/api.md says) always addresses that thread.
2. Every route shape whose literal tail matches is a reading; readings whose route does not serve
   the method are dropped (a GET never lands on the members route, a PATCH always on the thread).
3. Of the readings left, the first (longer tail first) whose thread exists wins, else the first:
   with both `a` and `a/briefing` existing, an unencoded `GET /threads/a/briefing` is the briefing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import unquote

import apsw

from thoughtline.domain.thread_names import check_name
from thoughtline.errors import ThoughtlineError
from thoughtline.storage import threads as thread_store
from thoughtline.storage.router import UserStore

FAMILY = "/threads/{name:path}"


@dataclass(frozen=True)
class Reading:
    """One way to read a `/threads/...` path: the route it names and that route's path parameters."""

    route: str
    params: dict[str, str]


def tail_of(route: str) -> tuple[str, ...]:
    """The segments a family route adds after the name: `("members", "{sequence_id}")`."""
    if not route.startswith(FAMILY):
        raise ValueError(f"{route!r} is not a /threads/{{name}} route")
    rest = route[len(FAMILY) :]
    return tuple(rest.split("/")[1:]) if rest else ()


def segments(raw_path: bytes | None, name: str) -> list[str]:
    """The decoded segments of the `{name:path}` part, split only where the raw path has a "/".

    `name` is Starlette's decoded match; without a raw path (or one that does not end in it, as
    behind a proxy that rewrote it) every "/" in `name` counts as a separator.
    """
    if raw_path is not None:
        raw = raw_path.decode("ascii", errors="replace").split("/")
        for count in range(1, len(raw) + 1):
            tail = raw[len(raw) - count :]
            if unquote("/".join(tail)) == name:
                return [unquote(part) for part in tail]
    return name.split("/")


def readings(parts: Sequence[str], routes: Sequence[str]) -> list[Reading]:
    """Each route (longer tail first) whose tail matches the end of `parts`, with its parameters."""
    found: list[Reading] = []
    for route in sorted(routes, key=lambda r: -len(tail_of(r))):
        tail = tail_of(route)
        if len(parts) <= len(tail) and tail:
            continue
        given = parts[len(parts) - len(tail) :] if tail else []
        params = {"name": "/".join(parts[: len(parts) - len(tail)])}
        for want, have in zip(tail, given, strict=True):
            if want.startswith("{"):
                params[want.strip("{}")] = have
            elif want != have:
                break
        else:
            found.append(Reading(route, params))
    return found


async def choose(store: UserStore, served: Sequence[Reading]) -> Reading:
    """The first reading whose thread exists, else the first (the caller passes at least one)."""
    if len(served) == 1:
        return served[0]

    def exists(conn: apsw.Connection, name: str) -> bool:
        try:
            return thread_store.find_thread(conn, check_name(name, "name")) is not None
        except ThoughtlineError:  # not a valid name: no such thread either
            return False

    names = [reading.params["name"] for reading in served]
    present = await store.read(lambda conn: [exists(conn, name) for name in names])
    return next((reading for reading, there in zip(served, present, strict=True) if there), served[0])
