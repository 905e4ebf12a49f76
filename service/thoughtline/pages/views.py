"""The pages a person reads: sequences and search, one sequence's process, threads, proposals.

Each view asks `Source` for the library's answer and turns it into escaped markup; the sequence
page hands its history to the shared process renderer (ui/render.js) as a JSON data block.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response

from thoughtline.domain.thread_types import THREAD_TYPES
from thoughtline.domain.wording import counted
from thoughtline.pages.layout import (
    chip,
    csrf_field,
    data_block,
    document,
    e,
    href,
    post_button,
    sequence_href,
    thread_badges,
    thread_href,
    when,
)
from thoughtline.pages.query import PAGE_SIZE, STATUSES, page_limit, page_query, page_status
from thoughtline.pages.session import Session
from thoughtline.pages.source import Source

LIFECYCLE_ACTIONS = {"active": ("pause", "complete", "abandon"), "paused": ("resume", "complete", "abandon")}
_LIST_QUERY = frozenset({"q", "status", "thread", "limit", "cursor"})
_CURSOR_ONLY = frozenset({"cursor"})


def _search_form(query: str) -> str:
    return (
        '<form role="search" method="get" action="/library" class="search">'
        '<label for="q" class="visually-hidden">Search your reasoning</label>'
        f'<input type="search" id="q" name="q" value="{e(query)}" placeholder="Search your reasoning" maxlength="500">'
        '<button type="submit" class="btn">Search</button></form>'
    )


def _kind_chip(item: dict[str, Any]) -> str:
    """The sequence's free label, when it has one."""
    kind = item.get("kind")
    return chip(f"kind: {kind}", "kind") if kind else ""


def _sequence_row(item: dict[str, Any], extra: str = "") -> str:
    count = item.get("thoughtHistoryLength", item.get("thoughtCount"))
    status = str(item.get("status", ""))
    return (
        f'<li class="row"><a class="title" href="{sequence_href(str(item["sequenceId"]))}">'
        f"{e(item.get('title') or item['sequenceId'])}</a>"
        f'<span class="meta">{chip(status, "status " + status)}{_kind_chip(item)}'
        f"{thread_badges(item.get('threads') or [])}"
        f'<span class="count">{e(count)} thought{"" if count == 1 else "s"}</span>'
        f"{when(item.get('updatedAt'))}</span>{extra}</li>"
    )


async def library_page(request: Request, session: Session, source: Source) -> Response:
    """/library: recent sequences (status and thread filters) or, with `q`, search results."""
    params = page_query(request, _LIST_QUERY)
    query = params.get("q", "").strip()
    status = page_status(params)
    thread = params.get("thread", "").strip()
    limit = page_limit(params)
    if query:
        found = await source.search(query, limit=limit)
        results = found.get("results", [])
        rows = "".join(
            _sequence_row(r, f'<p class="snippet">{e(r.get("snippet", ""))}</p>' if r.get("snippet") else "")
            for r in results
        )
        heading = f"Results for “{e(query)}”"
        empty = "Nothing stored matches that search." if not found.get("abstained") else found.get("abstained")
        body = rows or f'<li class="empty">{e(empty if isinstance(empty, str) else "Nothing matched.")}</li>'
        more = ""
    else:
        cursor = params.get("cursor")
        found = await source.sequences(status=status or None, thread=thread or None, limit=limit, cursor=cursor)
        listed = found["sequences"]
        heading = "Recent sequences" + (f" in {e(thread)}" if thread else "")
        body = "".join(_sequence_row(item) for item in listed) or '<li class="empty">No sequences yet.</li>'
        nxt = found["nextCursor"]
        older = href("/library", status=status, thread=thread, limit=params.get("limit"), cursor=nxt)
        more = f'<p><a href="{older}">Older sequences</a></p>'
        more = more if nxt else ""
    filters = "".join(
        f'<a href="{href("/library", status=s, thread=thread)}"{" aria-current=true" if s == status else ""}>'
        f"{e(s or 'all')}</a>"
        for s in ("", *STATUSES)
    )
    main = (
        f"<h1>Library</h1>{_search_form(query)}"
        f'<nav class="filters" aria-label="Status">{filters}</nav>'
        f'<h2>{heading}</h2><ol class="rows" id="sequences">{body}</ol>{more}'
    )
    return document("Library", main, session=session, current="/library", page="list")


