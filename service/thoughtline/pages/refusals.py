"""A library refusal as a person on the pages reads it: what happened, what to do, and a way back.

The library's messages speak to an MCP client (they name tools, their actions and argument names
such as `newName`); a person here has forms and links. This module is presentation only: it picks
the pages' wording for each refusal code a page or form can get, by which page or form asked,
and the link back to the page the person came from (always a path of ours, never taken from the
request). The rules stay the library's: nothing here decides whether a request is refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from starlette.requests import Request

from thoughtline.errors import DomainError
from thoughtline.pages.actions import sequence_path, thread_path

LIBRARY = "/library"
THREADS = "/library/threads"
PROPOSALS = "/library/proposals"
# The field a library message starts with ('newName' is …), to say it the way the form labels it.
_FIELD = re.compile(r"^'([A-Za-z]+)'")
# Form fields by their labels on the page (`views.py`); the list filter's `thread` is the query's.
_LABELS = {
    "name": "Name",
    "newName": "New name",
    "description": "Description",
    "type": "Type",
    "thread": "Pin to thread",
}


@dataclass(frozen=True)
class Explained:
    """A refusal in the pages' words: a heading, what happened and what to do, and where to go back."""

    title: str
    message: str
    back: str
    back_label: str


@dataclass(frozen=True)
class _Asked:
    """Which page or form the refused request came from, and that page's path."""

    kind: str  # create, thread-step, sequence-step, review, or a page: library, sequence, thread, threads, proposals
    back: str
    back_label: str
    typed: str  # the thread name the form sent (create, rename, pin), for messages that name it
    here: str = ""  # a page's own path without its query: where a bad query parameter is left behind


async def _field(request: Request, name: str) -> str:
    value = (await request.form()).get(name)
    return value.strip() if isinstance(value, str) else ""


async def _asked(request: Request, library_on: bool) -> _Asked:
    params = request.path_params
    if request.method != "POST":
        if "sequence_id" in params:
            return _Asked("sequence", LIBRARY, "Back to your sequences", "", sequence_path(str(params["sequence_id"])))
        if "name" in params:
            return _Asked("thread", THREADS, "See your threads", "", thread_path(str(params["name"])))
        page = request.url.path.rstrip("/")
        labels = {THREADS: ("threads", "Back to threads"), PROPOSALS: ("proposals", "Back to proposals")}
        kind, label = labels.get(page, ("library", "Back to your sequences"))
        back = page if kind != "library" else LIBRARY
        return _Asked(kind, back, label, "", back)
    if request.url.path.startswith(PROPOSALS + "/"):
        return _Asked("review", PROPOSALS, "Back to proposals", "")
    if "sequence_id" in params:
        typed = await _field(request, "thread")
        # Unpin from a thread's page goes back there, as its success does (`actions.membership`).
        if library_on and await _field(request, "back") == "thread" and typed:
            return _Asked("sequence-step", thread_path(typed), "Back to the thread", typed)
        return _Asked("sequence-step", sequence_path(str(params["sequence_id"])), "Back to the sequence", typed)
    if "name" in params:
        name = str(params["name"])
        return _Asked("thread-step", thread_path(name), "Back to the thread", await _field(request, "newName"))
    return _Asked("create", THREADS, "Back to threads", await _field(request, "name"))


def _invalid(message: str, asked: _Asked) -> tuple[str, str]:
    """An `invalid_input` in the pages' words: the form's label for the field, or what a link held."""
    found = _FIELD.match(message)
    field = found.group(1) if found else ""
    if asked.kind == "thread" and field == "name":  # the address's thread name, not a query parameter
        return "No such thread", "No thread can have the name this address holds. Threads lists yours."
    if asked.here and field not in ("cursor", "sequenceId", "thread"):
        # A page's query parameter (a bookmark or an edited link): said as the API says it, by the
        # name the address uses (the search box sends `q`, which the library calls 'query').
        message = message.replace("unknown argument", "unknown parameter")
        if field == "query":
            message = "'q'" + message[len("'query'") :]
        return "This address asks for something the page cannot show", (
            f"In the address: {message} Correct it, or open the page without it (the API refuses it too)."
        )
    if field == "cursor":
        return "This link is out of date", (
            "The link's page position (its cursor) cannot be used any more, or was altered. "
            "Start again from the first page."
        )
    if field == "sequenceId":
        return "Not a sequence", (
            "The address does not hold a sequence id (those look like seq_ followed by 32 hex characters). "
            "Open the sequence from your list of sequences."
        )
    if field == "proposalId":
        return "Not a proposal", "The address does not hold a proposal id. Open Proposals to see the pending ones."
    label = "Thread filter" if field == "thread" and asked.kind == "library" else _LABELS.get(field)
    if found and label:
        message = f"“{label}”{message[len(found.group(0)) :]}"
    return "Please check what you typed", message[:1].upper() + message[1:] + " Nothing changed."


