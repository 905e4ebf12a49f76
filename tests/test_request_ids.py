"""`requestId` replay is per client, as continuation is: one OAuth client's key never returns another
client's result (nor refuses its write), and the static token is a client of its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import apsw
import pytest

from tests.oauth_support import TOKEN as STACK_TOKEN
from tests.oauth_support import connected, running_stack
from tests.support import mcp_client, structured, text
from thoughtline.storage import migrations

pytestmark = pytest.mark.anyio


def step(body: str, request_id: str) -> dict[str, Any]:
    return {"thought": body, "nextThoughtNeeded": True, "thoughtNumber": 1, "totalThoughts": 2, "requestId": request_id}


async def test_the_same_request_id_from_two_clients_of_one_user_is_two_writes(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack:
        first_app, second_app = stack.sign_in_client(), stack.sign_in_client()
        async with (
            connected(first_app.provider(), first_app.server_url) as a,
            connected(second_app.provider(), second_app.server_url) as b,
            mcp_client(stack.thoughtline.url, STACK_TOKEN) as owner_token,
        ):
            from_a = structured(await a.call_tool("sequentialthinking", step("A's plan", "req-1")))
            # Same arguments, same key, other client: its own write, not A's stored answer.
            from_b = structured(await b.call_tool("sequentialthinking", step("A's plan", "req-1")))
            # Different arguments under the same key from a third client: no idempotency_conflict.
            from_token = structured(await owner_token.call_tool("sequentialthinking", step("token's plan", "req-1")))
            retried = structured(await a.call_tool("sequentialthinking", step("A's plan", "req-1")))
            conflict = await a.call_tool("sequentialthinking", step("something else", "req-1"))
            a_history = structured(
                await owner_token.call_tool("get_thought_history", {"sequenceId": from_a["sequenceId"]})
            )
    assert len({from_a["sequenceId"], from_b["sequenceId"], from_token["sequenceId"]}) == 3
    assert retried == from_a  # A's own retry is still replayed exactly
    assert a_history["sequence"]["thoughtHistoryLength"] == 1
    assert conflict.is_error
    assert text(conflict).startswith("idempotency_conflict: ")


def test_request_ids_stored_before_the_migration_belong_to_the_client_that_started_their_sequence(
    tmp_path: Path,
) -> None:
    conn = apsw.Connection(str(tmp_path / "old.db"))
    # The schema as it stood before this migration (matched by name, whatever number it is given).
    upto = next(i for i, m in enumerate(migrations.MIGRATIONS) if m.name.endswith("_request_ids_per_client"))
    migrations.migrate(conn, migrations.MIGRATIONS[:upto])
    conn.execute(
        "INSERT INTO sequences(id, public_id, title, total_thoughts, last_thought_number, created_at, updated_at, "
        "origin_client) VALUES (1, 'seq_' || hex(randomblob(16)), 't', 1, 1, 1, 1, 'client-a'), "
        "(2, 'seq_' || hex(randomblob(16)), 't', 1, 1, 1, 1, NULL)"
    )
    conn.execute(
        "INSERT INTO requests(request_id, sequence_id, fingerprint, result, created_at) "
        "VALUES ('r-a', 1, 'f', '{}', 1), ('r-token', 2, 'f', '{}', 1)"
    )
    migrations.migrate(conn)
    owners = list(conn.execute("SELECT client, request_id FROM requests ORDER BY request_id"))
    conn.close()
    assert owners == [("client-a", "r-a"), ("", "r-token")]
