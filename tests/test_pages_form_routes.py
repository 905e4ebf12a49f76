"""The form routes answer as pages: 405 with Allow for another method, and refusals a browser shows.

A form posted from a browser asks for HTML (`Accept: text/html`), so the guard's Origin and size
refusals and Starlette's form-parser errors reach the person as a page; a script still gets JSON.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.pages_support import running_library
from tests.test_pages_signin import signed_in

pytestmark = pytest.mark.anyio

BROWSER = {"accept": "text/html,application/xhtml+xml,*/*;q=0.8"}


async def test_another_method_on_a_page_path_is_405_naming_the_methods_it_takes(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, httpx.AsyncClient() as http:
        await signed_in(library, http)
        cases = [
            ("PUT", "/library/threads", "GET, HEAD, POST"),
            ("DELETE", "/library/threads", "GET, HEAD, POST"),
            ("OPTIONS", "/library/threads", "GET, HEAD, POST"),
            ("TRACE", "/library/threads", "GET, HEAD, POST"),
            ("POST", "/library", "GET, HEAD"),
            ("GET", "/library/signout", "POST"),
            ("GET", f"/library/sequences/{library.ids['plan']}/pause", "POST"),
        ]
        answers = [await http.request(method, library.url + path, headers=BROWSER) for method, path, _ in cases]
    for (method, path, allow), answer in zip(cases, answers, strict=True):
        assert answer.status_code == 405, (method, path)
        assert answer.headers["allow"] == allow, (method, path)
        assert answer.headers["content-type"].startswith("text/html"), (method, path)
        assert "<h1>Method not allowed</h1>" in answer.text


async def test_a_form_from_another_origin_or_too_large_is_refused_with_a_page_for_a_browser(tmp_path: Path) -> None:
    async with running_library(tmp_path, max_body_bytes=4096) as library, httpx.AsyncClient() as http:
        csrf = await signed_in(library, http)
        threads = library.url + "/library/threads"
        foreign = await http.post(threads, data={"csrf": csrf, "name": "x"}, headers={**BROWSER, "origin": "null"})
        large = await http.post(
            threads,
            data={"csrf": csrf, "name": "x", "description": "y" * 5000},
            headers={**BROWSER, "origin": library.url},
        )
        script = await http.post(threads, data={"csrf": csrf, "name": "x"}, headers={"origin": "null"})
        listed = await http.get(library.url + "/api/v1/threads")
    assert (foreign.status_code, large.status_code) == (403, 413)
    assert "another site" in foreign.text
    assert "THOUGHTLINE_MAX_BODY_BYTES" in large.text
    for page in (foreign, large):
        assert page.headers["content-type"].startswith("text/html")
        assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
        assert '<a href="/library">' in page.text
    assert script.json()["error"] == "forbidden_origin"  # a script still gets the JSON shape
    assert [t["name"] for t in listed.json()["threads"]] == ["caching"]


async def test_a_form_the_parser_cannot_read_is_refused_with_a_page(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, httpx.AsyncClient() as http:
        csrf = await signed_in(library, http)
        headers = {**BROWSER, "origin": library.url}
        many = "&".join(f"f{i}=1" for i in range(1001))
        pages = []
        # The token in the form, and as a header (as a script sends it): either way the form is read
        # before any view.
        for field, header in ((f"csrf={csrf}&", {}), ("", {"x-csrf-token": csrf})):
            sent = {**headers, **header}
            pages.append(
                await http.post(
                    library.url + "/library/threads",
                    content=f"{field}name=x&{many}",
                    headers={**sent, "content-type": "application/x-www-form-urlencoded"},
                )
            )
            pages.append(
                await http.post(
                    library.url + "/library/threads",
                    content=b"x",
                    headers={**sent, "content-type": "multipart/form-data"},
                )
            )
    assert len(pages) == 4
    for page in pages:
        assert page.status_code == 400
        assert page.headers["content-type"].startswith("text/html")
        assert "<h1>The form could not be read</h1>" in page.text
