"""`thoughtline serve` prints connect lines the server itself accepts, whatever address it binds."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.support import TOKEN, ChildServer, free_port, stop_child, wait_healthy
from thoughtline.cli import _connect_help
from thoughtline.config import Settings

ANY = "0.0.0.0"  # noqa: S104 - the setting under test, never bound here
TOOLS_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
HEADERS = {
    "Authorization": f"Bearer {TOKEN}",
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
}


def banner(**settings: object) -> str:
    out = io.StringIO()
    _connect_help(Settings(port=8000, **settings), "$MCP_API_TOKEN", out)  # type: ignore[arg-type]
    return out.getvalue()


@pytest.mark.parametrize(
    ("settings", "base"),
    [
        ({"host": ANY}, "http://127.0.0.1:8000"),
        ({"host": "::"}, "http://127.0.0.1:8000"),
        ({"host": ANY, "allowed_hostnames": ("thoughts.lan", "other")}, "http://thoughts.lan:8000"),
        ({"host": ANY, "public_url": "https://t.example.com"}, "https://t.example.com"),
        ({"host": "192.0.2.7"}, "http://192.0.2.7:8000"),
        ({"host": "::1"}, "http://[::1]:8000"),
    ],
)
def test_a_wildcard_bind_is_never_printed_as_the_address_to_connect_to(settings: dict[str, object], base: str) -> None:
    printed = banner(**settings)
    assert f"  MCP (2025 clients): {base}/mcp-compat\n" in printed
    assert f"thoughtline {base}/mcp-compat --header" in printed
    assert ANY not in printed.split("Note:")[0]


def test_a_wildcard_bind_with_only_loopback_names_says_what_other_machines_need() -> None:
    assert "ALLOWED_HOSTNAMES" in banner(host=ANY)
    assert "THOUGHTLINE_PUBLIC_URL" in banner(host=ANY)
    assert "Note:" not in banner(host=ANY, allowed_hostnames=("thoughts.lan",))
    assert "Note:" not in banner(host="127.0.0.1")


def test_the_url_printed_by_serve_on_all_interfaces_is_one_the_server_answers(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("THOUGHTLINE_", "MCP_API_TOKEN", "ALLOWED_"))}
    env.update({"THOUGHTLINE_DATA_DIR": str(tmp_path / "data"), "MCP_API_TOKEN": TOKEN, "PYTHONUNBUFFERED": "1"})
    log_path = tmp_path / "serve.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "thoughtline", "serve", "--host", ANY, "--port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )
    child = ChildServer(process, port, TOKEN, tmp_path / "data", log_path)
    try:
        wait_healthy(child)
        printed = re.search(r"MCP \(2025 clients\): (\S+)", child.log())
        assert printed is not None, child.log()
        response = httpx.post(printed.group(1), json=TOOLS_LIST, headers=HEADERS)
    finally:
        stop_child(child)
    assert printed.group(1) == f"http://127.0.0.1:{port}/mcp-compat"
    assert response.status_code == 200, response.text
    assert "set ALLOWED_HOSTNAMES" in child.log()
