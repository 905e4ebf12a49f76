"""The file-system side of stores: private modes, a file's identity, and durable directory entries.

Stores hold people's reasoning, so their files are 0600 and their folders 0700 whatever the
umask (an explicit chmod, because the mode given to open/mkdir is masked). SQLite gives a
database's -wal, -shm and -journal files the mode of the database file itself, so creating the
database file privately before SQLite opens it keeps the whole family private.
"""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

FILE_MODE = 0o600
DIR_MODE = 0o700


def private_dir(path: Path) -> Path:
    """Create `path` (and parents) if needed and make it 0700 (when this process may)."""
    path.mkdir(parents=True, exist_ok=True)
    if stat.S_IMODE(path.stat().st_mode) != DIR_MODE:
        # A folder someone else owns (a mounted volume) keeps its mode; its files are still 0600.
        with contextlib.suppress(PermissionError):
            os.chmod(path, DIR_MODE)
    return path


def create_private_file(path: Path) -> bool:
    """Create an empty 0600 file at `path`; False (and nothing changed) when it already exists."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return False
    try:
        os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)
    return True


def fsync_dir(path: Path) -> None:
    """Make the directory's entries (a new or renamed file) durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class FileIdentity:
    """Which file a path named when a store was opened: (device, inode)."""

    device: int
    inode: int

    @classmethod
    def of(cls, path: Path) -> FileIdentity | None:
        """The identity of the file at `path` now, or None when nothing is there."""
        try:
            found = os.stat(path)
        except FileNotFoundError:
            return None
        return cls(found.st_dev, found.st_ino)

    def change_at(self, path: Path) -> str | None:
        """What happened to the file since: 'deleted', 'replaced', or None when it is the same file."""
        now = FileIdentity.of(path)
        if now is None:
            return "deleted"
        return None if now == self else "replaced"


def set_aside(path: Path, identity: FileIdentity | None, suffix: str) -> Path | None:
    """Rename the file at `path` to `path + suffix` if it is still the file `identity` names.

    Used for the WAL of a store file that was deleted or replaced while open: SQLite keeps that
    WAL when it closes, and would apply it to whatever file is put at the path next.
    """
    if identity is None or identity.change_at(path) is not None:
        return None
    target = path.with_name(path.name + suffix)
    os.replace(path, target)
    return target


def remove_quietly(path: Path) -> None:
    """Delete a file if it is there (cleanup of our own temporary files)."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
