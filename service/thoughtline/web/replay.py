"""Handing an ASGI app a request body that a gate in front of it has already read."""

from __future__ import annotations

from starlette.types import Message, Receive


def replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that yields the already-read body first, then defers to the real one."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed
