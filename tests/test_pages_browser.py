"""The library as a person uses it, in real headless Chromium against the production wiring.

Sign in by the one-time link, find a sequence by search, read its branch and revision, review
proposals, pin a sequence and see the thread's briefing change, archive the thread; refused
links and cross-site forms; a second (GitHub) user who sees nothing of the first; and every
action reached from the keyboard alone.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Browser, Page, async_playwright, expect
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from tests.oauth_support import running_stack, serve
from tests.pages_support import Library, plant_proposals, running_library, seed
from tests.support import CHROMIUM, CHROMIUM_ARGS, TOKEN, mcp_client
from tests.test_app_ui_depth import CAP, LEVELS, chained_branches

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

WAIT_MS = 15_000


@asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            await browser.close()


async def signed_in_page(browser: Browser, library: Library) -> Page:
    page = await browser.new_page()
    page.set_default_timeout(WAIT_MS)
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: dialogs.append(dialog.message))
    await page.goto(library.link())
    await expect(page).to_have_url(library.url + "/library")
    page.dialogs = dialogs  # type: ignore[attr-defined]  # read back by the escaping check
    return page


async def test_a_person_finds_reads_reviews_pins_and_archives(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, chromium() as browser:
        plant_proposals(library, "schema", "tokens")
        page = await signed_in_page(browser, library)
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        # The console names a failed load without its address; this names it (a 404 seen once in CI).
        page.on(
            "response",
            lambda r: errors.append(f"{r.request.method} {r.url} -> {r.status}") if r.status >= 400 else None,
        )

        await page.get_by_role("searchbox").fill("invalidation publish")
        await page.keyboard.press("Enter")
        await expect(page.locator("#sequences")).to_contain_text("Cache invalidation")
        await page.locator("#sequences a.title").first.click()
        await expect(page).to_have_url(re.compile(r"/library/sequences/seq_"))
        process = page.locator("#process")
        await expect(process.locator(".chip.branch").first).to_have_text("write-through")
        await expect(process.locator(".chip.revision")).to_have_text("revises 1")
        await expect(page.locator("h1")).to_have_text(re.compile(r"<script>alert\('x'\)</script>"))
        await expect(process.locator("li.step").first).to_contain_text("<script>alert('x')</script>")
        assert page.dialogs == []  # type: ignore[attr-defined]

        await page.goto(library.url + "/library/proposals")
        rows = page.locator("#proposals li.proposal")
        await expect(rows).to_have_count(2)
        await rows.filter(has_text="Database migration").get_by_role("button", name="Accept").click()
        await expect(rows).to_have_count(1)
        await rows.filter(has_text="Rotate the signing").get_by_role("button", name="Reject").click()
        await expect(page.locator("#proposals")).to_contain_text("Nothing to review")

        await page.goto(library.url + "/library/threads/caching")
        members = page.locator("#members")
        await expect(members).to_contain_text("Database migration")
        await expect(members).not_to_contain_text("Rotate the signing")
        before = await page.locator("#thread-state").inner_text()

        await page.goto(library.url + f"/library/sequences/{library.ids['tokens']}")
        await page.get_by_label("Pin to thread").fill("caching")
        await page.get_by_role("button", name="Pin", exact=True).click()
        await page.goto(library.url + "/library/threads/caching")
        await expect(members).to_contain_text("Rotate the signing")
        assert await page.locator("#thread-state").inner_text() != before  # member count moved 2 -> 3

        await page.get_by_role("button", name="Archive").click()
        await expect(page.locator("#thread-state")).to_contain_text("archived")
        await expect(page.get_by_role("button", name="Unarchive")).to_be_visible()
        assert errors == []


async def test_a_used_or_expired_link_is_refused_in_the_browser(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, chromium() as browser:
        link = library.link()
        first = await browser.new_page()
        await first.goto(link)
        await expect(first).to_have_url(library.url + "/library")
        second = await (await browser.new_context()).new_page()
        await second.goto(link)
        await expect(second.locator("h1")).to_have_text("This sign-in link was already used")
        late = library.link()
        library.clock.advance(61)
        await second.goto(late)
        await expect(second.locator("h1")).to_have_text("This sign-in link has expired")
        await second.goto(library.url + "/library")
        await expect(second).to_have_url(library.url + "/library/signin")


async def test_a_form_posted_from_another_origin_is_refused(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, chromium() as browser:
        page = await signed_in_page(browser, library)
        await page.goto(library.url + "/library/threads")
        token = await page.locator('input[name="csrf"]').first.get_attribute("value")
        target = library.url + "/library/threads"

        async def evil(request: Request) -> HTMLResponse:
            # Even holding the victim's real token, the form comes from the wrong origin.
            return HTMLResponse(
                f'<form method="post" action="{target}"><input name="name" value="planted">'
                f'<input name="csrf" value="{token}"><button>Go</button></form>'
            )

        with serve(Starlette(routes=[Route("/", evil)])) as other:
            await page.goto(other.url + "/")
            async with page.expect_navigation():
                await page.get_by_role("button", name="Go").click()
            assert await page.locator("h1").inner_text() in ("Not signed in", "Request refused")
        await page.goto(library.url + "/library/threads")
        await expect(page.locator("#threads")).not_to_contain_text("planted")


async def test_a_second_github_user_sees_none_of_the_first_users_data(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack, chromium() as browser:
        async with mcp_client(stack.thoughtline.url, stack.settings.api_token) as client:
            ids = await seed(client)  # the owner's store (static token)
        stack.fake.sign_in_as(2002, "friend")
        page = await browser.new_page()
        page.set_default_timeout(WAIT_MS)
        await page.goto(stack.thoughtline.url + "/library/signin")
        await page.get_by_role("button", name="Sign in with GitHub").click()
        await expect(page).to_have_url(stack.thoughtline.url + "/library")
        await expect(page.locator(".who")).to_contain_text("friend")
        await expect(page.locator("#sequences")).to_contain_text("No sequences yet")
        for path in (f"/library/sequences/{ids['plan']}", "/library/threads/caching"):
            response = await page.goto(stack.thoughtline.url + path)
            assert response is not None, path
            assert response.status == 404, path
        await page.goto(stack.thoughtline.url + "/library/threads")
        await expect(page.locator("#threads")).not_to_contain_text("caching")
        async with httpx.AsyncClient() as http:  # the owner's GitHub sign-in reaches the owner's store
            assert (await http.get(stack.thoughtline.url + "/library")).status_code == 303


FOCUSABLE = "a[href], button, input:not([type=hidden]), select, textarea, summary"
# An element as the tests name it: its tag and its label, text, name or id.
LABEL = "a.tagName + ':' + (a.getAttribute('aria-label') || a.textContent || a.name || a.id).trim().slice(0, 60)"


async def tab_through(page: Page) -> set[str]:
    """Press Tab until focus comes back round; returns what was focused (tag + label)."""
    await page.locator("body").focus()
    reached: list[str] = []
    for _ in range(400):
        await page.keyboard.press("Tab")
        label = await page.evaluate(
            f"() => {{ const a = document.activeElement; if (!a || a === document.body) return null; return {LABEL}; }}"
        )
        if label is None or (reached and label == reached[0]):
            break
        reached.append(label)
    return set(reached)


async def test_keyboard_alone_reaches_every_action(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, chromium() as browser:
        plant_proposals(library, "schema")
        page = await signed_in_page(browser, library)
        paths = [
            "/library",
            "/library/threads",
            "/library/threads/caching",
            "/library/proposals",
            f"/library/sequences/{library.ids['plan']}",
        ]
        for path in paths:
            await page.goto(library.url + path)
            await page.wait_for_load_state("load")
            everything = set(
                await page.eval_on_selector_all(
                    FOCUSABLE,
                    # What sits in a collapsed step is reached by opening its summary (Enter) first.
                    "els => els.filter(a => a.offsetParent !== null && (a.tagName === 'SUMMARY'"
                    f" || !a.closest('details:not([open])'))).map(a => {LABEL})",
                )
            )
            missing = everything - await tab_through(page)
            assert not missing, f"{path}: not reachable by Tab: {sorted(missing)}"
        await page.goto(library.url + "/library/proposals")
        accept = page.get_by_role("button", name="Accept")
        while not await accept.evaluate("b => b === document.activeElement"):
            await page.keyboard.press("Tab")
        await page.keyboard.press("Enter")
        await expect(page.locator("#proposals")).to_contain_text("Nothing to review")


async def test_a_sequence_page_with_deeply_chained_branches_keeps_every_thought_in_view(tmp_path: Path) -> None:
    # The page draws with the App's renderer (ui/render.js): indentation stops at its cap.
    async with running_library(tmp_path) as library, chromium() as browser:
        async with mcp_client(library.url, TOKEN) as client:
            sequence_id = None
            for args in chained_branches():
                sent = args if sequence_id is None else {**args, "sequenceId": sequence_id}
                sequence_id = (await client.call_tool("sequentialthinking", sent)).structured_content["sequenceId"]
        page = await signed_in_page(browser, library)
        await page.set_viewport_size({"width": 820, "height": 900})
        await page.goto(library.url + f"/library/sequences/{sequence_id}")
        await expect(page.locator("#process li.step")).to_have_count(LEVELS + 2)
        await page.get_by_role("button", name="Expand all").click()
        # Steps off screen skip rendering (content-visibility: auto) and measure 0 wide, so how many
        # are measured would hang on the height of what sits above the process: render them all.
        await page.locator("#process li.step").evaluate_all(
            "items => items.forEach(li => { li.style.contentVisibility = 'visible'; })"
        )
        widths = await page.locator("#process li.step .text").evaluate_all(
            "items => items.map(t => t.getBoundingClientRect().width)"
        )
        assert await page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth") == 0
        assert min(widths) >= max(widths) - 6 * 18  # at most the capped indent narrower than main's
        assert await page.locator("#process li.fork .chip.depth").count() == LEVELS - CAP
