"""Thread names that look the same are one name: invisible characters are refused, compatibility
forms fold together, and a store named under the earlier rule keeps every thread reachable."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

from tests.api_support import api_client, refusal
from tests.thread_support import Served, call, connected, create, refused, served
from thoughtline.config import Settings
from thoughtline.domain.thread_names import name_key
from thoughtline.storage import migrations

pytestmark = pytest.mark.anyio

FULLWIDTH = "".join(chr(ord(c) + 0xFEE0) for c in "hiring")  # the fullwidth forms of "hiring"


@pytest.fixture
def app(settings: Settings) -> Iterator[Served]:
    with served(settings) as running:
        yield running


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("\u200b", "U+200B (ZERO WIDTH SPACE)"),
        ("hi\u200bring", "U+200B"),
        ("\ufeffhiring", "U+FEFF (ZERO WIDTH NO-BREAK SPACE)"),
        ("\u202egnirih", "U+202E (RIGHT-TO-LEFT OVERRIDE)"),
        ("hi\u2066ring\u2069", "U+2066"),
        ("hiring\u2028notes", "U+2028 (LINE SEPARATOR)"),
        ("hi\x1bring", "U+001B"),
        ("hi\u00adring", "U+00AD (SOFT HYPHEN)"),
    ],
)
async def test_a_name_holding_a_character_that_shows_nothing_is_refused(app: Served, name: str, shown: str) -> None:
    async with connected(app) as client:
        code, message = await refused(client, "configure_thread", action="create", name=name)
    assert code == "invalid_input"
    assert shown in message
    assert "remove it" in message
    assert app.counts()["threads"] == 0


@pytest.mark.parametrize("twin", [FULLWIDTH, "HIRING", "\uff28iring"])
async def test_a_compatibility_form_of_an_existing_name_is_the_same_thread(app: Served, twin: str) -> None:
    async with connected(app) as client:
        await create(client, "hiring")
        code, _ = await refused(client, "configure_thread", action="create", name=twin)
        briefing = await call(client, "thread_briefing", name=twin)
    assert code == "thread_exists"
    assert briefing["thread"]["name"] == "hiring"
    assert app.counts()["threads"] == 1


async def test_renaming_onto_a_compatibility_twin_of_another_thread_is_refused(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "ﬁnance")  # the "fi" ligature
        await create(client, "ops")
        code, _ = await refused(client, "configure_thread", action="rename", name="ops", newName="FINANCE")
    assert code == "thread_exists"


@pytest.mark.parametrize("name", [".", ".."])
async def test_a_dot_segment_is_refused_as_a_new_name_on_every_surface(app: Served, name: str) -> None:
    # A browser resolves /library/threads/. and /library/threads/.. to other pages.
    async with connected(app) as client:
        await create(client, "ops")
        made = await refused(client, "configure_thread", action="create", name=name)
        renamed = await refused(client, "configure_thread", action="rename", name="ops", newName=name)
    async with api_client(app) as api:
        posted = refusal(await api.post("/threads", json={"name": name}), 400)
        patched = refusal(await api.patch("/threads/ops", json={"newName": name}), 400)
    for (code, message), field in ((made, "name"), (renamed, "newName"), (posted, "name"), (patched, "newName")):
        assert code == "invalid_input"
        assert message.startswith(f"'{field}' is {name!r}, which a browser reads as a step in the page's address")
    assert app.query("SELECT name FROM threads") == [("ops",)]


async def test_a_thread_stored_with_a_dot_segment_name_can_still_be_renamed(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "ops")
        app.execute("INSERT INTO threads(name, name_key, created_at, updated_at) VALUES ('..', '..', 1, 1)")
        renamed = await call(client, "configure_thread", action="rename", name="..", newName="...")
    assert renamed["thread"]["name"] == "..."  # three dots are a name, not a dot segment
    assert sorted(app.query("SELECT name FROM threads")) == [("...",), ("ops",)]


def test_the_migration_refolds_stored_names_and_keeps_every_thread_reachable(tmp_path: Path) -> None:
    conn = apsw.Connection(str(tmp_path / "old.db"))
    # The schema as it stood before this migration (matched by name, whatever number it is given).
    suffix = "_thread_names_fold_compatibility_forms"
    upto = next(i for i, m in enumerate(migrations.MIGRATIONS) if m.name.endswith(suffix))
    migrations.migrate(conn, migrations.MIGRATIONS[:upto])
    stored = ["hiring", FULLWIDTH, "hi\u200bring", "\u200b", "Ops"]
    for rowid, name in enumerate(stored, start=1):
        # The key the earlier rule gave: canonical caseless, no compatibility folding.
        conn.execute(
            "INSERT INTO threads(id, name, name_key, created_at, updated_at) VALUES (?, ?, ?, 1, 1)",
            (rowid, name, name.casefold()),
        )
    migrations.migrate(conn)
    after = list(conn.execute("SELECT id, name, name_key FROM threads ORDER BY id"))
    conn.close()
    assert [(rowid, name) for rowid, name, _ in after] == [
        (1, "hiring"),
        (2, f"{FULLWIDTH} (2)"),
        (3, "hiring (3)"),
        (4, "thread 4"),
        (5, "Ops"),
    ]
    assert all(key == name_key(name) for _, name, key in after)
    assert len({key for _, _, key in after}) == len(after)
