"""A store on a disk lost with the instance is reported loudly: /healthz, GET / and the start-up log.

SPEC §8: the Cloud Run deploy button keeps stores on the instance's in-memory disk. The app knows
from `THOUGHTLINE_STORAGE` (the button sets `ephemeral`) or, on Cloud Run, from the mount table.
"""

from __future__ import annotations

import logging
from pathlib import Path, PurePosixPath

import httpx
import pytest

from tests.support import TOKEN, serve_in_thread
from thoughtline.config import Settings, SettingsError
from thoughtline.disk import ephemeral_reason, mount_of
from thoughtline.web.app import create_app

ROOT_ONLY = "22 1 0:21 / / rw,relatime - overlay overlay rw,lowerdir=/l,upperdir=/u,workdir=/w\n"
WITH_NFS = ROOT_ONLY + "35 22 0:45 /stores /data rw,relatime - nfs4 10.0.0.2:/stores rw,vers=4.1\n"
WITH_TMPFS = ROOT_ONLY + "36 22 0:46 / /data rw - tmpfs tmpfs rw,size=65536k\n"
CLOUD_RUN = {"K_SERVICE": "thoughtline", "THOUGHTLINE_DATA_DIR": "/data", "MCP_API_TOKEN": TOKEN}


def test_the_deepest_mount_holding_a_path_is_found() -> None:
    assert mount_of(PurePosixPath("/data/stores"), WITH_NFS) == ("/data", "nfs4")
    assert mount_of(PurePosixPath("/database"), WITH_NFS) == ("/", "overlay")
    spaced = ROOT_ONLY + "37 22 0:47 / /my\\040data rw - ext4 /dev/sdb rw\n"
    assert mount_of(PurePosixPath("/my data/x"), spaced) == ("/my data", "ext4")


def test_on_cloud_run_only_a_mounted_volume_is_durable() -> None:
    assert ephemeral_reason("/data", declared="auto", on_cloud_run=True, mountinfo=WITH_NFS) is None
    assert "not on a mounted volume" in str(
        ephemeral_reason("/data", declared="auto", on_cloud_run=True, mountinfo=ROOT_ONLY)
    )
    assert ephemeral_reason("/data", declared="auto", on_cloud_run=True, mountinfo=WITH_TMPFS) is not None
    assert ephemeral_reason("/data", declared="durable", on_cloud_run=True, mountinfo=ROOT_ONLY) is None


def test_elsewhere_a_local_disk_counts_as_durable_unless_declared_ephemeral() -> None:
    assert ephemeral_reason("/srv/data", declared="auto", on_cloud_run=False, mountinfo=None) is None
    assert ephemeral_reason("/srv/data", declared="ephemeral", on_cloud_run=False, mountinfo=None) is not None


def test_settings_read_the_declaration_and_the_mount_table() -> None:
    assert Settings.from_env(CLOUD_RUN, ROOT_ONLY).ephemeral_storage is not None
    assert Settings.from_env(CLOUD_RUN, WITH_NFS).ephemeral_storage is None
    assert Settings.from_env({"THOUGHTLINE_STORAGE": "ephemeral"}).ephemeral_storage is not None
    assert Settings.from_env({}).ephemeral_storage is None
    with pytest.raises(SettingsError, match="THOUGHTLINE_STORAGE"):
        Settings.from_env({"THOUGHTLINE_STORAGE": "maybe"})


def test_a_durable_store_says_so(tmp_path: Path) -> None:
    with serve_in_thread(create_app(Settings(data_dir=tmp_path / "data", api_token=TOKEN))) as running:
        health = httpx.get(running.base_url + "/healthz").json()
        index = httpx.get(running.base_url + "/").json()
    assert health["durable"] is True
    assert index["durable"] is True
    assert "warning" not in index


def test_an_ephemeral_store_is_reported_on_health_index_and_at_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = Settings.from_env(
        {"K_SERVICE": "thoughtline", "THOUGHTLINE_DATA_DIR": str(tmp_path / "data"), "MCP_API_TOKEN": TOKEN},
        ROOT_ONLY,
    )
    with caplog.at_level(logging.WARNING), serve_in_thread(create_app(settings)) as running:
        health = httpx.get(running.base_url + "/healthz")
        index = httpx.get(running.base_url + "/").json()
    assert health.status_code == 200  # still healthy: it answers, it just will not keep anything
    assert health.json()["durable"] is False
    assert index["durable"] is False
    assert "will be lost" in index["warning"]
    assert any("NOT DURABLE" in r.getMessage() and "mounted volume" in r.getMessage() for r in caplog.records)
