"""A page's query string is read by the API's rules: a bad or unknown parameter is refused, never ignored."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.pages_support import running_library
from tests.test_pages_refusals import back_link
from tests.test_pages_signin import signed_in

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("path", "params", "said"),
    [
        ("/library", {"status": "bogus"}, "&#x27;status&#x27; must be one of active, paused, completed, abandoned"),
        ("/library", {"limit": "1000"}, "&#x27;limit&#x27; must be from 1 to 50; got 1000"),
        ("/library", {"foo": "1"}, "unknown parameter &#x27;foo&#x27;"),
        ("/library/threads", {"includeArchived": "maybe"}, "unknown parameter &#x27;includeArchived&#x27;"),
        ("/library/proposals", {"limit": "5"}, "unknown parameter &#x27;limit&#x27;"),
        ("/library/threads/caching", {"x": "1"}, "unknown parameter &#x27;x&#x27;"),
        ("/library", (("status", "bogus"), ("status", "active")), "&#x27;status&#x27; is given more than once"),
        ("/library", {"q": "x" * 3000}, "&#x27;q&#x27; is"),
    ],
)
async def test_a_bad_or_unknown_query_parameter_is_refused_naming_it_with_a_link_to_the_page(
    tmp_path: Path, path: str, params: dict[str, str] | tuple[tuple[str, str], ...], said: str
) -> None:
    async with running_library(tmp_path) as library, httpx.AsyncClient() as http:
        await signed_in(library, http)
        query = httpx.QueryParams(params)  # pairs keep a repeated parameter
        page = await http.get(library.url + path, params=query)
        api = await http.get(library.url + "/api/v1/sequences", params=query) if path == "/library" else None
    assert page.status_code == 400
    assert said in page.text
    assert back_link(page.text) == path
    assert api is None or api.status_code == 400  # the API refuses the same parameter


async def test_the_pages_own_links_and_an_empty_filter_still_work(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, httpx.AsyncClient() as http:
        await signed_in(library, http)
        answers = [
            await http.get(library.url + "/library", params=params)
            for params in ({"status": "active", "limit": "50"}, {"status": "", "cursor": ""}, {"q": "cache"})
        ]
    assert [a.status_code for a in answers] == [200, 200, 200]
