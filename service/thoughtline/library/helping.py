"""Work handed to the library's one helper thread, with the caller doing it when the helper cannot.

A search's numpy passes (the product, per-phrasing gathers, partitions) and its ONNX runs leave
the GIL, so on two cores part of one search can run on the helper while the caller goes on. The
helper may be busy with another search, or shut down while the library closes: the caller then
does the work itself when it asks for the result, so nothing waits on a queue it cannot see.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

# From this many thoughts on, a search hands part of its numpy work to the helper; below it the
# handover costs more than the work.
HELPED_THOUGHTS = 20_000


def on_helper(helper: Executor | None, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> Callable[[], T]:
    """Start `fn(*args, **kwargs)` on `helper` (None: nowhere) and return what waits for its result.

    The waiter runs `fn` itself when the helper never started it.
    """
    future: Future[T] | None = None
    if helper is not None:
        with contextlib.suppress(RuntimeError):  # a helper shut down (the library closing)
            future = helper.submit(fn, *args, **kwargs)

    def result() -> T:
        if future is None or future.cancel():
            return fn(*args, **kwargs)
        return future.result()

    return result
