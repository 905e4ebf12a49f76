"""Health findings for stores: `thoughtline check` over a data directory, one store at a time.

A check never stops at the first bad store and never lets a database error escape: a damaged,
truncated, replaced or missing store is itself the finding, reported by its file name. A sound
file is then held to the rules `thoughtline import` holds a record to (`record_problems`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import apsw

from thoughtline.config import Journal
from thoughtline.domain.export_rules import RecordChecker
from thoughtline.domain.record_fields import RecordProblem
from thoughtline.domain.thread_names import name_key
from thoughtline.storage import migrations, transfer
from thoughtline.storage.db import StorageError, connect
from thoughtline.storage.registry import Created, StoreRegistry, identity_problem, missing_message
from thoughtline.storage.router import STORE_SUFFIX

# A store written on a host whose clock ran a little ahead is not damaged.
_CLOCK_SKEW_MS = 10 * 60 * 1000
_SHOWN = 5


@dataclass(frozen=True)
class Finding:
    """One store's check: its file name and what is wrong with it (empty when healthy)."""

    name: str
    problems: list[str] = field(default_factory=list)


def check_store(
    path: Path,
    journal: Journal,
    known: tuple[migrations.Migration, ...],
    now_ms: int,
    recorded: Created | None = None,
) -> list[str]:
    """Integrity, identity and schema findings for one store file (empty when healthy)."""
    try:
        conn = connect(path, journal, readonly=True)
    except StorageError as exc:
        return [f"{exc}; restore it from a backup" if exc.kind == "damaged" else str(exc)]
    try:
        problems = transfer.integrity_problems(conn)
        identity = identity_problem(conn, path.name, recorded, "--user <its user key>")
        if identity is not None:
            # The server refuses this file whatever its schema: advice to open it would mislead.
            return [*problems, identity]
        recorded_names = migrations.applied_migrations(conn)
        names = [m.name for m in known]
        newer = [n for n in recorded_names if n not in names]
        missing = [n for n in names if n not in recorded_names]
        if newer:
            problems.append(f"written by a newer Thoughtline (unknown migrations: {', '.join(newer)})")
        if missing:
            problems.append(f"schema not current (pending migrations: {', '.join(missing)}); open it once to migrate")
        if not problems:  # the rows are read by the current schema's columns, in a sound file only
            problems += record_problems(conn, now_ms)
    except apsw.Error as exc:
        return [f"cannot be read ({type(exc).__name__}: {exc}); restore it from a backup"]
    finally:
        conn.close()
    return problems


def record_problems(conn: apsw.Connection, now_ms: int) -> list[str]:
    """The rows that break the rules `thoughtline import` holds a record to, and stale derived columns.

    The store is read as its own export and run through import's checker, so a store passes
    `check` exactly when its export would import unchanged.
    """
    # A clock that stepped back a little (NTP) is not damage either: times that run backwards by up
    # to the same skew pass; import moves them forward.
    checker = RecordChecker(now_ms + _CLOCK_SKEW_MS, clamp=False, slack_ms=_CLOCK_SKEW_MS)
    found: list[str] = []
    stored: dict[int, tuple[str, dict[str, Any]]] = {}
    for rec in transfer.iter_export(conn):
        if rec["type"] == "sequence":
            stored[int(rec["id"])] = (f"sequence {rec['public_id']}", rec)
        try:
            checker.check(rec)
        except RecordProblem as exc:
            found.append(exc.message)
    found += [problem.message for problem in checker.whole_file_problems()]
    for rowid, derived in checker.derived().items():
        label, rec = stored[rowid]
        for column in ("thought_count", "last_thought_number", "total_thoughts"):
            if derived.thought_count and rec[column] != getattr(derived, column):
                found.append(f"{label}: {column} is {rec[column]}, its thoughts say {getattr(derived, column)}")
        if derived.thought_count and rec["updated_at"] < derived.last_time - _CLOCK_SKEW_MS:
            found.append(
                f"{label}: 'updated_at' ({rec['updated_at']} ms since 1970) is before its newest thought "
                f"({derived.last_time}); every thought written updates it"
            )
    for name, key in conn.execute("SELECT name, name_key FROM threads ORDER BY id"):
        if key != name_key(str(name)):
            found.append(f"thread {str(name)[:40]!a}: its lookup key is stale, so the tools cannot find it by name")
    if not found:
        return []
    shown = found[:_SHOWN]
    more = f"; and {len(found) - _SHOWN} more" if len(found) > _SHOWN else ""
    return [
        f"{len(found)} record(s) no tool could have written: {'; '.join(shown)}{more} (export the store, fix or "
        "drop the records `thoughtline import` names, and import it into a new data directory; or restore a backup)"
    ]


def check_data_dir(data_dir: Path, journal: Journal, now_ms: int) -> list[Finding]:
    """A finding for every store file under `data_dir/stores` and every recorded store now missing."""
    root = data_dir / "stores"
    files = sorted(root.glob(f"*{STORE_SUFFIX}")) if root.is_dir() else []
    recorded = StoreRegistry(root).entries()
    known = tuple(migrations.MIGRATIONS)
    findings = [
        Finding(path.name, check_store(path, journal, known, now_ms, recorded.get(path.name))) for path in files
    ]
    present = {path.name for path in files}
    for name in sorted(set(recorded) - present):
        findings.append(Finding(name, [missing_message(name, recorded[name], "--user <its user key>")]))
    return findings
