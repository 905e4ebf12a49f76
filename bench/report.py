"""Plain-text tables for the benchmark's stdout: aligned columns, no dependencies."""

from __future__ import annotations

from collections.abc import Sequence


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, right: Sequence[int] = ()) -> str:
    """An aligned text table; columns whose index is in `right` are right-aligned."""
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))

    def line(cells: Sequence[str]) -> str:
        parts = [cell.rjust(widths[i]) if i in right else cell.ljust(widths[i]) for i, cell in enumerate(cells)]
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(headers), rule, *(line(row) for row in rows)])


def ms(value: float | None, digits: int = 2) -> str:
    """Milliseconds for a table cell (`-` when unknown)."""
    return "-" if value is None else f"{value:.{digits}f}"


def ratio(value: float | None, base: float | None) -> str:
    """`value / base` as `3.1x` (`-` when either is unknown)."""
    if value is None or base is None or base <= 0:
        return "-"
    return f"{value / base:.1f}x"


def verdict(ok: bool | None) -> str:
    """PASS / MISS / n/a."""
    return "n/a" if ok is None else ("PASS" if ok else "MISS")
