"""Instants at the edge of the calendar: an offset that moves a time outside years 1-9999 in UTC is
the caller's mistake (`invalid_input`), never a storage failure."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.thread_support import Served, call, connected, create, refused, served
from thoughtline.config import Settings
from thoughtline.storage.rows import iso

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_FIRST_MS = int((datetime(1, 1, 1, tzinfo=UTC) - _EPOCH) / timedelta(milliseconds=1))
_LAST_MS = int((datetime(9999, 12, 31, 23, 59, 59, 999_000, tzinfo=UTC) - _EPOCH) / timedelta(milliseconds=1))

pytestmark = pytest.mark.anyio


@pytest.fixture
def app(settings: Settings) -> Iterator[Served]:
    with served(settings) as running:
        yield running


@pytest.mark.parametrize("since", ["0001-01-01T00:00:00+23:59", "9999-12-31T23:59:59-23:59"])
async def test_a_briefing_since_outside_the_calendar_in_utc_is_invalid_input(app: Served, since: str) -> None:
    async with connected(app) as client:
        await create(client, "Hiring")
        code, message = await refused(client, "thread_briefing", name="Hiring", since=since)
    assert code == "invalid_input"
    assert "'since'" in message
    assert "1-9999" in message


async def test_a_briefing_since_the_first_full_day_of_the_calendar_is_answered(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "Hiring")
        brief = await call(client, "thread_briefing", name="Hiring", since="0001-01-02T00:00:00+23:59")
    assert brief["changedSince"]["since"].startswith("0001-01-01T00:01:00")


@given(st.integers(min_value=_FIRST_MS, max_value=_LAST_MS))
def test_every_stored_instant_of_the_calendar_is_written_as_datetime_writes_it(ms: int) -> None:
    exact = (_EPOCH + timedelta(milliseconds=ms)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    assert iso(ms) == exact
