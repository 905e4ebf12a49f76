"""/library/proposals while matching is still pending: the page says so, instead of a final "Nothing to review."

A match budget of 0 s (`Settings.match_budget_seconds`) leaves every pending match for later, and
with background work off nothing else runs it: the backlog the page reports is exactly the store's.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.pages_support import plant_proposals, running_library
from tests.test_pages_signin import signed_in

pytestmark = pytest.mark.anyio

NO_TIME = {"match_budget_seconds": 0.0, "background_work": False}


async def test_an_empty_proposals_page_says_matching_is_still_running_and_to_reload(tmp_path: Path) -> None:
    async with running_library(tmp_path, **NO_TIME) as library, httpx.AsyncClient() as http:
        await signed_in(library, http)
        page = await http.get(library.url + "/library/proposals")
        api = await http.get(library.url + "/api/v1/proposals")
    pending = api.json()["matchingPending"]
    assert pending == {"threads": 1, "sequences": 3}
    assert page.status_code == 200
    assert "Matching is still running for 1 thread and 3 completed sequences." in page.text
    assert 'Proposals may come: <a href="/library/proposals">reload this page</a> in a moment.' in page.text
    assert "Nothing to review yet." in page.text
    assert "Nothing to review.<" not in page.text
    assert 'id="pending"' not in page.text  # nothing pending yet: no count


async def test_a_proposals_page_with_matching_pending_lists_what_is_there_and_says_more_may_come(
    tmp_path: Path,
) -> None:
    async with running_library(tmp_path, **NO_TIME) as library, httpx.AsyncClient() as http:
        plant_proposals(library, "schema")
        await signed_in(library, http)
        page = await http.get(library.url + "/library/proposals")
    assert page.text.count('class="row proposal"') == 1
    assert '<p class="meta" id="pending">1 pending proposal</p>' in page.text
    assert "Matching is still running for 1 thread and 3 completed sequences." in page.text
    assert "More proposals may come" in page.text
    assert "Nothing to review" not in page.text
