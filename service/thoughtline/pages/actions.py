"""The changes a person makes from the pages: curation, proposals, lifecycle.

Each action is a form POST (the gate has already checked its Origin and CSRF token) that runs one
library operation and answers 303 back to the page it came from; a refusal shows the operation's
own `<code>: <message>` with a fitting status, and nothing changed.
"""

from __future__ import annotations

from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from thoughtline.pages.session import Session
from thoughtline.pages.source import Source

THREAD_STEPS = {"rename": "rename", "describe": "set_description", "archive": "archive", "unarchive": "unarchive"}
SEQUENCE_STEPS = ("pause", "resume", "complete", "abandon")


def back(path: str) -> RedirectResponse:
    """303 to a page of ours (Post/Redirect/Get: a reload never repeats the change)."""
    return RedirectResponse(path, status_code=303, headers={"Cache-Control": "no-store"})


def thread_path(name: str) -> str:
    """A thread page's path."""
    return "/library/threads/" + quote(name, safe="")


async def _field(request: Request, name: str) -> str:
    value = (await request.form()).get(name)
    return value.strip() if isinstance(value, str) else ""


async def create_thread(request: Request, session: Session, source: Source) -> Response:
    """POST /library/threads: create a thread, then show it."""
    name = await _field(request, "name")
    created = await source.configure("create", name=name, description=await _field(request, "description"))
    return back(thread_path(str(created["thread"]["name"])))


async def thread_step(request: Request, session: Session, source: Source) -> Response:
    """POST /library/threads/{name}/{step}: rename, describe, archive or unarchive."""
    name, step = request.path_params["name"], request.path_params["step"]
    fields: dict[str, str] = {"name": name}
    if step == "rename":
        fields["newName"] = await _field(request, "newName")
    elif step == "describe":
        fields["description"] = await _field(request, "description")
    done = await source.configure(THREAD_STEPS[step], **fields)
    thread = done.get("thread")
    return back(thread_path(str(thread["name"]) if isinstance(thread, dict) else name))


async def membership(request: Request, session: Session, source: Source) -> Response:
    """POST /library/sequences/{id}/pin|unpin: add the sequence to a thread, or take it out."""
    sequence_id, step = request.path_params["sequence_id"], request.path_params["step"]
    thread = await _field(request, "thread")
    await source.configure(step, name=thread, sequenceId=sequence_id)
    if await _field(request, "back") == "thread":
        return back(thread_path(thread))
    return back("/library/sequences/" + sequence_id)


async def lifecycle(request: Request, session: Session, source: Source) -> Response:
    """POST /library/sequences/{id}/pause|resume|complete|abandon."""
    sequence_id = request.path_params["sequence_id"]
    await source.lifecycle(sequence_id, request.path_params["step"])
    return back("/library/sequences/" + sequence_id)


async def review(request: Request, session: Session, source: Source) -> Response:
    """POST /library/proposals/{id}/accept|reject."""
    await source.review(request.path_params["proposal_id"], request.path_params["step"] == "accept")
    return back("/library/proposals")
