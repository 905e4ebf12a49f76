"""`/api/v1/threads` through a real server: every route, its refusals, and the tool's shapes."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import quote

import pytest

from tests.api_support import api_client, body, refusal
from tests.thread_support import Served, call, connected, create, served, think
from thoughtline.config import Settings

pytestmark = pytest.mark.anyio


@pytest.fixture
def app(settings: Settings) -> Iterator[Served]:
    with served(settings) as running:
        yield running


async def test_create_answers_201_with_the_same_thread_object_the_tool_lists(app: Served) -> None:
    async with api_client(app) as api:
        created = body(await api.post("/threads", json={"name": "Postgres Migration", "description": "Move."}), 201)
    async with connected(app) as client:
        listed = await call(client, "configure_thread", action="list")
    assert listed["threads"] == [created]
    assert (created["name"], created["type"], created["typeSource"], created["status"]) == (
        "Postgres Migration",
        "topic",
        "derived",
        "active",
    )


async def test_list_hides_archived_threads_unless_asked(app: Served) -> None:
    async with api_client(app) as api:
        await api.post("/threads", json={"name": "kept"})
        await api.post("/threads", json={"name": "old"})
        body(await api.patch("/threads/old", json={"status": "archived"}))
        plain = body(await api.get("/threads"))
        everything = body(await api.get("/threads", params={"includeArchived": "true"}))
    assert [t["name"] for t in plain["threads"]] == ["kept"]
    assert [(t["name"], t["status"]) for t in everything["threads"]] == [("kept", "active"), ("old", "archived")]
    assert everything["includeArchived"] is True


async def test_get_reads_a_thread_by_its_name_in_any_case(app: Served) -> None:
    async with api_client(app) as api:
        await api.post("/threads", json={"name": "Straße", "description": "Streets."})
        got = body(await api.get("/threads/STRASSE"))
        code, message = refusal(await api.get("/threads/nothing"), 404)
    assert (got["name"], got["description"]) == ("Straße", "Streets.")
    assert code == "thread_not_found"
    assert "'nothing'" in message


async def test_a_name_with_a_slash_or_spaces_is_addressed_by_its_encoded_path(app: Served) -> None:
    async with api_client(app) as api:
        await api.post("/threads", json={"name": "clients/acme co"})
        got = body(await api.get("/threads/" + quote("clients/acme co", safe="")))
        brief = body(await api.get("/threads/" + quote("clients/acme co") + "/briefing"))
    assert got["name"] == brief["thread"]["name"] == "clients/acme co"


async def test_patch_changes_every_field_in_one_request(app: Served) -> None:
    async with api_client(app) as api:
        await api.post("/threads", json={"name": "pg", "description": "Old."})
        changed = body(
            await api.patch(
                "/threads/pg", json={"newName": "Postgres", "description": "New.", "status": "archived", "type": "work"}
            )
        )
        refusal(await api.get("/threads/pg"), 404)
        again = body(await api.patch("/threads/postgres", json={"status": "active"}))
    assert (changed["name"], changed["description"], changed["status"], changed["type"], changed["typeSource"]) == (
        "Postgres",
        "New.",
        "archived",
        "work",
        "user",
    )
    assert again["status"] == "active"


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({}, "at least one"),
        ({"colour": "red"}, "'colour'"),
        ({"status": "deleted"}, "'status'"),
        ({"type": "project"}, "'type'"),
        ({"newName": ""}, "'newName'"),
        ({"description": 5}, "'description'"),
        ({"type": None}, "null"),
    ],
)
async def test_a_bad_patch_is_invalid_input_naming_the_field_and_changes_nothing(
    app: Served, patch: dict[str, object], field: str
) -> None:
    async with api_client(app) as api:
        before = body(await api.post("/threads", json={"name": "pg", "description": "Keep."}), 201)
        code, message = refusal(await api.patch("/threads/pg", json=patch), 400)
        after = body(await api.get("/threads/pg"))
    assert code == "invalid_input"
    assert field in message
    assert after == before


async def test_a_patch_that_fails_halfway_changes_nothing(app: Served) -> None:
    async with api_client(app) as api:
        await api.post("/threads", json={"name": "pg", "description": "Keep."})
        await api.post("/threads", json={"name": "taken"})
        code, _ = refusal(await api.patch("/threads/pg", json={"description": "Lost.", "newName": "TAKEN"}), 409)
        after = body(await api.get("/threads/pg"))
    assert code == "thread_exists"
    assert after["description"] == "Keep."


async def test_create_refusals_are_the_tools_codes_with_fitting_statuses(app: Served) -> None:
    async with api_client(app) as api:
        await api.post("/threads", json={"name": "pg"})
        taken = refusal(await api.post("/threads", json={"name": "PG"}), 409)
        nameless = refusal(await api.post("/threads", json={"description": "x"}), 400)
        long = refusal(await api.post("/threads", json={"name": "x" * 65}), 400)
        unknown = refusal(await api.post("/threads", json={"name": "a", "owner": "me"}), 400)
    assert [taken[0], nameless[0], long[0], unknown[0]] == ["thread_exists", "invalid_input"] + ["invalid_input"] * 2
    assert "'name'" in nameless[1]
    assert app.counts()["threads"] == 1


async def test_delete_needs_confirm_true_and_never_deletes_a_sequence(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "pg")
        seq = await think(client, threads=["pg"])
    async with api_client(app) as api:
        unconfirmed = refusal(await api.delete("/threads/pg"), 400)
        wrong = refusal(await api.delete("/threads/pg", params={"confirm": "yes"}), 400)
        deleted = body(await api.delete("/threads/pg", params={"confirm": "true"}))
        again = refusal(await api.delete("/threads/pg", params={"confirm": "true"}), 404)
        history = body(await api.get(f"/sequences/{seq}"))
    assert unconfirmed[0] == wrong[0] == "invalid_input"
    assert "'confirm'" in unconfirmed[1]
    assert deleted == {"deleted": True, "name": "pg", "removedMemberships": 1, "removedProposals": 0}
    assert again[0] == "thread_not_found"
    assert history["sequence"]["threads"] == []


async def test_pin_and_unpin_change_the_members_the_briefing_lists(app: Served) -> None:
    async with connected(app) as client:
        seq = await think(client, "Replication needs a primary key on every table", done=True)
    async with api_client(app) as api:
        await api.post("/threads", json={"name": "pg"})
        pinned = body(await api.put(f"/threads/pg/members/{seq}"))
        again = body(await api.put(f"/threads/pg/members/{seq}"))
        brief = body(await api.get("/threads/pg/briefing"))
        unpinned = body(await api.delete(f"/threads/pg/members/{seq}"))
        after = body(await api.get("/threads/pg/briefing"))
    assert (pinned["member"], pinned["changed"], pinned["thread"]["memberCount"]) == (True, True, 1)
    assert again["changed"] is False
    assert [(m["sequenceId"], m["addedBy"]) for m in brief["members"]] == [(seq, "user")]
    assert (unpinned["member"], unpinned["changed"]) == (False, True)
    assert after["members"] == []


async def test_membership_refusals_name_the_sequence_or_the_thread(app: Served) -> None:
    missing = "seq_" + "0" * 32
    async with api_client(app) as api:
        await api.post("/threads", json={"name": "pg"})
        no_sequence = refusal(await api.put(f"/threads/pg/members/{missing}"), 404)
        bad_id = refusal(await api.put("/threads/pg/members/seq_nope"), 400)
        no_thread = refusal(await api.put(f"/threads/other/members/{missing}"), 404)
    assert no_sequence[0] == "sequence_not_found"
    assert missing in no_sequence[1]
    assert bad_id[0] == "invalid_input"
    assert "'seq_nope' in the path is not a sequence id" in bad_id[1]
    assert "sequentialthinking" not in bad_id[1]
    assert "start a new sequence" not in bad_id[1]
    assert no_thread[0] == "thread_not_found"


async def test_the_briefing_is_the_tools_briefing(app: Served) -> None:
    async with connected(app) as client:
        await create(client, "pg", "Move billing to Postgres.")
        seq = await think(client, "Vendor contract blocks the cut-over", threads=["pg"], event="blocker")
        await think(client, "Decided to run both for a month", 2, sequenceId=seq, event="decision")
        app.clock.advance(0.5)
        tool = await call(client, "thread_briefing", name="pg", since="2020-01-01", eventsLimit=1)
    async with api_client(app) as api:
        rest = body(await api.get("/threads/pg/briefing", params={"since": "2020-01-01", "eventsLimit": "1"}))
        bad = refusal(await api.get("/threads/pg/briefing", params={"eventsLimit": "101"}), 400)
        bad_since = refusal(await api.get("/threads/pg/briefing", params={"since": "yesterday"}), 400)
    assert rest == tool
    assert rest["thread"]["state"] == "blocked"
    assert len(rest["events"]) == 1
    assert bad[0] == bad_since[0] == "invalid_input"


async def test_patch_type_auto_clears_a_set_type_back_to_derived(app: Served) -> None:
    async with api_client(app) as api:
        await api.post("/threads", json={"name": "pg"})
        set_once = body(await api.patch("/threads/pg", json={"type": "relationship"}))
        cleared = body(await api.patch("/threads/pg", json={"type": "auto"}))
        code, message = refusal(await api.patch("/threads/pg", json={"type": None}), 400)
    assert (set_once["type"], set_once["typeSource"]) == ("relationship", "user")
    assert (cleared["type"], cleared["typeSource"]) == ("topic", "derived")
    assert code == "invalid_input"
    assert "cannot be null" in message


async def test_a_thread_named_like_a_briefing_path_is_read_changed_and_deleted_by_its_encoded_name(
    app: Served,
) -> None:
    async with api_client(app) as api:
        for name in ("slash", "slash/briefing", "x/members/y"):
            body(await api.post("/threads", json={"name": name}), 201)
        encoded = quote("slash/briefing", safe="")
        assert body(await api.get(f"/threads/{encoded}"))["name"] == "slash/briefing"
        assert "thread" in body(await api.get("/threads/slash/briefing"))  # unencoded: the briefing of "slash"
        changed = body(await api.patch(f"/threads/{encoded}", json={"description": "kept apart"}))
        assert (changed["name"], changed["description"]) == ("slash/briefing", "kept apart")
        assert body(await api.get("/threads/slash"))["description"] == ""
        members = quote("x/members/y", safe="")
        assert body(await api.get(f"/threads/{members}"))["name"] == "x/members/y"
        assert body(await api.get("/threads/x/members/y"))["name"] == "x/members/y"  # GET: no members route
        deleted = body(await api.delete(f"/threads/{encoded}", params={"confirm": "true"}))
        assert deleted["name"] == "slash/briefing"
        names = [t["name"] for t in body(await api.get("/threads"))["threads"]]
    assert names == ["slash", "x/members/y"]


async def test_an_unencoded_slash_name_falls_back_to_the_whole_name_when_only_it_exists(app: Served) -> None:
    async with api_client(app) as api:
        body(await api.post("/threads", json={"name": "only/briefing"}), 201)
        assert body(await api.get("/threads/only/briefing"))["name"] == "only/briefing"
        changed = body(await api.patch("/threads/only/briefing", json={"type": "case"}))
        assert changed["type"] == "case"
        assert body(await api.delete("/threads/only/briefing", params={"confirm": "true"}))["deleted"] is True


async def test_a_method_the_longer_route_lacks_reaches_the_thread_route_not_a_405(app: Served) -> None:
    async with api_client(app) as api:
        body(await api.post("/threads", json={"name": "a/members/b"}), 201)
        code, _ = refusal(await api.post("/threads/a/members/b"), 405)
        assert code == "method_not_allowed"
        assert body(await api.patch("/threads/a/members/b", json={"description": "d"}))["description"] == "d"


async def test_a_query_parameter_on_a_route_without_any_is_refused_as_such(app: Served) -> None:
    async with api_client(app) as api:
        code, message = refusal(await api.post("/threads?x=1", json={"name": "n"}), 400)
        listed = body(await api.get("/threads"))["threads"]
    assert code == "invalid_input"
    assert message == "this route takes no query parameters; leave out 'x'."
    assert listed == []


async def test_a_number_too_long_to_read_is_refused_as_a_number_not_as_bad_json(app: Served) -> None:
    async with api_client(app) as api:
        sent = '{"name": ' + "9" * 5000 + "}"
        code, message = refusal(
            await api.post("/threads", content=sent, headers={"Content-Type": "application/json"}), 400
        )
        listed = body(await api.get("/threads"))["threads"]
    assert code == "invalid_input"
    assert "number of 5000 digits" in message
    assert "not valid JSON" not in message
    assert listed == []
