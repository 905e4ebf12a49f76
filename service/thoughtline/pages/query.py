"""A page's query string, read by the API's rules: an unknown parameter or a bad value is refused.

The pages are links a person bookmarks and edits; `/library?status=bogus` showing everything
would look like a filter that found nothing to leave out. So a page refuses what
`GET /api/v1/...` refuses, with the same argument rules (`domain/coercion.py`), and the refusal
page (`refusals.py`) says which parameter and links to the page without it. An empty value is
read as absent, as the pages' own links leave empty filters out.
"""

from __future__ import annotations

from starlette.requests import Request

from thoughtline.domain.coercion import coerce_int, optional_one_of, reject_unknown
from thoughtline.errors import invalid

STATUSES = ("active", "paused", "completed", "abandoned")
PAGE_SIZE = 25
MAX_LIST = 50  # the API's and the tool's page limit


def page_query(request: Request, allowed: frozenset[str]) -> dict[str, str]:
    """The query's non-empty parameters, each of them one the page reads."""
    pairs = [(key, value) for key, value in request.query_params.multi_items() if value != ""]
    params = dict(pairs)
    reject_unknown(params, allowed)
    if len(params) < len(pairs):  # `?status=bogus&status=active` would otherwise take the last
        repeated = next(key for key in params if sum(1 for k, _ in pairs if k == key) > 1)
        raise invalid(f"'{repeated}' is given more than once; give it once.")
    return params


def page_limit(params: dict[str, str]) -> int:
    """`limit` (1-50, as in the API), or the pages' default."""
    return coerce_int(params, "limit", high=MAX_LIST) or PAGE_SIZE


def page_status(params: dict[str, str]) -> str:
    """`status`: one of the sequence statuses, or "" for all."""
    return optional_one_of(params, "status", STATUSES) or ""
