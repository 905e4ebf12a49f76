"""Thread types (SPEC §5.3): derived from events until a user sets one; set_type; export/import carry it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import TOKEN, text
from tests.test_threads_transfer import cli
from tests.thread_support import Served, call, connected, create, refused, served, think
from thoughtline.config import Settings
from thoughtline.domain.thread_types import derive_type, thread_type

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("kinds", "expected"),
    [
        ([], "topic"),
        (["observation", "question", "answer", "conclusion"], "topic"),
        (["blocker", "resolution"], "case"),
        (["setback", "resolution", "decision"], "case"),
        (["blocker"], "topic"),
        (["resolution"], "topic"),
        (["decision"], "work"),
        (["milestone", "blocker"], "work"),
    ],
)
def test_a_threads_type_is_derived_from_its_event_kinds(kinds: list[str], expected: str) -> None:
    assert derive_type(kinds) == expected


def test_a_type_the_user_set_wins_over_the_events() -> None:
    assert thread_type("relationship", ["blocker", "resolution"]) == ("relationship", True)
    assert thread_type(None, ["blocker", "resolution"]) == ("case", False)


@pytest.fixture
def app(settings: Settings) -> Iterator[Served]:
    with served(settings) as running:
        yield running


async def test_blockers_and_a_resolution_make_a_case_in_the_list_and_the_briefing(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "outage")
        seq = await think(client, "Checkout returns 502s", threads=["outage"], event="blocker")
        before = (await call(client, "configure_thread", action="list"))["threads"][0]
        await think(client, "Rolled back the proxy; fixed", 2, sequenceId=seq, event="resolution", done=True)
        after = (await call(client, "configure_thread", action="list"))["threads"][0]
        brief = await call(client, "thread_briefing", name="outage")
    assert (before["type"], after["type"], after["typeSource"]) == ("topic", "case", "derived")
    assert (brief["thread"]["type"], brief["thread"]["typeSource"]) == ("case", "derived")


async def test_set_type_fixes_the_type_whatever_the_events_say(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "Dana")
        seq = await think(client, "Dana is blocked on the review", threads=["Dana"], event="blocker")
        await think(client, "Review done", 2, sequenceId=seq, event="resolution")
        result = await call(client, "configure_thread", action="set_type", name="dana", type="relationship")
        again = await call(client, "configure_thread", action="set_type", name="Dana", type="relationship")
        brief = await call(client, "thread_briefing", name="Dana")
        result_text = text(
            await client.call_tool("configure_thread", {"action": "set_type", "name": "Dana", "type": "work"})
        )
    assert (result["thread"]["type"], result["thread"]["typeSource"], result["changed"]) == (
        "relationship",
        "user",
        True,
    )
    assert again["changed"] is False
    assert brief["thread"]["type"] == "relationship"
    assert "now a work thread" in result_text


@pytest.mark.parametrize(
    ("args", "needle"),
    [({"type": "project"}, "'type' must be one of work, case, relationship, topic"), ({}, "'type' is required")],
)
async def test_set_type_refuses_an_unknown_or_missing_type_and_writes_nothing(
    app: Served, args: dict[str, str], needle: str
) -> None:
    async with connected(app) as client:
        await create(client, "pg")
        before = app.query("SELECT type, updated_at FROM threads")
        code, message = await refused(client, "configure_thread", action="set_type", name="pg", **args)
    assert code == "invalid_input"
    assert needle in message
    assert app.query("SELECT type, updated_at FROM threads") == before


async def test_export_and_import_carry_a_set_type_and_leave_a_derived_one_derived(tmp_path: Path) -> None:
    source = Settings(data_dir=tmp_path / "source", api_token=TOKEN)
    with served(source) as app:
        async with connected(app) as client:
            await create(client, "Dana")
            await create(client, "pg")
            await call(client, "configure_thread", action="set_type", name="Dana", type="relationship")
            await think(client, "Pick logical replication", threads=["pg"], event="decision")
    exported = cli("export", data=source.data_dir)
    assert exported.returncode == 0, exported.stderr
    records = {r["name"]: r for r in map(json.loads, exported.stdout.splitlines()) if r["type"] == "thread"}
    target = Settings(data_dir=tmp_path / "target", api_token=TOKEN)
    imported = cli("import", "-", data=target.data_dir, stdin=exported.stdout)
    assert imported.returncode == 0, imported.stderr
    with served(target) as copy:
        async with connected(copy) as client:
            listed = (await call(client, "configure_thread", action="list"))["threads"]
    assert (records["Dana"]["thread_type"], records["pg"]["thread_type"]) == ("relationship", None)
    assert {t["name"]: (t["type"], t["typeSource"]) for t in listed} == {
        "Dana": ("relationship", "user"),
        "pg": ("work", "derived"),
    }


async def test_import_refuses_a_thread_type_no_tool_could_set_and_imports_nothing(tmp_path: Path) -> None:
    source = Settings(data_dir=tmp_path / "source", api_token=TOKEN)
    with served(source) as app:
        async with connected(app) as client:
            await create(client, "pg")
    exported = cli("export", data=source.data_dir)
    edited = "\n".join(
        json.dumps({**r, "thread_type": "project"}) if r["type"] == "thread" else json.dumps(r)
        for r in map(json.loads, exported.stdout.splitlines())
    )
    target = Settings(data_dir=tmp_path / "target", api_token=TOKEN)
    imported = cli("import", "-", data=target.data_dir, stdin=edited)
    assert imported.returncode != 0
    assert "'thread_type' must be one of work, case, relationship, topic" in imported.stderr
    with served(target) as copy:
        async with connected(copy) as client:
            listed = await call(client, "configure_thread", action="list", includeArchived=True)
    assert listed["threads"] == []


async def test_set_type_auto_makes_a_set_type_derived_from_the_events_again(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "outage")
        seq = await think(client, "Checkout returns 502s", threads=["outage"], event="blocker")
        await think(client, "Rolled back the proxy; fixed", 2, sequenceId=seq, event="resolution", done=True)
        await call(client, "configure_thread", action="set_type", name="outage", type="relationship")
        reset = await call(client, "configure_thread", action="set_type", name="outage", type="auto")
        again = await call(client, "configure_thread", action="set_type", name="outage", type="auto")
        brief = await call(client, "thread_briefing", name="outage")
        reset_text = text(
            await client.call_tool("configure_thread", {"action": "set_type", "name": "outage", "type": "auto"})
        )
    assert (reset["thread"]["type"], reset["thread"]["typeSource"], reset["changed"]) == ("case", "derived", True)
    assert again["changed"] is False
    assert (brief["thread"]["type"], brief["thread"]["typeSource"]) == ("case", "derived")
    assert app.query("SELECT type FROM threads") == [(None,)]
    assert "derived from its events" in reset_text
