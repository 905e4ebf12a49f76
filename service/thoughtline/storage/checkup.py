"""Health findings for stores: `thoughtline check` over a data directory, one store at a time.

A check never stops at the first bad store and never lets a database error escape: a damaged,
truncated, replaced or missing store is itself the finding, reported by its file name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import apsw

from thoughtline.config import Journal
from thoughtline.storage import migrations, transfer
from thoughtline.storage.db import StorageError, connect
from thoughtline.storage.registry import (
    UNSTAMPED,
    Created,
    StoreRegistry,
    missing_message,
    replaced_message,
    stamped_id,
)
from thoughtline.storage.router import STORE_SUFFIX


@dataclass(frozen=True)
class Finding:
    """One store's check: its file name and what is wrong with it (empty when healthy)."""

    name: str
    problems: list[str] = field(default_factory=list)


def check_store(
    path: Path, journal: Journal, known: tuple[migrations.Migration, ...], recorded: Created | None = None
) -> list[str]:
    """Integrity, identity and schema findings for one store file (empty when healthy)."""
    try:
        conn = connect(path, journal, readonly=True)
    except StorageError as exc:
        return [f"{exc}; restore it from a backup" if exc.kind == "damaged" else str(exc)]
    try:
        problems = transfer.integrity_problems(conn)
        if recorded is not None and recorded.store_id != UNSTAMPED and stamped_id(conn) != recorded.store_id:
            problems.append(replaced_message(path.name))
        recorded_names = migrations.applied_migrations(conn)
    except apsw.Error as exc:
        return [f"cannot be read ({type(exc).__name__}: {exc}); restore it from a backup"]
    finally:
        conn.close()
    names = [m.name for m in known]
    newer = [n for n in recorded_names if n not in names]
    missing = [n for n in names if n not in recorded_names]
    if newer:
        problems.append(f"written by a newer Thoughtline (unknown migrations: {', '.join(newer)})")
    if missing:
        problems.append(f"schema not current (pending migrations: {', '.join(missing)}); open it once to migrate")
    return problems


def check_data_dir(data_dir: Path, journal: Journal) -> list[Finding]:
    """A finding for every store file under `data_dir/stores` and every recorded store now missing."""
    root = data_dir / "stores"
    files = sorted(root.glob(f"*{STORE_SUFFIX}")) if root.is_dir() else []
    recorded = StoreRegistry(root).entries()
    known = tuple(migrations.MIGRATIONS)
    findings = [Finding(path.name, check_store(path, journal, known, recorded.get(path.name))) for path in files]
    present = {path.name for path in files}
    for name in sorted(set(recorded) - present):
        findings.append(Finding(name, [missing_message(name, recorded[name], "--user <its user key>")]))
    return findings
