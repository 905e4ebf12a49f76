"""Repeated buttons name their row, a skip link leads past the header, and no page asks for a missing icon.

In real headless Chromium: accessible names are what a screen reader announces, and the icon
request is the browser's own.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.pages_support import plant_proposals, running_library
from tests.test_pages_browser import chromium, signed_in_page

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_each_accept_reject_and_unpin_button_names_its_proposal_or_thread(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, chromium() as browser:
        plant_proposals(library, "schema", "tokens")
        page = await signed_in_page(browser, library)
        await page.goto(library.url + "/library/proposals")
        accepts = await page.get_by_role("button", name=re.compile("^Accept ")).all()
        rejects = await page.get_by_role("button", name=re.compile("^Reject ")).all()
        accept_names = {await b.get_attribute("aria-label") for b in accepts}
        reject_names = {await b.get_attribute("aria-label") for b in rejects}
        await page.goto(library.url + f"/library/sequences/{library.ids['plan']}")
        unpin_here = await page.get_by_role("button", name="Unpin from caching", exact=True).count()
        await page.goto(library.url + "/library/threads/caching")
        unpin_there = await page.get_by_role("button", name=re.compile("^Unpin Cache invalidation")).count()
    assert len(accepts) == len(accept_names) == 2
    assert len(rejects) == len(reject_names) == 2
    assert all(str(name).endswith(" into caching") for name in accept_names | reject_names)
    assert (unpin_here, unpin_there) == (1, 1)


async def test_the_first_tab_stop_skips_to_the_content(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, chromium() as browser:
        page = await signed_in_page(browser, library)
        for path in ("/library", "/library/threads/caching"):
            await page.goto(library.url + path)
            await page.wait_for_load_state("load")
            await page.keyboard.press("Tab")
            first = await page.evaluate("document.activeElement.textContent")
            await page.keyboard.press("Enter")
            landed = await page.evaluate("document.activeElement.id")
            assert (first, landed) == ("Skip to content", "main"), path


async def test_every_page_links_an_icon_of_ours_so_no_browser_asks_for_favicon_ico(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, chromium() as browser:
        page = await signed_in_page(browser, library)
        failed: list[str] = []
        page.on("response", lambda r: failed.append(r.url) if r.status >= 400 else None)
        page.on("console", lambda m: failed.append(m.text) if m.type == "error" else None)
        icons = set()
        for path in ("/library", "/library/threads/caching", "/library/proposals"):
            await page.goto(library.url + path)
            await page.wait_for_load_state("networkidle")
            icons.add(await page.evaluate("document.querySelector('link[rel=icon]')?.href ?? null"))
        (icon,) = icons
        served = await page.request.get(str(icon))
    assert failed == []
    assert icon == library.url + "/library/assets/icon.svg"
    assert served.status == 200
    assert served.headers["content-type"] == "image/svg+xml"