async def sequence_page(request: Request, session: Session, source: Source) -> Response:
    """/library/sequences/{id}: the whole process (shared renderer), its threads, pin/unpin, lifecycle."""
    sequence_id = request.path_params["sequence_id"]
    found = await source.history(sequence_id, page_query(request, _CURSOR_ONLY).get("cursor"))
    sequence = found["sequence"]
    title = str(sequence.get("title") or sequence_id)
    member_of = [str(n) for n in sequence.get("threads", [])]
    status = str(sequence.get("status", ""))
    action = f"/library/sequences/{sequence_id}"
    parts = [f'<h1 class="seq-title">{e(title)}</h1><p class="meta">{chip(status, "status " + status)}']
    parts.append(_kind_chip(sequence))
    parts.append(f'<code class="id">{e(sequence_id)}</code> · {when(sequence.get("updatedAt"))}</p>')
    controls = ""
    if source.library_on():
        choices = await source.pin_choices()
        unpin = "".join(
            f"<li>{thread_badges([n])}"
            f"{post_button(session, action + '/unpin', 'Unpin', fields={'thread': n}, name=f'Unpin from {n}')}</li>"
            for n in member_of
        )
        left_out = int(sequence.get("threadCount", 0)) - len(member_of)
        if left_out > 0:  # history names the first threads only; each thread's page can unpin it too
            unpin += f"<li>and {e(left_out)} more threads</li>"
        pin = (
            _pin_form(session, action, choices["names"], int(choices["threadCount"]))
            if choices["threadCount"]
            else '<p>No threads yet: <a href="/library/threads">create one</a> to pin this sequence to it.</p>'
        )
        controls = (
            '<section aria-labelledby="threads-h" class="panel"><h2 id="threads-h">Threads</h2>'
            f'<ul class="members">{unpin or "<li>Not in any thread.</li>"}</ul>{pin}</section>'
        )
    # With the library off the pages only read (README); a sequence's status is the agent's to change.
    steps = LIFECYCLE_ACTIONS.get(status, ()) if source.library_on() else ()
    lifecycle = "".join(post_button(session, f"{action}/{a}", a.capitalize()) for a in steps)
    if lifecycle:
        controls += f'<section aria-label="Lifecycle" class="panel"><h2>Status</h2>{lifecycle}</section>'
    parts.append(controls)
    parts.append('<section id="process" aria-label="The whole reasoning process"><p>Loading the process…</p></section>')
    nxt = found.get("nextCursor")
    if nxt:
        more = href(f"/library/sequences/{sequence_id}", cursor=nxt)
        parts.append(f'<p><a href="{more}">Later thoughts</a></p>')
    parts.append(data_block("history", found))
    return document(title, "".join(parts), session=session, page="sequence", library=source.library_on())


def _pin_form(session: Session, action: str, names: list[str], count: int) -> str:
    """A text field for any thread's name, suggesting the listed ones (a bounded few of `count`)."""
    options = "".join(f'<option value="{e(n)}"></option>' for n in names)
    hint, described = "", ""
    if count > len(names):  # said only when some are left out, so the usual form stays one line
        hint = f"Type any thread's name; the first {len(names)} of {count} threads by name are suggested."
        hint, described = f'<p class="meta" id="pin-hint">{e(hint)}</p>', ' aria-describedby="pin-hint"'
    return (
        f'<form method="post" action="{e(action)}/pin" class="inline">{csrf_field(session)}'
        '<label for="pin-thread">Pin to thread</label>'
        '<input id="pin-thread" name="thread" list="pin-threads" required maxlength="64" autocomplete="off"'
        f"{described}>"
        f'<datalist id="pin-threads">{options}</datalist>'
        f'<button type="submit" class="btn">Pin</button>{hint}</form>'
    )


async def threads_page(request: Request, session: Session, source: Source) -> Response:
    """/library/threads: threads by name, a page at a time, with lifecycle and members; create one."""
    found = await source.thread_page(cursor=page_query(request, _CURSOR_ONLY).get("cursor"))
    threads = found["threads"]
    rows = "".join(
        f'<li class="row"><a class="title" href="{thread_href(str(t["name"]))}">{e(t["name"])}</a>'
        f'<span class="meta">{chip(str(t.get("lifecycle", "")), "lifecycle")}'
        f"{chip('archived', 'archived') if t.get('status') == 'archived' else ''}"
        f'<span class="count">{e(t.get("memberCount", 0))} members</span>'
        f"{when(t.get('lastActivityAt'))}</span>"
        f'<p class="snippet">{e(t.get("description", ""))}</p></li>'
        for t in threads
    )
    create = (
        f'<form method="post" action="/library/threads" class="stack">{csrf_field(session)}'
        '<h2>New thread</h2><label for="new-name">Name</label>'
        '<input id="new-name" name="name" required maxlength="64">'
        '<label for="new-description">Description</label>'
        '<textarea id="new-description" name="description" rows="2" maxlength="2000"></textarea>'
        '<button type="submit" class="btn">Create thread</button></form>'
    )
    body = rows or '<li class="empty">No threads yet.</li>'
    nxt = found["nextCursor"]
    more = f'<p><a href="{href("/library/threads", cursor=nxt)}">Next page</a></p>' if nxt else ""
    count = f'<p class="count">{e(found["threadCount"])} threads</p>' if nxt else ""
    main = f'<h1>Threads</h1>{count}<ol class="rows" id="threads">{body}</ol>{more}{create}'
    return document("Threads", main, session=session, current="/library/threads", page="threads")


