"""Latency summaries for the benchmark: median, p99 and friends from nanosecond samples."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

NS_PER_MS = 1_000_000


def percentile(sorted_values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile of already sorted values (p99 of 300 samples is the 297th)."""
    if not sorted_values:
        raise ValueError("no samples")
    rank = max(1, math.ceil(pct / 100.0 * len(sorted_values)))
    return sorted_values[rank - 1]


@dataclass(frozen=True)
class Summary:
    """One latency series, in milliseconds."""

    n: int
    median_ms: float
    p99_ms: float
    mean_ms: float
    min_ms: float
    max_ms: float

    @classmethod
    def of_ns(cls, samples_ns: Sequence[int]) -> Summary:
        """Summarise `time.perf_counter_ns` differences."""
        values = sorted(s / NS_PER_MS for s in samples_ns)
        return cls(
            n=len(values),
            median_ms=statistics.median(values),
            p99_ms=percentile(values, 99),
            mean_ms=statistics.fmean(values),
            min_ms=values[0],
            max_ms=values[-1],
        )

    def as_json(self) -> dict[str, Any]:
        """Plain dict, rounded to microseconds."""
        return {key: (round(value, 3) if isinstance(value, float) else value) for key, value in asdict(self).items()}
