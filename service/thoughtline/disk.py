"""Whether the stores sit on a disk that outlives the instance (SPEC §8: say it loudly when not).

A Cloud Run instance's own file system lives in memory and is gone when the instance stops; only
a mounted volume (NFS, say) keeps what was written. So on Cloud Run (`K_SERVICE` is set there) the
data directory is durable only if a mount other than the root, and not an in-memory one, holds
it. Elsewhere a local disk is assumed durable unless the operator says otherwise
(`THOUGHTLINE_STORAGE=ephemeral`, which the deploy button sets). Pure functions over the mount
table's text, so they are tested without a Cloud Run instance; `config.py` reads the real one.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

MOUNTINFO = "/proc/self/mountinfo"
IN_MEMORY = frozenset({"tmpfs", "ramfs", "overlay", "rootfs"})


def _unescape(field: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as octal (\040 …).
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def mount_of(path: PurePosixPath, mountinfo: str) -> tuple[str, str] | None:
    """(mount point, file system type) of the mount holding `path`, from mountinfo text."""
    best: tuple[str, str] | None = None
    for line in mountinfo.splitlines():
        fields = line.split()
        if "-" not in fields or len(fields) < 5:
            continue
        point = _unescape(fields[4])
        fstype = fields[fields.index("-") + 1] if fields.index("-") + 1 < len(fields) else ""
        holds = path == PurePosixPath(point) or PurePosixPath(point) in path.parents
        # Later lines mount over earlier ones at the same point; deeper points win.
        if holds and (best is None or len(point) >= len(best[0])):
            best = (point, fstype)
    return best


def ephemeral_reason(data_dir: str, *, declared: str, on_cloud_run: bool, mountinfo: str | None) -> str | None:
    """Why the stores would be lost when the instance stops, or None when they sit on a durable disk.

    `declared` is THOUGHTLINE_STORAGE: `ephemeral`, `durable` (trust the operator) or `auto`.
    """
    if declared == "ephemeral":
        return "THOUGHTLINE_STORAGE=ephemeral: the stores sit on a disk that is lost when the instance stops"
    if declared == "durable" or not on_cloud_run:
        return None
    where = mount_of(PurePosixPath(data_dir), mountinfo or "")
    if where is None or where[0] == "/" or where[1] in IN_MEMORY:
        return (
            f"on Cloud Run the data directory {data_dir} is not on a mounted volume, so the stores live in "
            "the instance's memory and are lost when it stops; mount a volume there (infra/cloudrun/README.md)"
        )
    return None
