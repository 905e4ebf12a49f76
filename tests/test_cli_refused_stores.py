"""A store the server refuses to open (another store's file, or an emptied one) is refused by the CLI too.

`import` into such a store would report a success no caller could ever see, and `backup` would copy
it as if it were sound; both refuse in one `error:` line that points at `thoughtline check`, and change
nothing. `check` says what such a store is and what to do, never "open it once to migrate".
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.test_cli_mistakes import refused
from tests.test_store_check import cli, make_store, records
from thoughtline.identity import OWNER_KEY


def digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def swapped(data: Path) -> Path:
    """The owner's store with another user's file copied over it."""
    owner = make_store(data, OWNER_KEY)
    other = make_store(data, "github:42")
    owner.write_bytes(other.read_bytes())
    return owner


def emptied(data: Path) -> Path:
    """The owner's store truncated to zero bytes."""
    owner = make_store(data, OWNER_KEY)
    os.truncate(owner, 0)
    return owner


@pytest.mark.parametrize("damage", [swapped, emptied])
def test_import_into_a_store_the_server_refuses_is_refused_and_writes_nothing(
    tmp_path: Path, damage: Callable[[Path], Path]
) -> None:
    data = tmp_path / "data"
    damage(data)
    before = digests(data / "stores")
    result = cli("import", "--data-dir", str(data), "-", stdin=records(3).replace("5" * 32, "6" * 32))
    refused(result, "thoughtline check", "Nothing was imported")
    assert result.stderr.count("\n") == 1
    assert "imported" not in result.stdout
    after = digests(data / "stores")
    assert {k: v for k, v in after.items() if not k.endswith(("-wal", "-shm"))} == {
        k: v for k, v in before.items() if not k.endswith(("-wal", "-shm"))
    }


@pytest.mark.parametrize("damage", [swapped, emptied])
def test_backup_of_a_store_the_server_refuses_is_refused(tmp_path: Path, damage: Callable[[Path], Path]) -> None:
    data = tmp_path / "data"
    damage(data)
    result = cli("backup", str(tmp_path / "copy"), "--data-dir", str(data))
    refused(result, "thoughtline check", "nothing was backed up")
    assert result.stderr.count("\n") == 1
    assert not list((tmp_path / "copy").rglob("*.sqlite3*"))


def test_check_calls_an_emptied_store_empty_and_does_not_advise_opening_it(tmp_path: Path) -> None:
    data = tmp_path / "data"
    owner = emptied(data)
    result = cli("check", "--data-dir", str(data))
    assert result.returncode == 1
    line = next(line for line in result.stdout.splitlines() if line.startswith(owner.name))
    assert "is empty" in line
    assert "restore it from a backup" in line
    assert "different store" not in line
    assert "open it once" not in line
