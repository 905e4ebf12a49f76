"""A real browser walks consent → GitHub → client redirect under the consent page's CSP.

Browsers apply a page's CSP `form-action` to every redirect that follows a form submission, so the
consent page must allow GitHub's origin and the client's redirect origin. Thoughtline, the fake
GitHub and the client each listen on their own loopback port (three origins), so every hop is
checked. A control run rewrites the policy to `form-action 'self'` and shows the chain then stalls,
proving the test can see the trap.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Request as BrowserRequest
from playwright.async_api import Route, async_playwright
from playwright.async_api import TimeoutError as PlaywrightTimeoutError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route as StarletteRoute

from tests.oauth_support import authorize_url, pkce, query_of, register, running_stack, serve
from tests.support import CHROMIUM, CHROMIUM_ARGS

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

WAIT_MS = 15_000


async def landing(request: Request) -> PlainTextResponse:
    return PlainTextResponse("client received the redirect")


async def walk(tmp_path: Path, *, strict_form_action: bool) -> tuple[str, list[str]]:
    """Open /authorize in Chromium, press Continue, return the final URL and console messages."""
    client_app = Starlette(routes=[StarletteRoute("/cb", landing)])
    with serve(client_app) as client_site:
        redirect_uri = client_site.url + "/cb"
        async with running_stack(tmp_path) as stack, httpx.AsyncClient(base_url=stack.thoughtline.url) as http:
            client_id = (await register(http, [redirect_uri])).json()["client_id"]
            url = authorize_url(stack.thoughtline.url, client_id, pkce()[1], redirect_uri=redirect_uri)
            # Playwright does not route requests reached through a redirect, so the browser opens the
            # consent page /authorize sends it to directly.
            consent_url = stack.thoughtline.url + (await http.get(url)).headers["location"]
            async with async_playwright() as playwright:
                browser = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
                page = await browser.new_page()
                console: list[str] = []
                page.on("console", lambda message: console.append(message.text))

                async def tighten(route: Route, request: BrowserRequest) -> None:
                    response = await route.fetch()
                    headers = dict(response.headers)
                    headers["content-security-policy"] = headers["content-security-policy"].replace(
                        headers["content-security-policy"].split("form-action ")[1].split(";")[0], "'self'"
                    )
                    await route.fulfill(response=response, headers=headers)

                if strict_form_action:
                    await page.route(f"{stack.thoughtline.url}/consent?*", tighten)
                await page.goto(consent_url)
                await page.get_by_role("button", name="Continue with GitHub").click()
                # The control run is expected to stall; then we report where it stopped.
                with contextlib.suppress(PlaywrightTimeoutError):
                    await page.wait_for_url(f"{redirect_uri}?*", timeout=3000 if strict_form_action else WAIT_MS)
                final = page.url
                await browser.close()
    return final, console


async def test_a_real_browser_completes_consent_github_and_the_client_redirect(tmp_path: Path) -> None:
    final, console = await walk(tmp_path, strict_form_action=False)
    params = query_of(final)
    assert final.split("?")[0].endswith("/cb"), final
    assert params["code"].startswith("tlc_")
    assert params["state"] == "client-state-123"
    assert not [line for line in console if "Content Security Policy" in line]


async def test_form_action_self_alone_would_stall_the_chain(tmp_path: Path) -> None:
    final, console = await walk(tmp_path, strict_form_action=True)
    assert "code=" not in final
    assert any("form-action" in line for line in console), console
