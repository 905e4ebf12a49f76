"""Process resources: file descriptors (the soft limit, how many are open, the reserve) and freed memory.

Each open store holds a few descriptors (its database, WAL and shared-memory files, once per
connection). At the common soft limit of 1,024 a few hundred open stores used to exhaust them,
and then the listener could not accept connections at all, `/healthz` included. `serve` raises
the soft limit to the hard one, and the store router keeps `RESERVED_FDS` free for the listener,
client connections and logs.
"""

from __future__ import annotations

import ctypes
import os
import resource

RESERVED_FDS = 128
M_ARENA_MAX = -8  # glibc's mallopt parameter number (malloc.h)
_FD_DIR = "/proc/self/fd"


def raise_fd_limit() -> int:
    """Raise the soft RLIMIT_NOFILE to the hard limit (never lowers it); returns the new soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    if soft == resource.RLIM_INFINITY or soft >= target:
        return soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError):  # some sandboxes refuse; the router's reserve still applies
        return soft
    return target


def fd_limit() -> int:
    """The current soft descriptor limit."""
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def open_fds() -> int | None:
    """How many descriptors this process has open, or None where that cannot be counted cheaply."""
    try:
        return len(os.listdir(_FD_DIR))
    except OSError:
        return None


def fds_to_spare(reserve: int = RESERVED_FDS) -> int | None:
    """Descriptors that may still be used before the reserve is touched (None: unknown)."""
    count = open_fds()
    if count is None:
        return None
    limit = fd_limit()
    if limit == resource.RLIM_INFINITY:
        return None
    return limit - reserve - count


def return_freed_memory() -> bool:
    """Hand memory freed by closed stores back to the OS (glibc's `malloc_trim`); False where unavailable.

    Every store's connections allocate from the arena of the thread that used them; once closed,
    that memory is free but stays mapped: 1,000 stores opened then closed left 747 MB resident,
    149 MB after a trim (`python -m bench.store_memory`).
    """
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError):  # not glibc (musl, macOS)
        return False
    trim(0)
    return True


def limit_malloc_arenas(arenas: int) -> bool:
    """Cap glibc's malloc arenas (as `MALLOC_ARENA_MAX` would); call before threads start.

    glibc gives threads their own arenas (up to 8 per core), and memory freed in one is not reused
    by another: one store embedding 300 thoughts in worker threads grew RSS by 136 MB with the
    default and by 6 MB with two arenas (`python -m bench.store_memory --search 300`).
    `arenas` 0 leaves glibc's default. False where unavailable (not glibc).
    """
    if arenas <= 0:
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError):
        return False
    return bool(mallopt(M_ARENA_MAX, arenas))
