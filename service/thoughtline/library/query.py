"""One search query as a value: the question, its alternatives, their terms and their vectors.

Built once at the library's door (`build_query`: one embedding call for every phrasing) and passed
down unchanged, so the keyword side, the vector side, the ranker and the abstention model all read
the same evidence and nothing re-tokenizes the question on the way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from thoughtline.domain.arguments import coerce_str
from thoughtline.errors import invalid
from thoughtline.library.search import content_terms

if TYPE_CHECKING:
    from thoughtline.library.embed import Embedder

MAX_ALTERNATIVES = 4
MAX_ALTERNATIVE_CHARS = 500


@dataclass(frozen=True)
class Query:
    """A question and up to four other phrasings of it, tokenized and (when the model is usable) embedded."""

    question: str
    alternatives: tuple[str, ...]
    # The question's content terms (exact lookups rest on these), then those only the alternatives add.
    terms: tuple[str, ...]
    alternative_terms: tuple[str, ...]
    # One unit vector per phrasing, the question's first; None when the search answers by keyword.
    vectors: NDArray[np.float32] | None

    @property
    def phrasings(self) -> tuple[str, ...]:
        """The question, then its alternatives."""
        return (self.question, *self.alternatives)

    @property
    def has_alternatives(self) -> bool:
        """Whether the caller sent any alternative."""
        return bool(self.alternatives)

    @property
    def all_terms(self) -> tuple[str, ...]:
        """Every distinct content term of every phrasing, the question's first."""
        return (*self.terms, *self.alternative_terms)


def build_query(question: str, alternatives: Sequence[str] = (), embedder: Embedder | None = None) -> Query:
    """The query value; with an `embedder`, every phrasing is embedded in one call."""
    alts = tuple(alternatives)
    terms = tuple(content_terms(question))
    seen = set(terms)
    extra: list[str] = []
    for text in alts:
        for term in content_terms(text):
            if term not in seen:
                seen.add(term)
                extra.append(term)
    vectors = None
    if embedder is not None:
        vectors = embedder.embed([embedder.query_prefix + p for p in (question, *alts)]).astype(np.float32)
    return Query(question, alts, terms, tuple(extra), vectors)


def check_alternatives(value: object) -> tuple[str, ...]:
    """Validate the `alternatives` argument: at most four strings of at most 500 printable characters."""
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise invalid("'alternatives' must be a list of strings: other ways to say the question.")
    if len(value) > MAX_ALTERNATIVES:
        raise invalid(f"'alternatives' takes at most {MAX_ALTERNATIVES} strings; got {len(value)}. Keep the best ones.")
    out: list[str] = []
    for i, text in enumerate(value):
        field = f"alternatives[{i}]"
        checked = coerce_str({field: text}, field, max_chars=MAX_ALTERNATIVE_CHARS)
        if checked is None:
            raise invalid(f"'{field}' is null; send a string or leave it out.")
        out.append(checked)
    return tuple(out)
