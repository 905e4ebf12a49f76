"""docs/api.md lists exactly the API routes the app serves, and every listed route answers on a real server."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.routing import Mount, Route

from tests.api_support import API
from tests.support import TOKEN, ThreadServer, serve_in_thread
from thoughtline.api.routes import ROUTES
from thoughtline.api.thread_paths import FAMILY
from thoughtline.config import Settings
from thoughtline.web.app import create_app

DOC = (Path(__file__).resolve().parents[1] / "docs" / "api.md").read_text()
_ROW = re.compile(r"^\| `(GET|POST|PUT|PATCH|DELETE)` \| `(/api/v1/[^`?]*)")


def _shape(path: str) -> str:
    """A path with every parameter written `{}` (the docs name them as the tools do, the code as Python)."""
    return re.sub(r"\{[^}]*\}", "{}", path)


def documented() -> set[tuple[str, str]]:
    """(method, path shape) of every row of the routes table in docs/api.md."""
    return {(m.group(1), _shape(m.group(2))) for line in DOC.splitlines() if (m := _ROW.match(line))}


def test_docs_list_every_route_of_the_route_table_and_nothing_else() -> None:
    table = {(method, _shape(API + path)) for path, methods, _, _ in ROUTES for method in methods}
    assert len(documented()) == 16
    assert documented() == table


@pytest.fixture
def server(settings: Settings) -> Iterator[ThreadServer]:
    with serve_in_thread(create_app(settings)) as running:
        yield running


def test_the_app_mounts_every_path_of_the_route_table(server: ThreadServer) -> None:
    (mount,) = [r for r in server.app.routes if isinstance(r, Mount) and r.path == API]
    mounted = {_shape(API + r.path) for r in mount.routes if isinstance(r, Route) and "{rest:path}" not in r.path}
    # The /threads/{name}... paths are one route: thread names may hold "/" (api/thread_paths.py).
    table = {_shape(API + path) for path, _, _, _ in ROUTES if not path.startswith(FAMILY) or path == FAMILY}
    assert mounted == table


def test_every_documented_route_is_served_not_a_missing_route_or_method(server: ThreadServer) -> None:
    fill = {"{}": "x"}
    with httpx.Client(base_url=server.base_url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as http:
        for method, shape in sorted(documented()):
            path = shape
            for placeholder, value in fill.items():
                path = path.replace(placeholder, value)
            answer = http.request(method, path)
            assert answer.status_code < 500, (method, path, answer.text)
            assert answer.json().get("error") not in ("not_found", "method_not_allowed"), (method, path, answer.text)


def test_head_is_served_wherever_get_is_and_listed_in_allow(server: ThreadServer) -> None:
    with httpx.Client(base_url=server.base_url + API, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        head = http.head("/threads")
        assert (head.status_code, head.content) == (200, b"")
        assert http.head("/threads/nope").status_code == 404  # the GET route's own answer, headers only
        refused = http.request("PUT", "/threads")
        assert refused.status_code == 405
        assert refused.headers["allow"] == "GET, HEAD, POST"


@pytest.mark.parametrize("method", ["TRACE", "PROPFIND", "OPTIONS"])
@pytest.mark.parametrize("path", ["/threads", "/threads/a/briefing", "/sequences/seq_1"])
def test_any_other_method_answers_the_apis_json_405(server: ThreadServer, method: str, path: str) -> None:
    with httpx.Client(base_url=server.base_url + API, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        answer = http.request(method, path)
    assert answer.status_code == 405, answer.text
    assert answer.json()["error"] == "method_not_allowed"
    assert "GET, HEAD" in answer.headers["allow"]
