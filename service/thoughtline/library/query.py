"""One search query as a value: the question, its alternatives, their terms and their vectors.

Built once at the library's door (`build_query`: one embedding call for every phrasing, on a
helper thread while the keyword side runs) and passed down unchanged, so the keyword side, the
vector side, the ranker and the abstention model all read the same evidence and nothing
re-tokenizes the question on the way.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from typing import TYPE_CHECKING

from thoughtline.domain.coercion import coerce_search_text
from thoughtline.errors import invalid
from thoughtline.library.search import content_terms

if TYPE_CHECKING:
    # numpy only for the annotations: the MCP tools import this module at start, and a cold start
    # must not pay for numpy (it loads with the model, on the first search).
    import numpy as np
    from numpy.typing import NDArray

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
    # The content words of the alternatives taken together, the question's among them (their
    # keyword side scores these).
    alternative_words: tuple[str, ...]
    # The phrasings' embedding, made on a helper thread while the keyword side runs; None when
    # the search answers by keyword.
    embedding: Embedding | None

    @property
    def vectors(self) -> NDArray[np.float32] | None:
        """One unit vector per phrasing, the question's first (waits for the embedding); None without one."""
        return None if self.embedding is None else self.embedding.vectors()

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


def build_query(
    question: str,
    alternatives: Sequence[str] = (),
    embedder: Embedder | None = None,
    helper: Executor | None = None,
) -> Query:
    """The query value; with an `embedder`, every phrasing is embedded in one call (on `helper`, when
    given, while the caller goes on; else when the vectors are first read)."""
    alts = tuple(alternatives)
    terms = tuple(content_terms(question))
    seen = set(terms)
    extra: list[str] = []
    for text in alts:
        for term in content_terms(text):
            if term not in seen:
                seen.add(term)
                extra.append(term)
    words = tuple(content_terms(" ".join(alts))) if alts else ()
    embedding = None
    if embedder is not None:
        embedding = Embedding(embedder, [embedder.query_prefix + p for p in (question, *alts)], helper)
    return Query(question, alts, terms, tuple(extra), words, embedding)


class Embedding:
    """Every phrasing embedded in one call, started on a helper thread and read once it is needed.

    The pipeline asks the keyword index first, which needs no vector: SQLite and onnxruntime both
    leave the GIL, so on two cores the embedding of a question and three alternatives overlaps
    the keyword side instead of preceding it. When the helper is still busy with another
    search's embedding by the time the vectors are read, the reader embeds them itself.
    """

    def __init__(self, embedder: Embedder, texts: list[str], helper: Executor | None = None) -> None:
        self._embedder, self._texts = embedder, texts
        self._lock = threading.Lock()
        self._done: NDArray[np.float32] | None = None
        self._future: Future[NDArray[np.float32]] | None = None
        if helper is not None:
            with contextlib.suppress(RuntimeError):  # a helper shut down (the library closing)
                self._future = helper.submit(self._embed)

    def _embed(self) -> NDArray[np.float32]:
        import numpy as np  # loaded with the model already

        return self._embedder.embed(self._texts).astype(np.float32)

    def vectors(self) -> NDArray[np.float32]:
        """The vectors, one per text (raises what the embedder raised)."""
        with self._lock:
            if self._done is None:
                future = self._future
                self._done = self._embed() if future is None or future.cancel() else future.result()
            return self._done


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
        checked = coerce_search_text({field: text}, field, max_chars=MAX_ALTERNATIVE_CHARS)
        if checked is None:
            raise invalid(f"'{field}' is null; send a string or leave it out.")
        out.append(checked)
    return tuple(out)