def _events(title: str, events: list[Any], element_id: str, count: int | None = None) -> str:
    # The briefing lists the newest open items only; the heading says how many are open in all.
    if count is not None and count > len(events):
        title += f" (newest {len(events)} of {count})"
    head = f'<section class="panel" aria-labelledby="{element_id}"><h2 id="{element_id}">{e(title)}</h2>'
    if not events:
        return head + "<p>None.</p></section>"
    items = "".join(
        f"<li>{chip(str(ev.get('kind', '')).replace('_', ' '), 'event')} {when(ev.get('at'))} "
        f'<a href="{sequence_href(str(ev["sequenceId"]))}">thought {e(ev.get("thoughtNumber"))}'
        f"{' on ' + e(ev['branchId']) if ev.get('branchId') else ''}</a>"
        f'<p class="snippet">{e(ev.get("text", ""))}</p></li>'
        for ev in events
    )
    return f'{head}<ol class="events">{items}</ol></section>'


async def thread_page(request: Request, session: Session, source: Source) -> Response:
    """/library/threads/{name}: the briefing (state, type, blockers, questions, decisions, events, members)."""
    name = request.path_params["name"]
    page_query(request, frozenset())
    brief = await source.briefing(name)
    thread = brief["thread"]
    real = str(thread["name"])
    base = "/library/threads/" + quote(real, safe="")
    archived = thread.get("status") == "archived"
    kind = thread.get("type")
    source_of_type = "set by you" if thread.get("typeSource") == "user" else "derived from its events"
    type_chip = chip(f"type: {kind} ({source_of_type})", "type") if kind else ""
    head = (
        f'<h1>{e(real)}</h1><p class="meta" id="thread-state">{chip(str(thread.get("lifecycle", "")), "lifecycle")}'
        f"{chip('state: ' + str(thread.get('state', '')), 'state')}"
        f"{type_chip}"
        f"{chip('archived', 'archived') if archived else ''}"
        f'<span class="count">{e(thread.get("memberCount", 0))} members</span></p>'
        f'<p class="headline">{e(thread.get("description", ""))}</p>'
    )
    conclusion = brief.get("latestConclusion")
    listed = brief.get("members", [])
    members = "".join(_member_row(session, real, m) for m in listed)
    if int(thread.get("memberCount", 0)) > len(listed):  # the briefing lists the most recently updated only
        members += f'<li><a href="{href("/library", thread=real)}">All {e(thread["memberCount"])} members</a></li>'
    curate = (
        '<section class="panel" aria-labelledby="curate-h"><h2 id="curate-h">Curate</h2>'
        f'<form method="post" action="{e(base)}/rename" class="inline">{csrf_field(session)}'
        '<label for="rename">New name</label>'
        f'<input id="rename" name="newName" required maxlength="64" value="{e(real)}">'
        '<button type="submit" class="btn">Rename</button></form>'
        f'<form method="post" action="{e(base)}/describe" class="stack">{csrf_field(session)}'
        '<label for="describe">Description</label>'
        '<textarea id="describe" name="description" rows="2" maxlength="2000">'
        f"{e(thread.get('description', ''))}</textarea>"
        '<button type="submit" class="btn">Save description</button></form>'
        f"{_type_form(session, base, str(kind or '') if thread.get('typeSource') == 'user' else 'auto')}"
        f"{_archive_button(session, base, archived)}"
        "</section>"
    )
    story = "".join(
        [
            _events("Open blockers", brief.get("openBlockers", []), "blockers-h", brief.get("openBlockerCount")),
            _events("Open questions", brief.get("openQuestions", []), "questions-h", brief.get("openQuestionCount")),
            _events("Decisions", brief.get("decisions", []), "decisions-h"),
            _events("Latest conclusion", [conclusion] if conclusion else [], "conclusion-h"),
            _events("Timeline", brief.get("events", []), "timeline-h"),
        ]
    )
    side = (
        '<section class="panel" aria-labelledby="members-h"><h2 id="members-h">Members</h2>'
        f'<ul class="members" id="members">{members or "<li>No members yet.</li>"}</ul></section>{curate}'
    )
    main = f'{head}<div class="cols"><div>{story}</div><aside aria-label="Members and curation">{side}</aside></div>'
    return document(real, main, session=session, current="/library/threads", page="thread")


