"""Helpers for the REST API tests: a served app, an httpx client with the bearer token, and refusals."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx

from tests.support import TOKEN
from tests.thread_support import Served

API = "/api/v1"


@contextlib.asynccontextmanager
async def api_client(app: Served, token: str | None = TOKEN) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client on the app's `/api/v1`, with `Authorization: Bearer <token>` unless None."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(base_url=app.server.base_url + API, headers=headers, timeout=60) as client:
        yield client


def body(response: httpx.Response, status: int = 200) -> dict[str, Any]:
    """The JSON object of a response with this status (fails the test with the body otherwise)."""
    assert response.status_code == status, response.text
    data = response.json()
    assert isinstance(data, dict)
    return data


def refusal(response: httpx.Response, status: int) -> tuple[str, str]:
    """(code, message) of an error response with this status, in the API's one error shape."""
    data = body(response, status)
    assert set(data) == {"error", "message"}, data
    assert response.headers["content-type"] == "application/json"
    return str(data["error"]), str(data["message"])