def _thread_missing(asked: _Asked) -> tuple[str, str, str, str]:
    if asked.kind == "sequence-step":
        return (
            "No such thread",
            f"There is no thread named “{asked.typed}”. Type a thread's name as Threads lists it (any letter case), "
            "or create the thread there first. Nothing changed.",
            asked.back if asked.typed and not asked.back.startswith(THREADS) else THREADS,
            asked.back_label if not asked.back.startswith(THREADS) else "See your threads",
        )
    if asked.kind == "library":
        text = "No thread has that name, so there is nothing to filter by."
        return "No such thread", text, THREADS, "See your threads"
    if asked.kind == "thread":
        text = "There is no thread with this name. It may have been renamed or deleted; Threads lists yours."
        return "No such thread", text, THREADS, "See your threads"
    text = "This thread was renamed or deleted (perhaps in another tab), so nothing changed. Find it under Threads."
    return "Thread not found", text, THREADS, "See your threads"


def explain(refused: DomainError, asked: _Asked, library_on: bool = True) -> Explained:
    """The pages' wording for a refusal the library gave the page or form `asked` describes.

    With the library off there is no list of sequences to send a person back to (`/library` says
    so), so a sequence refusal names the way that is left: the sequence's own link.
    """
    said = _explain_on(refused, asked)
    if library_on or said.back != LIBRARY:
        return said
    text = said.message.replace(
        "Open the sequence from your list of sequences.",
        "Open the sequence from its own link: this server keeps no list (THOUGHTLINE_LIBRARY=off).",
    )
    return Explained(said.title, text, LIBRARY, "Back to the library")


def _explain_on(refused: DomainError, asked: _Asked) -> Explained:
    """`explain` with the library on."""
    code, back, label = refused.code, asked.back, asked.back_label
    if code == "invalid_input":
        title, text = _invalid(refused.message, asked)
        if title == "Not a sequence":
            back, label = LIBRARY, "Back to your sequences"
        elif title == "No such thread":
            back, label = THREADS, "See your threads"
        elif title.startswith("This address"):
            back, label = asked.here, "Open the page without it"
        return Explained(title, text, back, label)
    if code == "proposal_not_found":
        text = (
            "This proposal was already accepted or rejected (perhaps in another tab), or its sequence was deleted. "
            "Nothing changed."
        )
        return Explained("Already decided", text, PROPOSALS, "Back to proposals")
    if code == "thread_archived":
        text = (
            "This proposal's thread is archived, so its proposals are on hold and nothing changed. "
            "Open the thread from Threads and press Unarchive to review them."
        )
        return Explained("The thread is archived", text, PROPOSALS, "Back to proposals")
    if code == "thread_not_found":
        return Explained(*_thread_missing(asked))
    if code == "sequence_not_found":
        if asked.kind == "sequence":
            text = "There is no sequence with this id in your library; it may have been deleted."
        else:
            text = "This sequence was deleted (perhaps elsewhere), so nothing changed."
        return Explained("Sequence not found", text, LIBRARY, "Back to your sequences")
    if code == "thread_exists":
        text = (
            f"A thread named “{asked.typed}” already exists (names compare ignoring letter case). "
            "Choose another name, or open the existing thread from Threads. Nothing changed."
        )
        return Explained("That name is taken", text, back, label)
    # No page or form gets another code (branches and revisions are the agent's); said plainly if one does.
    return Explained("That did not work", refused.message[:1].upper() + refused.message[1:], back, label)


async def explained(refused: DomainError, request: Request, library_on: bool) -> Explained:
    """`explain` for the request that was refused."""
    return explain(refused, await _asked(request, library_on), library_on)
