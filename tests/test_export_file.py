"""`thoughtline export -o FILE` writes a new file only its owner can read, as stores are: never
world-readable, never over an existing file, never through a symlink."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.import_support import run, written_store


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("export") / "data"
    written_store(folder)
    return folder


@pytest.fixture
def open_umask() -> Iterator[None]:
    """The usual umask 022, under which a plain open() makes a file everyone can read."""
    before = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(before)


@pytest.mark.usefixtures("open_umask")
def test_the_export_file_is_created_readable_by_its_owner_only(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "store.jsonl"
    ran = run(capsys, "export", "--data-dir", str(data), "-o", str(out))
    assert ran.code == 0, ran.err
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert out.read_text().count('"type": "thought"') == 4


def test_an_existing_file_is_refused_and_left_as_it_was(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "notes.txt"
    out.write_text("keep me\n")
    ran = run(capsys, "export", "--data-dir", str(data), "-o", str(out))
    assert ran.code == 1
    assert ran.err.startswith(f"error: {out} already exists")
    assert "name another one" in ran.err
    assert out.read_text() == "keep me\n"


@pytest.mark.parametrize("dangling", [False, True])
def test_a_symlink_is_refused_and_its_target_untouched(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], dangling: bool
) -> None:
    target = tmp_path / "elsewhere.txt"
    if not dangling:
        target.write_text("someone else's\n")
    link = tmp_path / "export.jsonl"
    link.symlink_to(target)
    ran = run(capsys, "export", "--data-dir", str(data), "-o", str(link))
    assert ran.code == 1
    assert "already exists" in ran.err
    assert "Traceback" not in ran.err
    if dangling:
        assert not target.exists()
    else:
        assert target.read_text() == "someone else's\n"