def _type_form(session: Session, base: str, current: str) -> str:
    """The type select: a type to set, or auto (derived from the events, as until one is set)."""
    labels = {t: t for t in THREAD_TYPES} | {"auto": "auto (from its events)"}
    options = "".join(
        f'<option value="{t}"{" selected" if t == current else ""}>{label}</option>' for t, label in labels.items()
    )
    return (
        f'<form method="post" action="{e(base)}/type" class="inline">{csrf_field(session)}'
        f'<label for="thread-type">Type</label><select id="thread-type" name="type">{options}</select>'
        '<button type="submit" class="btn">Set type</button></form>'
    )


def _archive_button(session: Session, base: str, archived: bool) -> str:
    if archived:
        return post_button(session, base + "/unarchive", "Unarchive")
    return post_button(session, base + "/archive", "Archive")


def _member_row(session: Session, thread: str, member: dict[str, Any]) -> str:
    sequence_id = str(member["sequenceId"])
    unpin = post_button(
        session,
        f"/library/sequences/{sequence_id}/unpin",
        "Unpin",
        fields={"thread": thread, "back": "thread"},
        name=f"Unpin {member.get('title') or sequence_id}",
    )
    status = str(member.get("status", ""))
    return (
        f'<li><a class="title" href="{sequence_href(sequence_id)}">{e(member.get("title") or sequence_id)}</a>'
        f'<span class="meta">{chip(status, "status " + status)}'
        f'<span class="count">added by {e(member.get("addedBy", ""))}</span>{unpin}</span></li>'
    )


def _proposal_row(session: Session, proposal: dict[str, Any]) -> str:
    base = f"/library/proposals/{proposal['proposalId']}"
    thread, sequence_id = str(proposal["thread"]), str(proposal["sequenceId"])
    what = f"{proposal.get('title') or sequence_id} into {thread}"
    return (
        f'<li class="row proposal"><span><a href="{thread_href(thread)}">{e(thread)}</a> ← '
        f'<a class="title" href="{sequence_href(sequence_id)}">{e(proposal.get("title") or sequence_id)}</a></span>'
        f'<p class="snippet">{e(proposal.get("evidence", ""))}</p><span class="actions">'
        f"{post_button(session, base + '/accept', 'Accept', kind='primary', name=f'Accept {what}')}"
        f"{post_button(session, base + '/reject', 'Reject', kind='quiet', name=f'Reject {what}')}"
        "</span></li>"
    )


def _matching_note(pending: dict[str, int] | None, shown: bool) -> str:
    """What matching the list left for later (its 2 s budget ran out), so an empty page is not read as final."""
    if not pending:
        return ""
    parts = [
        *([counted(pending["threads"], "thread")] if pending.get("threads") else []),
        *([counted(pending["sequences"], "completed sequence")] if pending.get("sequences") else []),
    ]
    after = "More proposals may come" if shown else "Proposals may come"
    return (
        f'<p class="notice" id="matching" role="status">Matching is still running for {" and ".join(parts)}. '
        f'{after}: <a href="/library/proposals">reload this page</a> in a moment.</p>'
    )


async def proposals_page(request: Request, session: Session, source: Source) -> Response:
    """/library/proposals: suggested memberships, each with Accept and Reject, and matching still to do."""
    cursor = page_query(request, _CURSOR_ONLY).get("cursor")
    found = await source.proposals(cursor=cursor, limit=PAGE_SIZE)
    rows = "".join(_proposal_row(session, p) for p in found.get("proposals", []))
    nxt = found.get("nextCursor")
    more = f'<p><a href="{href("/library/proposals", cursor=nxt)}">Next page</a></p>' if nxt else ""
    note = _matching_note(found.get("matchingPending"), bool(rows))
    empty = "Nothing to review yet." if note else "Nothing to review."
    rows = rows or f'<li class="empty">{empty}</li>'
    total = int(found.get("pendingCount", 0))
    count = f'<p class="meta" id="pending">{e(counted(total, "pending proposal"))}</p>' if total else ""
    main = f'<h1>Proposals</h1>{count}{note}<ol class="rows" id="proposals">{rows}</ol>{more}'
    return document("Proposals", main, session=session, current="/library/proposals", page="proposals")
