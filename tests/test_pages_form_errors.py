"""A page's refusal names what the person sent: the form's own field, and the same check as the API."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.pages_support import running_library
from tests.test_pages_signin import signed_in

pytestmark = pytest.mark.anyio


async def test_pinning_without_a_thread_names_the_forms_thread_field(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, httpx.AsyncClient() as http:
        csrf = await signed_in(library, http)
        sequence = library.url + f"/library/sequences/{library.ids['plan']}"
        answer = await http.post(sequence + "/pin", data={"csrf": csrf}, headers={"origin": library.url})
    assert answer.status_code == 400
    assert "“Pin to thread” is empty" in answer.text
    assert "&#x27;name&#x27;" not in answer.text
    assert "invalid_input" not in answer.text


async def test_a_list_filter_no_thread_name_can_hold_is_invalid_input_as_in_the_api(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, httpx.AsyncClient() as http:
        await signed_in(library, http)
        page = await http.get(library.url + "/library", params={"thread": "\x00"})
    assert page.status_code == 400
    assert "“Thread filter” contains" in page.text
    assert "thread_not_found" not in page.text


async def test_a_form_whose_text_is_not_utf8_is_refused_and_creates_nothing(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, httpx.AsyncClient() as http:
        csrf = await signed_in(library, http)
        form = {"origin": library.url, "content-type": "application/x-www-form-urlencoded"}
        escaped = await http.post(library.url + "/library/threads", content=f"csrf={csrf}&name=%FF%FE", headers=form)
        raw = await http.post(
            library.url + "/library/threads", content=f"csrf={csrf}&name=".encode() + b"\xff\xfe", headers=form
        )
        fine = await http.post(
            library.url + "/library/threads", content=f"csrf={csrf}&name=%C3%A9t%C3%A9", headers=form
        )
        listed = await http.get(library.url + "/api/v1/threads")
    assert (escaped.status_code, raw.status_code, fine.status_code) == (400, 400, 303)
    assert "percent-encoded UTF-8" in escaped.text
    assert sorted(t["name"] for t in listed.json()["threads"]) == ["caching", "été"]
