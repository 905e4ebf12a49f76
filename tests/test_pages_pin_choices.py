"""A sequence page's "Pin to thread" field: a bounded list of suggestions, any thread typed by name.

A store may hold thousands of threads; the page suggests the first 100 by name (saying how many
there are) in a `<datalist>` under a text field, so a thread past them is pinned by typing its name.
"""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from playwright.async_api import expect

from tests.pages_support import Library, running_library
from tests.support import TOKEN, mcp_client
from tests.test_pages_browser import WAIT_MS, chromium, signed_in_page
from tests.test_pages_signin import signed_in
from thoughtline.pages.source import PIN_CHOICES

pytestmark = pytest.mark.anyio

EXTRA = PIN_CHOICES + 5  # with the seeded "caching": 106 threads, "caching" and t000 ... t104 by name
LAST = f"t{EXTRA - 1:03d}"  # past the suggestions


async def more_threads(library: Library) -> None:
    async with mcp_client(library.url, TOKEN) as client:
        for i in range(EXTRA):
            created = await client.call_tool("configure_thread", {"action": "create", "name": f"t{i:03d}"})
            assert not created.is_error, created


async def members(library: Library, name: str) -> list[str]:
    """The thread's member ids, from the API with the bearer token."""
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}) as api:
        briefing = await api.get(library.url + f"/api/v1/threads/{name}/briefing")
    return [m["sequenceId"] for m in briefing.json()["members"]]


async def test_a_sequence_page_suggests_a_bounded_list_of_threads_and_says_how_many_there_are(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, httpx.AsyncClient() as http:
        await more_threads(library)
        await signed_in(library, http)
        page = await http.get(library.url + f"/library/sequences/{library.ids['tokens']}")
    suggested = re.findall(r'<option value="([^"]*)"></option>', page.text)
    assert suggested == ["caching", *(f"t{i:03d}" for i in range(PIN_CHOICES - 1))]
    assert '<input id="pin-thread" name="thread" list="pin-threads" required' in page.text
    assert f"the first {PIN_CHOICES} of {EXTRA + 1} threads by name are suggested" in page.text
    assert "<select" not in page.text.split('id="threads-h"')[1].split("</section>")[0]


@pytest.mark.slow
async def test_a_thread_past_the_suggestions_is_pinned_by_typing_its_name_with_the_keyboard(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, chromium() as browser:
        await more_threads(library)
        page = await signed_in_page(browser, library)
        await page.goto(library.url + f"/library/sequences/{library.ids['tokens']}")
        field = page.get_by_label("Pin to thread")
        await field.focus()
        await page.keyboard.type(LAST.upper())  # any letter case, as everywhere a name is looked up
        await page.keyboard.press("Enter")
        await expect(page).to_have_url(library.url + f"/library/sequences/{library.ids['tokens']}", timeout=WAIT_MS)
        await expect(page.locator("ul.members")).to_contain_text(LAST)
        assert await members(library, LAST) == [library.ids["tokens"]]


async def test_pinning_a_thread_name_no_thread_has_is_refused_saying_what_to_type_and_pins_nothing(
    tmp_path: Path,
) -> None:
    async with running_library(tmp_path) as library, httpx.AsyncClient() as http:
        csrf = await signed_in(library, http)
        sequence = library.url + f"/library/sequences/{library.ids['tokens']}"
        answer = await http.post(
            sequence + "/pin", data={"csrf": csrf, "thread": "no such thread"}, headers={"origin": library.url}
        )
        after = await members(library, "caching")
    assert answer.status_code == 404
    assert "There is no thread named “no such thread”." in answer.text
    assert "as Threads lists it (any letter case), or create the thread there first. Nothing changed." in answer.text
    assert "configure_thread" not in answer.text
    assert after == [library.ids["plan"]]
