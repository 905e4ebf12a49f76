"""`thoughtline backup`: consistent copies of stores through SQLite's online backup API.

A backup is a new data directory (`<dest>/stores/…` plus the record of created stores), so it
can be checked with `thoughtline check --data-dir <dest>`, served as it is, or restored by
copying its `stores/` files back while the server is stopped. Each store is copied in one
backup step, which reads one snapshot: a server writing meanwhile is neither blocked (WAL) nor
half-copied. Files are written under a temporary name, fsynced, then renamed into place.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import apsw

from thoughtline.config import Journal
from thoughtline.storage.db import StorageError, connect
from thoughtline.storage.files import create_private_file, fsync_dir, private_dir, remove_quietly
from thoughtline.storage.registry import Created, StoreRegistry, identity_problem


def prepare_destination(dest: Path) -> Path:
    """The `stores/` folder of a new backup at `dest`; refuses a destination that holds anything."""
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise StorageError(f"{dest} already exists and is not an empty folder; name a new folder, nothing was changed")
    return private_dir(private_dir(dest) / "stores")


def backup_store(source: Path, dest_stores: Path, journal: Journal, recorded: Created | None = None) -> int:
    """Copy one store file into `dest_stores` under the same name; returns the pages copied.

    `recorded`: the source's creation record. A file that is not that store (the server refuses
    it) is refused here too: its copy, restored, would be refused just the same.
    """
    final = dest_stores / source.name
    partial = dest_stores / (source.name + ".partial")
    src = connect(source, journal, readonly=True)
    try:
        problem = identity_problem(src, source.name, recorded, "--user <its user key>")
        if problem is not None:
            raise StorageError(
                f"{problem}; run `thoughtline check` to see every store's state, and `thoughtline backup --user …` "
                "to back up the others one at a time"
            )
        remove_quietly(partial)
        create_private_file(partial)
        dst = apsw.Connection(str(partial))
        try:
            with dst.backup("main", src, "main") as step:
                step.step()  # every page at once: one read snapshot of the source
                pages = step.pagecount
            # The copy is a standalone file: no WAL beside it to forget when it is moved.
            dst.execute("PRAGMA journal_mode=DELETE")
            # The online backup copies pages as they are: a damaged store gives a damaged copy
            # that looks like a good one. Checked on the copy, so the server is never held up.
            finding = str(next(iter(dst.execute("PRAGMA quick_check(1)")))[0])
        finally:
            dst.close()
    except (apsw.FullError, apsw.IOError) as exc:
        remove_quietly(partial)
        raise StorageError(
            f"backing up {source.name} failed: its copy in {dest_stores} could not be written ({type(exc).__name__}: "
            "is the disk full, the file over a size limit, or the file system read-only?)"
        ) from exc
    except apsw.Error as exc:
        remove_quietly(partial)
        raise StorageError(f"backing up {source.name} failed: {type(exc).__name__}") from exc
    finally:
        src.close()
    if finding != "ok":
        remove_quietly(partial)
        raise StorageError(
            f"{source.name} is damaged ({finding[:200]}), so its copy would be too; run `thoughtline check` "
            "to see every problem, and `thoughtline export` to save what can still be read"
        )
    fd = os.open(partial, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(partial, final)
    fsync_dir(dest_stores)
    return pages


def backup_stores(sources: list[Path], dest: Path, journal: Journal) -> list[tuple[str, int]]:
    """Back up `sources` (store files of one data dir) into a new data directory at `dest`."""
    dest_stores = prepare_destination(dest)
    recorded = StoreRegistry(sources[0].parent).entries() if sources else {}
    copy = StoreRegistry(dest_stores)
    done: list[tuple[str, int]] = []
    try:
        for source in sources:
            done.append((source.name, backup_store(source, dest_stores, journal, recorded.get(source.name))))
            if source.name in recorded:
                copy.keep(recorded[source.name])
    except (StorageError, OSError) as exc:
        # Half a backup passes for a whole one later: the folder (empty or new before) is emptied.
        shutil.rmtree(dest_stores, ignore_errors=True)
        raise StorageError(f"{exc}; nothing was backed up") from exc
    return done
