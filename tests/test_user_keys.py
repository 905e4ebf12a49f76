"""Store keys: only `owner` and `github:<ASCII account id>` name a store, and every command that takes
`--user` refuses the rest before it creates or copies anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_cli import cli
from tests.test_cli_mistakes import refused
from thoughtline.identity import is_user_key


@pytest.mark.parametrize("key", ["owner", "github:1", "github:583231", "github:9223372036854775807"])
def test_the_keys_a_caller_maps_to_are_user_keys(key: str) -> None:
    assert is_user_key(key)


@pytest.mark.parametrize(
    "key",
    [
        "github:١٢٣",
        "github:²",
        "github:\uff11\uff12\uff13",
        "github:0",
        "github:",
        "../../etc",
        "Owner",
        "github:12a",
        "gitlab:1",
        "github:1" + "0" * 19,
        "github:" + "7" * 300,
    ],
)
def test_keys_no_caller_maps_to_are_refused_non_ascii_digits_included(key: str) -> None:
    assert not is_user_key(key)


@pytest.mark.parametrize("user", ["../../etc", "github:١٢٣", "github:" + "7" * 300])
def test_new_store_refuses_a_user_key_no_caller_maps_to_and_creates_nothing(tmp_path: Path, user: str) -> None:
    data = tmp_path / "data"
    refused(
        cli("new-store", "--user", user, env={"THOUGHTLINE_DATA_DIR": str(data)}),
        f"--user {user!r} is not a store key",
        "'owner'",
    )
    assert not data.exists()


@pytest.mark.parametrize("user", ["../../etc", "github:١٢٣"])
def test_backup_refuses_a_user_key_no_caller_maps_to_and_copies_nothing(tmp_path: Path, user: str) -> None:
    data = tmp_path / "data"
    assert cli("new-store", env={"THOUGHTLINE_DATA_DIR": str(data)}).returncode == 0
    dest = tmp_path / "copy"
    refused(
        cli("backup", str(dest), "--user", user, env={"THOUGHTLINE_DATA_DIR": str(data)}),
        f"--user {user!r} is not a store key",
    )
    assert not dest.exists()
