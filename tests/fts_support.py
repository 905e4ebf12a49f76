"""FTS5 expressions only tests build: a strict AND of every word, and a column filter.

The service searches with OR queries (`library/search.py`); these help tests check what the
keyword index holds in which column and that quoting makes any text safe.
"""

from __future__ import annotations

from thoughtline.library.search import quote_term, tokens


def fts_escape(text: str) -> str | None:
    """Match every word of `text` (implicit AND), each quoted; None when there is no word at all."""
    words = tokens(text)
    if not words:
        return None
    return " ".join(quote_term(w) for w in words)


def in_column(column: str, match: str) -> str:
    """Restrict an FTS5 MATCH expression to one column of the index (a column filter)."""
    return f"{column} : ({match})"
