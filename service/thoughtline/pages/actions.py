"""The changes a person makes from the pages: curation, proposals, lifecycle.

Each action is a form POST (the gate has already checked its Origin and CSRF token) that runs one
library operation and answers 303 back to the page it came from; a refusal shows the operation's
refusal in the pages' words (`refusals.py`) with a fitting status, and nothing changed.
"""

from __future__ import annotations

from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from thoughtline.pages.session import Session
from thoughtline.pages.source import Source

THREAD_STEPS = {
    "rename": "rename",
    "describe": "set_description",
    "archive": "archive",
    "unarchive": "unarchive",
    "type": "set_type",
}
# The form field each step reads its value from.
STEP_FIELDS = {"rename": "newName", "set_description": "description", "set_type": "type"}
SEQUENCE_STEPS = ("pause", "resume", "complete", "abandon")


def back(path: str) -> RedirectResponse:
    """303 to a page of ours (Post/Redirect/Get: a reload never repeats the change)."""
    return RedirectResponse(path, status_code=303, headers={"Cache-Control": "no-store"})


def thread_path(name: str) -> str:
    """A thread page's path."""
    return "/library/threads/" + quote(name, safe="")


def sequence_path(sequence_id: str) -> str:
    """A sequence page's path."""
    return "/library/sequences/" + quote(sequence_id, safe="")


async def _field(request: Request, name: str) -> str:
    value = (await request.form()).get(name)
    return value.strip() if isinstance(value, str) else ""


async def create_thread(request: Request, session: Session, source: Source) -> Response:
    """POST /library/threads: create a thread, then show it."""
    created = await source.create_thread(await _field(request, "name"), await _field(request, "description"))
    return back(thread_path(str(created["name"])))


async def thread_step(request: Request, session: Session, source: Source) -> Response:
    """POST /library/threads/{name}/{step}: rename, describe, archive or unarchive."""
    step = THREAD_STEPS[request.path_params["step"]]
    value = await _field(request, STEP_FIELDS[step]) if step in STEP_FIELDS else ""
    thread = await source.change_thread(request.path_params["name"], step, value)
    return back(thread_path(str(thread["name"])))


async def membership(request: Request, session: Session, source: Source) -> Response:
    """POST /library/sequences/{id}/pin|unpin: add the sequence to a thread, or take it out."""
    sequence_id, step = request.path_params["sequence_id"], request.path_params["step"]
    thread = await _field(request, "thread")
    await source.membership(thread, sequence_id, member=step == "pin")
    return back(thread_path(thread) if await _field(request, "back") == "thread" else sequence_path(sequence_id))


async def lifecycle(request: Request, session: Session, source: Source) -> Response:
    """POST /library/sequences/{id}/pause|resume|complete|abandon."""
    sequence_id = request.path_params["sequence_id"]
    await source.lifecycle(sequence_id, request.path_params["step"])
    return back(sequence_path(sequence_id))


async def review(request: Request, session: Session, source: Source) -> Response:
    """POST /library/proposals/{id}/accept|reject."""
    await source.decide(request.path_params["proposal_id"], request.path_params["step"] == "accept")
    return back("/library/proposals")
