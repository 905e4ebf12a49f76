"""The clock boundary: code that needs the time takes a `Clock`, so tests can move time."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """Wall-clock time in unix seconds."""

    def now(self) -> float: ...


class SystemClock:
    """The real clock."""

    def now(self) -> float:
        """Seconds since the epoch."""
        return time.time()


def now_ms(clock: Clock) -> int:
    """The clock's time in whole milliseconds, as stored in the database."""
    return int(clock.now() * 1000)
