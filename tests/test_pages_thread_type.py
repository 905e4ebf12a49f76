"""The thread page's type form over real HTTP: set a type, and set it back to derived (auto)."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from tests.pages_support import running_library
from tests.test_pages_signin import signed_in

pytestmark = pytest.mark.anyio

SELECTED = re.compile(r'<option value="([a-z]+)" selected>')


async def test_the_type_form_sets_a_type_and_auto_sets_it_back_to_derived(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, httpx.AsyncClient() as http:
        csrf = await signed_in(library, http)
        origin = {"origin": library.url}
        page = library.url + "/library/threads/ops"
        await http.post(library.url + "/library/threads", data={"name": "ops", "csrf": csrf}, headers=origin)
        derived = await http.get(page)
        await http.post(page + "/type", data={"type": "relationship", "csrf": csrf}, headers=origin)
        user_set = await http.get(page)
        await http.post(page + "/type", data={"type": "auto", "csrf": csrf}, headers=origin)
        again = await http.get(page)
    assert SELECTED.findall(derived.text) == ["auto"]
    assert "derived from its events" in derived.text
    assert SELECTED.findall(user_set.text) == ["relationship"]
    assert "type: relationship (set by you)" in user_set.text
    assert SELECTED.findall(again.text) == ["auto"]
    assert "type: topic (derived from its events)" in again.text
