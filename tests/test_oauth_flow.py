"""The whole OAuth door end to end over real HTTP, driven by the official `mcp` client.

Thoughtline and a fake GitHub run under uvicorn on 127.0.0.1; the MCP client discovers the
authorization server from the 401, registers (DCR) or presents a URL client id (CIMD), the browser
stand-in approves the consent page and passes through GitHub, and the client exchanges the code,
calls a tool, and later refreshes without signing in again.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.oauth_support import CLIENT_REDIRECT, TOKEN, connected, make_test_ca, running_stack, serve
from tests.support import mcp_client, structured
from thoughtline.oauth import CimdPolicy
from thoughtline.oauth.provider import ACCESS_TTL_SECONDS

pytestmark = pytest.mark.anyio


def first_thought(text: str) -> dict[str, Any]:
    return {"thought": text, "thoughtNumber": 1, "totalThoughts": 2, "nextThoughtNeeded": True}


async def test_a_dcr_client_signs_in_calls_a_tool_and_refreshes_without_signing_in_again(tmp_path: Path) -> None:
    async with running_stack(tmp_path) as stack:
        client = stack.sign_in_client()
        oauth = client.provider()
        async with connected(oauth, client.server_url) as mcp:
            result = await mcp.call_tool("sequentialthinking", first_thought("owner via GitHub"))
        assert not result.is_error, result
        sequence_id = structured(result)["sequenceId"]
        assert client.storage.client_info is not None
        assert not client.storage.client_info.client_id.startswith("http")  # registered dynamically
        first = client.storage.tokens
        assert first is not None
        assert first.refresh_token
        assert len(client.redirects) == 1

        # Time passes on the server past the access token's life, and the client notices too.
        stack.clock.advance(ACCESS_TTL_SECONDS + 1)
        oauth.context.token_expiry_time = time.time() - 1
        async with connected(oauth, client.server_url) as mcp:
            again = await mcp.call_tool(
                "sequentialthinking",
                {**first_thought("after refresh"), "thoughtNumber": 2, "sequenceId": sequence_id},
            )
        assert not again.is_error, again
        second = client.storage.tokens
        assert second is not None
        assert second.refresh_token != first.refresh_token
        assert second.access_token != first.access_token
        assert len(client.redirects) == 1, "the client refreshed instead of signing in again"

        # The owner's GitHub sign-in and the owner's static token reach the same store.
        async with mcp_client(stack.thoughtline.url, TOKEN) as owner:
            history = await owner.call_tool("get_thought_history", {"sequenceId": sequence_id})
        assert not history.is_error, history
        assert structured(history)["sequence"]["thoughtHistoryLength"] == 2


async def test_a_cimd_client_signs_in_with_its_url_as_client_id(tmp_path: Path) -> None:
    ca = make_test_ca(tmp_path)

    async def document(request: Request) -> JSONResponse:
        return JSONResponse(
            {
                "client_id": str(request.url),
                "client_name": "CIMD test client",
                "redirect_uris": [CLIENT_REDIRECT],
                "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
            }
        )

    metadata_app = Starlette(routes=[Route("/oauth/client.json", document)])
    with serve(metadata_app, tls=(ca.cert_file, ca.key_file)) as metadata_server:
        policy = CimdPolicy(allow_loopback=True, verify=ca.context)
        async with running_stack(tmp_path, cimd=policy) as stack:
            url = metadata_server.url + "/oauth/client.json"
            client = stack.sign_in_client("/mcp", client_metadata_url=url)
            async with connected(client.provider(), client.server_url) as mcp:
                listed = await mcp.list_tools()
            assert any(tool.name == "sequentialthinking" for tool in listed.tools)
            assert client.storage.client_info is not None
            assert client.storage.client_info.client_id == url
            consent = client.browser.pages[0].text
            assert "CIMD test client" in consent
            assert CLIENT_REDIRECT in consent
