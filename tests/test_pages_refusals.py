"""A refusal on the pages speaks to a person: what happened, what to do on the pages, and a link back."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from tests.pages_support import Library, plant_proposals, running_library
from tests.test_pages_signin import signed_in

pytestmark = pytest.mark.anyio

# What only an MCP client can act on: tool names, their actions, their argument names, wire codes.
TOOL_WORDS = re.compile(
    r"configure_thread|review_proposals|manage_sequence|sequentialthinking|action &#x27;|includeArchived|"
    r"newName|proposalId|sequenceId|_not_found|invalid_input|thread_exists|thread_archived"
)


def back_link(text: str) -> str:
    """The refusal page's link back."""
    found = re.search(r'<a class="back" href="([^"]*)">', text)
    assert found, text
    return found.group(1)


async def post(library: Library, http: httpx.AsyncClient, path: str, **fields: str) -> httpx.Response:
    """A same-origin form POST, as the page's own form sends it."""
    return await http.post(library.url + path, data=fields, headers={"origin": library.url})


async def test_a_proposal_decided_in_another_tab_says_so_and_links_back_to_proposals(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, httpx.AsyncClient() as http:
        csrf = await signed_in(library, http)
        plant_proposals(library, "schema")
        await post(library, http, "/library/proposals/prp_1/accept", csrf=csrf)
        again = await post(library, http, "/library/proposals/prp_1/accept", csrf=csrf)
    assert again.status_code == 404
    assert "already accepted or rejected (perhaps in another tab)" in again.text
    assert back_link(again.text) == "/library/proposals"
    assert not TOOL_WORDS.search(again.text)


async def test_a_proposal_of_an_archived_thread_says_to_unarchive_it_on_its_page(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, httpx.AsyncClient() as http:
        csrf = await signed_in(library, http)
        plant_proposals(library, "schema")
        await post(library, http, "/library/threads/caching/archive", csrf=csrf)
        held = await post(library, http, "/library/proposals/prp_1/accept", csrf=csrf)
    assert held.status_code == 409
    assert "press Unarchive" in held.text
    assert back_link(held.text) == "/library/proposals"
    assert not TOOL_WORDS.search(held.text)


async def test_changing_a_thread_renamed_in_another_tab_points_at_threads(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, httpx.AsyncClient() as http:
        csrf = await signed_in(library, http)
        await post(library, http, "/library/threads/caching/rename", csrf=csrf, newName="cache work")
        stale = await post(library, http, "/library/threads/caching/describe", csrf=csrf, description="x")
    assert stale.status_code == 404
    assert "This thread was renamed or deleted (perhaps in another tab)" in stale.text
    assert back_link(stale.text) == "/library/threads"
    assert not TOOL_WORDS.search(stale.text)


async def test_a_missing_thread_or_sequence_page_says_so_without_tool_advice(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, httpx.AsyncClient() as http:
        await signed_in(library, http)
        thread = await http.get(library.url + "/library/threads/nope")
        malformed = await http.get(library.url + "/library/sequences/notanid")
        missing = await http.get(library.url + "/library/sequences/seq_" + "0" * 32)
    assert (thread.status_code, malformed.status_code, missing.status_code) == (404, 400, 404)
    assert back_link(thread.text) == "/library/threads"
    assert "seq_ followed by 32 hex characters" in malformed.text
    assert "no sequence with this id" in missing.text
    for page in (thread, malformed, missing):
        assert not TOOL_WORDS.search(page.text), page.text


async def test_pinning_a_deleted_sequence_says_it_was_deleted_and_links_to_the_list(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, httpx.AsyncClient() as http:
        csrf = await signed_in(library, http)
        gone = "seq_" + "0" * 32
        pinned = await post(library, http, f"/library/sequences/{gone}/pin", csrf=csrf, thread="caching")
    assert pinned.status_code == 404
    assert "This sequence was deleted" in pinned.text
    assert back_link(pinned.text) == "/library"
    assert not TOOL_WORDS.search(pinned.text)


async def test_a_refused_rename_names_the_forms_label_and_links_back_to_the_thread(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, httpx.AsyncClient() as http:
        csrf = await signed_in(library, http)
        await post(library, http, "/library/threads", csrf=csrf, name="Postgres migration")
        long = await post(library, http, "/library/threads/caching/rename", csrf=csrf, newName="x" * 65)
        taken = await post(library, http, "/library/threads/caching/rename", csrf=csrf, newName="POSTGRES MIGRATION")
    assert long.status_code == 400
    assert "“New name” is 65 characters" in long.text
    assert taken.status_code == 409
    assert "A thread named “POSTGRES MIGRATION” already exists" in taken.text
    for page in (long, taken):
        assert back_link(page.text) == "/library/threads/caching"
        assert not TOOL_WORDS.search(page.text), page.text


async def test_a_thread_address_no_name_can_have_links_to_threads_not_back_to_itself(tmp_path: Path) -> None:
    async with running_library(tmp_path) as library, httpx.AsyncClient() as http:
        await signed_in(library, http)
        pages = [await http.get(library.url + "/library/threads/" + name) for name in ("x" * 100, "%20")]
    for page in pages:
        assert page.status_code == 400
        assert "No thread can have the name" in page.text
        assert back_link(page.text) == "/library/threads"


async def test_a_sequence_page_refuses_a_pasted_newest_first_cursor_instead_of_showing_that_view(
    tmp_path: Path,
) -> None:
    async with running_library(tmp_path) as library, httpx.AsyncClient() as http:
        await signed_in(library, http)
        sequence = library.ids["plan"]
        api = (
            await http.get(library.url + f"/api/v1/sequences/{sequence}", params={"order": "desc", "limit": 1})
        ).json()
        page = await http.get(library.url + f"/library/sequences/{sequence}", params={"cursor": api["nextCursor"]})
    assert page.status_code == 400
    assert "This link is out of date" in page.text
