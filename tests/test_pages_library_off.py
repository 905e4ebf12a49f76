"""With THOUGHTLINE_LIBRARY=off the pages only read, as the README and the API say: no status steps, no links."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.pages_support import running_library
from tests.test_pages_signin import signed_in

pytestmark = pytest.mark.anyio

STEPS = ("pause", "resume", "complete", "abandon")


async def test_with_the_library_off_a_sequence_page_offers_no_status_steps_and_refuses_them(tmp_path: Path) -> None:
    async with running_library(tmp_path, library=False) as library, httpx.AsyncClient() as http:
        csrf = await signed_in(library, http)
        sequence = f"/library/sequences/{library.ids['plan']}"
        before = (await http.get(library.url + "/api/v1" + sequence[len("/library") :])).json()["sequence"]["status"]
        page = await http.get(library.url + sequence)
        answers = [
            await http.post(library.url + f"{sequence}/{step}", data={"csrf": csrf}, headers={"origin": library.url})
            for step in STEPS
        ]
        after = (await http.get(library.url + "/api/v1" + sequence[len("/library") :])).json()["sequence"]["status"]
    for step in STEPS:
        assert f'action="{sequence}/{step}"' not in page.text
    assert [a.status_code for a in answers] == [404] * len(STEPS)
    assert "THOUGHTLINE_LIBRARY=off" in answers[0].text
    assert after == before


async def test_with_the_library_off_the_header_links_only_to_pages_that_exist(tmp_path: Path) -> None:
    async with running_library(tmp_path, library=False) as library, httpx.AsyncClient() as http:
        await signed_in(library, http)
        pages = [
            await http.get(library.url + path)
            for path in ("/library", f"/library/sequences/{library.ids['plan']}", "/library/threads")
        ]
    for page in pages:
        assert 'href="/library/threads"' not in page.text
        assert 'href="/library/proposals"' not in page.text
        assert 'href="/library">Sequences</a>' in page.text or page.status_code == 404
    assert "THOUGHTLINE_LIBRARY=off" in pages[2].text


async def test_with_the_library_off_a_sequence_refusal_points_at_the_sequences_link_not_a_list(tmp_path: Path) -> None:
    async with running_library(tmp_path, library=False) as library, httpx.AsyncClient() as http:
        await signed_in(library, http)
        malformed = await http.get(library.url + "/library/sequences/notanid")
        missing = await http.get(library.url + "/library/sequences/seq_" + "0" * 32)
    assert "its own link" in malformed.text
    assert "list of sequences" not in malformed.text
    for page in (malformed, missing):
        assert "Back to the library" in page.text
        assert "Back to your sequences" not in page.text
