"""Signing in to the library over real HTTP: one-time links, the session cookie, CSRF and Origin.

The app is the production wiring (`create_app`); the clock is moved by hand for expiry. These are
the rules a browser relies on; tests/test_pages_browser.py walks the same doors in Chromium.
"""

from __future__ import annotations

import os
import pty
import re
import select
import shlex
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest

from tests.oauth_support import running_stack, sign_in
from tests.pages_support import Library, running_library
from tests.support import TOKEN, ChildServer, free_port, start_child, stop_child, wait_healthy
from thoughtline.pages.session import COOKIE

pytestmark = pytest.mark.anyio

CSRF = re.compile(r'name="csrf" value="([^"]+)"')


async def signed_in(library: Library, http: httpx.AsyncClient) -> str:
    """Follow a fresh link; returns the page's CSRF token."""
    response = await http.get(library.link())
    assert response.status_code == 303
    assert response.headers["location"] == "/library"
    page = await http.get(library.url + "/library")
    assert page.status_code == 200
    match = CSRF.search(page.text)
    assert match
    return match.group(1)


async def test_a_link_signs_in_once_with_a_strict_httponly_cookie(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, httpx.AsyncClient() as http:
        link = library.link()
        first = await http.get(link)
        cookie = first.headers["set-cookie"]
        assert first.status_code == 303
        assert first.headers["location"] == "/library"
        assert COOKIE in cookie
        assert "HttpOnly" in cookie
        assert "SameSite=strict" in cookie
        async with httpx.AsyncClient() as other:
            again = await other.get(link)
        assert again.status_code == 410
        assert "already used" in again.text
        assert "set-cookie" not in again.headers


async def test_an_expired_or_altered_link_is_refused(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, httpx.AsyncClient() as http:
        link = library.link()
        library.clock.advance(61)
        expired = await http.get(link)
        assert expired.status_code == 410
        assert "expired" in expired.text
        altered = await http.get(library.link()[:-3] + "abc")
        assert altered.status_code == 400
        assert "not valid" in altered.text
        assert COOKIE not in http.cookies


async def test_without_a_session_the_pages_send_you_to_sign_in(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, httpx.AsyncClient() as http:
        page = await http.get(library.url + "/library")
        assert page.status_code == 303
        assert page.headers["location"] == "/library/signin"
        signin = await http.get(library.url + "/library/signin")
        assert signin.status_code == 401
        assert "thoughtline open" in signin.text
        write = await http.post(library.url + "/library/threads", data={"name": "x"}, headers={"origin": library.url})
        assert write.status_code == 401


async def test_the_session_cookie_never_opens_the_mcp_endpoints(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, httpx.AsyncClient() as http:
        await signed_in(library, http)
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18"}
        for path in ("/mcp", "/mcp-compat"):
            response = await http.post(library.url + path, json=body, headers=headers)
            assert response.status_code == 401, path


async def test_a_change_needs_the_sessions_token_and_our_origin(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, httpx.AsyncClient() as http:
        csrf = await signed_in(library, http)
        url = library.url + "/library/threads"
        cases = {
            # Another port of the same host passes the Host/Origin guard; only the session check stops it.
            "another origin": ({"name": "a", "csrf": csrf}, {"origin": "http://127.0.0.1:9"}),
            "no origin": ({"name": "b", "csrf": csrf}, {}),
            "no token": ({"name": "c"}, {"origin": library.url}),
            "wrong token": ({"name": "d", "csrf": "x" * 32}, {"origin": library.url}),
        }
        for case, (form, headers) in cases.items():
            refused = await http.post(url, data=form, headers=headers)
            assert refused.status_code == 403, case
            assert "Request refused" in refused.text, case
            assert "csrf_refused" not in refused.text, case  # a page speaks to a person; the code is for scripts
        threads = await http.get(url)
        assert not re.search(r">(a|b|c|d)</a>", threads.text)
        made = await http.post(url, data={"name": "ops/db <1>", "csrf": csrf}, headers={"origin": library.url})
        assert made.status_code == 303
        assert made.headers["location"] == "/library/threads/ops%2Fdb%20%3C1%3E"
        shown = await http.get(library.url + made.headers["location"])
        assert shown.status_code == 200
        assert "<h1>ops/db &lt;1&gt;</h1>" in shown.text
        renamed = await http.post(
            library.url + "/library/threads/ops%2Fdb%20%3C1%3E/rename",
            data={"newName": "ops", "csrf": csrf},
            headers={"origin": library.url},
        )
        assert renamed.headers["location"] == "/library/threads/ops"


async def test_sign_out_ends_the_session_even_for_a_kept_copy_of_the_cookie(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, httpx.AsyncClient() as http:
        csrf = await signed_in(library, http)
        kept = http.cookies[COOKIE]
        out = await http.post(library.url + "/library/signout", data={"csrf": csrf}, headers={"origin": library.url})
        assert out.status_code == 200
        assert "signed out" in out.text.lower()
        async with httpx.AsyncClient(cookies={COOKIE: kept}) as thief:
            replay = await thief.get(library.url + "/library")
        assert replay.status_code == 303
        assert replay.headers["location"] == "/library/signin"


async def test_pages_carry_a_strict_policy_and_escape_thought_text(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, httpx.AsyncClient() as http:
        await signed_in(library, http)
        for path in ("/library", f"/library/sequences/{library.ids['plan']}", "/library/threads/caching"):
            page = await http.get(library.url + path)
            policy = page.headers["content-security-policy"]
            assert "frame-ancestors 'none'" in policy, path
            assert "script-src 'self'" in policy, path
            assert "unsafe-inline" not in policy, path
            assert "http" not in policy, path
            assert "<script>alert" not in page.text, path
            assert page.text.count("<script") == page.text.count('<script type="application/json"') + 1, path


async def test_a_sequences_kind_shows_in_the_list_and_on_its_page(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, httpx.AsyncClient() as http:
        plan = library.ids["plan"]
        library.execute("UPDATE sequences SET kind = 'design <draft>' WHERE public_id = ?", (plan,))
        await signed_in(library, http)
        listed = await http.get(library.url + "/library")
        page = await http.get(library.url + f"/library/sequences/{plan}")
    assert listed.text.count("kind: design &lt;draft&gt;") == 1
    assert '<span class="chip kind">kind: design &lt;draft&gt;</span>' in page.text


def stylesheet_parts() -> str:
    """What the pages' one stylesheet should be: the App's theme and process styles, then the pages' own."""
    ui = Path(__file__).resolve().parents[1] / "ui"
    names = ("theme.css", "process.css", "library.css")
    return "\n".join(ui.joinpath(name).read_text(encoding="utf-8") for name in names)


async def test_the_pages_stylesheet_is_the_apps_theme_and_process_styles_then_their_own(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, httpx.AsyncClient() as http:
        await signed_in(library, http)
        page = await http.get(library.url + "/library")
        sheet = await http.get(library.url + "/library/assets/library.css")
    assert "<style" not in page.text
    assert sheet.headers["content-type"] == "text/css; charset=utf-8"
    assert sheet.text == stylesheet_parts()


async def test_thoughtline_open_prints_a_link_the_server_accepts(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, httpx.AsyncClient() as http:
        run = await anyio.to_thread.run_sync(
            lambda: subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "thoughtline",
                    "open",
                    "--url",
                    library.url,
                    "--data-dir",
                    str(library.settings.data_dir),
                ],
                capture_output=True,
                text=True,
                timeout=60,
                check=True,
            )
        )
        link = run.stdout.strip().splitlines()[-1]
        assert link.startswith(library.url + "/library/signin?link=")
        assert (await http.get(link)).status_code == 303
        assert (await http.get(library.url + "/library")).status_code == 200


async def test_with_the_library_off_only_a_sequence_read_by_id_remains(tmp_path: Path) -> None:
    async with running_library(tmp_path, library=False) as library, httpx.AsyncClient() as http:
        landed = await http.get(library.link(), follow_redirects=True)
        assert landed.status_code == 200
        assert "The library is off" in landed.text
        assert "/library/sequences/&lt;id&gt;" in landed.text
        assert (await http.get(library.url + f"/library/sequences/{library.ids['plan']}")).status_code == 200
        for path in ("/library/threads", "/library/threads/caching", "/library/proposals", "/library/nothing"):
            missing = await http.get(library.url + path)
            assert missing.status_code == 404, path
            assert missing.headers["content-type"].startswith("text/html")
            assert "frame-ancestors 'none'" in missing.headers["content-security-policy"]


async def test_an_unknown_library_path_or_method_gets_a_page_of_ours(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, httpx.AsyncClient() as http:
        await signed_in(library, http)
        for method, path in (("GET", "/library/nothing/here"), ("DELETE", "/library/nothing")):
            answer = await http.request(method, library.url + path, headers={"origin": library.url})
            assert answer.status_code == 404, (method, path)
            assert "<h1>Not found</h1>" in answer.text
            assert answer.headers["x-frame-options"] == "DENY"


async def test_the_api_knows_the_session_and_checks_its_changes_like_the_pages(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, httpx.AsyncClient() as http:
        csrf = await signed_in(library, http)
        listed = await http.get(library.url + "/api/v1/sequences")
        assert listed.status_code == 200
        assert {s["sequenceId"] for s in listed.json()["sequences"]} == set(library.ids.values())
        body = {"name": "from-api", "description": ""}
        no_token = await http.post(library.url + "/api/v1/threads", json=body, headers={"origin": library.url})
        assert no_token.status_code == 403
        assert no_token.json()["error"] == "csrf_refused"
        assert "send it in the X-CSRF-Token header" in no_token.json()["message"]  # not the form's wording
        foreign = await http.post(
            library.url + "/api/v1/threads", json=body, headers={"origin": "http://127.0.0.1:9", "x-csrf-token": csrf}
        )
        assert foreign.status_code == 403
        assert foreign.json()["error"] == "csrf_refused"
        made = await http.post(
            library.url + "/api/v1/threads", json=body, headers={"origin": library.url, "x-csrf-token": csrf}
        )
        assert made.status_code == 201, made.text


def test_serve_on_a_terminal_prints_a_sign_in_link_once_at_start(tmp_path: Path) -> None:
    # `make serve` runs in a terminal; SPEC §9: it prints one link at start.
    data, port = tmp_path / "data", free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("THOUGHTLINE_", "MCP_API_TOKEN"))}
    main, replica = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "thoughtline", "serve", "--host", "127.0.0.1", "--port", str(port)],
        stdout=replica,
        stderr=replica,
        env={**env, "THOUGHTLINE_DATA_DIR": str(data), "MCP_API_TOKEN": TOKEN, "PYTHONUNBUFFERED": "1"},
    )
    os.close(replica)
    seen, log = b"", tmp_path / "terminal.log"
    child = ChildServer(process, port, TOKEN, data, log)
    try:
        while not re.search(rb"/library/signin\?link=\S+\r?\n", seen):
            ready, _, _ = select.select([main], [], [], 60)
            assert ready, f"serve printed no sign-in link for 60 s: {seen!r}"
            seen += os.read(main, 4096)
        log.write_bytes(seen)
        wait_healthy(child)
        links = re.findall(r"http://\S+/library/signin\?link=\S+", seen.decode())
        assert len(links) == 1, seen
        assert links[0].startswith(child.base_url + "/library/signin?link=")
        with httpx.Client() as http:
            assert http.get(links[0]).status_code == 303
            assert http.get(child.base_url + "/library").status_code == 200
    finally:
        stop_child(child)
        os.close(main)


def test_serve_to_a_log_prints_how_to_get_a_sign_in_link_never_a_link(tmp_path: Path) -> None:
    # The link is an owner credential for a minute; SPEC §3: logs never hold secrets.
    child = start_child(tmp_path / "data")
    try:
        assert "/library/signin?link=" not in child.log()
        command = next(line.strip() for line in child.log().splitlines() if " open --data-dir " in line)
        # Printed as it can be typed: this child runs as `python -m thoughtline`, so that is the command.
        assert shlex.split(command)[:4] == [sys.executable, "-m", "thoughtline", "open"]
        made = subprocess.run(shlex.split(command), capture_output=True, text=True, timeout=60, check=False)
        assert made.returncode == 0, made.stderr
        link = made.stdout.strip().splitlines()[-1]
        assert link.startswith(child.base_url + "/library/signin?link=")
        with httpx.Client() as http:
            assert http.get(link).status_code == 303
            assert http.get(child.base_url + "/library").status_code == 200
    finally:
        stop_child(child)


async def test_an_access_token_for_the_mcp_endpoints_does_not_open_the_api(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack, httpx.AsyncClient(base_url=stack.thoughtline.url) as http:
        signed = await sign_in(stack, http)  # no resource: granted /mcp and /mcp-compat
        mcp_token = {"authorization": f"Bearer {signed.tokens['access_token']}"}
        refused = await http.get("/api/v1/sequences", headers=mcp_token)
        assert refused.status_code == 401
        assert refused.json()["error"] == "invalid_token"
        static = {"authorization": f"Bearer {stack.settings.api_token}"}
        assert (await http.get("/api/v1/sequences", headers=static)).status_code == 200


async def test_github_sign_in_keeps_to_the_allowlist(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack, httpx.AsyncClient(follow_redirects=True) as http:
        start = stack.thoughtline.url + "/library/signin/github"
        stack.fake.sign_in_as(3003, "stranger")
        refused = await http.post(start, headers={"origin": stack.thoughtline.url})
        assert refused.status_code == 403
        assert "Access denied" in refused.text
        assert COOKIE not in http.cookies
        foreign = await http.post(start, headers={"origin": "http://127.0.0.1:9"})
        assert foreign.status_code == 403
        assert not stack.fake.authorize_requests[1:]  # the foreign form never reached GitHub
        stack.fake.sign_in_as(2002, "Friend")
        allowed = await http.post(start, headers={"origin": stack.thoughtline.url})
        assert allowed.status_code == 200
        assert COOKIE in http.cookies
        library = await http.get(stack.thoughtline.url + "/library")
        assert "signed in as Friend" in library.text


async def test_a_github_session_ends_when_its_login_leaves_the_allowlist(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack, httpx.AsyncClient(follow_redirects=True) as http:
        stack.fake.sign_in_as(2002, "friend")
        await http.post(stack.thoughtline.url + "/library/signin/github", headers={"origin": stack.thoughtline.url})
        cookie = http.cookies[COOKIE]
    async with running_stack(tmp_path, allowed=("owner-login",)) as later:  # the same data directory
        async with httpx.AsyncClient(cookies={COOKIE: cookie}) as http:
            page = await http.get(later.thoughtline.url + "/library")
        assert page.status_code == 303
        assert page.headers["location"] == "/library/signin"


async def test_the_list_pages_on_with_the_apis_cursor(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, httpx.AsyncClient() as http:
        await signed_in(library, http)
        first = await http.get(library.url + "/library?limit=2")
        assert first.text.count('class="row"') == 2
        older = re.search(r'href="(/library\?[^"]*cursor=[^"]+)">Older sequences', first.text)
        assert older
        rest = await http.get(library.url + older.group(1).replace("&amp;", "&"))
        assert rest.text.count('class="row"') == 1
        assert "Older sequences" not in rest.text
        shown = re.findall(r'href="/library/sequences/(seq_[0-9a-f]+)"', first.text + rest.text)
        assert sorted(shown) == sorted(library.ids.values())


async def test_a_list_limit_that_is_not_plain_digits_is_refused_naming_limit_as_the_api_refuses_it(
    tmp_path: Path,
) -> None:
    async with running_library(tmp_path) as library, httpx.AsyncClient() as http:
        await signed_in(library, http)
        # "\u00b2" (superscript two) passes str.isdigit(); a 5,000-digit number is past int()'s limit.
        for limit in ("\u00b2", "\u0663", "9" * 5000, "-1", "2.5"):
            page = await http.get(library.url + "/library", params={"limit": limit})
            api = await http.get(library.url + "/api/v1/sequences", params={"limit": limit})
            assert (page.status_code, api.status_code) == (400, 400), limit
            assert "&#x27;limit&#x27;" in page.text, limit


async def test_a_head_request_to_a_sign_in_link_does_not_use_it_up(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, httpx.AsyncClient() as http:
        link = library.link()
        checked = await http.head(link)
        followed = await http.get(link)
        used = await http.head(link)
        made_up = await http.head(library.url + "/library/signin?link=made-up")
    assert checked.status_code == 200
    assert "set-cookie" not in checked.headers
    assert followed.status_code == 303
    assert COOKIE in followed.headers["set-cookie"]
    # A HEAD answers as a GET would, claiming nothing.
    assert (used.status_code, made_up.status_code) == (410, 400)
