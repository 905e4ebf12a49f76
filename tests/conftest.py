"""Shared fixtures: settings on a temp data dir, an app served on 127.0.0.1, a child server process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.interop.toolchain import InteropSetupError, Toolchain, toolchain
from tests.support import TOKEN, ChildServer, ThreadServer, serve_in_thread, start_child, stop_child
from thoughtline.config import Settings
from thoughtline.library.embed import MiniLMEmbedder
from thoughtline.web.app import create_app


@pytest.fixture
def anyio_backend() -> str:
    """Run async tests on asyncio (the server's loop)."""
    return "asyncio"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Settings on a fresh data dir with the test bearer token."""
    return Settings(data_dir=tmp_path / "data", api_token=TOKEN)


@pytest.fixture
def server(settings: Settings) -> Iterator[ThreadServer]:
    """The app served by uvicorn on a free loopback port (in a thread of this process)."""
    with serve_in_thread(create_app(settings)) as running:
        yield running


@pytest.fixture
def live_server(tmp_path: Path) -> Iterator[ChildServer]:
    """`python -m thoughtline serve` as a child process on a fresh data dir."""
    child = start_child(tmp_path / "live-data")
    try:
        yield child
    finally:
        stop_child(child)


@pytest.fixture(scope="session")
def node_tools() -> Toolchain:
    """The Node toolchain of tests/interop (installed on first use); a failed install fails, never skips."""
    try:
        return toolchain()
    except InteropSetupError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="module")
def module_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChildServer]:
    """One `thoughtline serve` child process shared by a module's tests."""
    child = start_child(tmp_path_factory.mktemp("module-server") / "data")
    try:
        yield child
    finally:
        stop_child(child)


@pytest.fixture(scope="session")
def embedder() -> MiniLMEmbedder:
    """The real MiniLM model, loaded once for the whole run (tests that need it ask for it)."""
    return MiniLMEmbedder()
