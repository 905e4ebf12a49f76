"""Pure search logic: FTS5 query building, phrase bonuses, passages and snippets.

Nothing here touches SQLite or the model, so every rule is tested directly. The store queries
live in `storage/search.py` (keywords) and `storage/vectors.py`; `retrieval.py` wires them together.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence

# Words that carry no topic in a question. Kept small: porter stemming already folds most
# inflections, and dropping a real topic word costs more recall than an extra OR term costs rank.
STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself
    just me more most my myself no nor not now of off on once only or other our ours ourselves out
    over own same she should so some such than that the their theirs them themselves then there
    these they this those through to too under until up very was we were what when where which
    while who whom why will with would you your yours yourself yourselves ever also did does
    kind sort thing things get got go going went gone like likely lot lots many much make made
    one ones something anything way ways would could might shall may must us let lets yes
    """.split()  # noqa: SIM905  # a word list reads better as prose than as 170 quoted strings
)

_TOKEN = re.compile(r"\w+", re.UNICODE)


def tokens(text: str) -> list[str]:
    """Split text into lowercase word tokens the way unicode61 roughly does."""
    return [t.lower() for t in _TOKEN.findall(text)]


def quote_term(term: str) -> str:
    """Quote one term as an FTS5 string: double quotes inside are doubled, so nothing is syntax."""
    return '"' + term.replace('"', '""') + '"'


def content_terms(text: str) -> list[str]:
    """The distinct non-stopword terms of a query, in order; all words when every one is a stopword."""
    words = tokens(text)
    kept = [w for w in words if w not in STOPWORDS]
    seen: dict[str, None] = {}
    for w in kept or words:
        seen.setdefault(w, None)
    return list(seen)


def terms_query(terms: Sequence[str]) -> str | None:
    """An OR query of the given terms (a query's `content_terms`), each quoted; None when there are none.

    A real question rarely has every word in one thought, so a strict AND of its words finds
    nothing; BM25 over an OR still ranks thoughts holding more and rarer terms first.
    """
    return " OR ".join(quote_term(t) for t in terms) or None


def phrase_query(text: str) -> str | None:
    """An OR query of the phrases two adjacent content words of the question make; None when none do.

    "support group" or "pottery class" name a topic more sharply than either word: a thought
    holding the phrase earns a bonus on top of its BM25 score (see `add_scores`).
    """
    words = tokens(text)
    pairs: dict[str, None] = {}
    for a, b in itertools.pairwise(words):
        if a not in STOPWORDS and b not in STOPWORDS and a != b:
            pairs.setdefault(f"{a} {b}", None)
    # A quoted string of several words is an FTS5 phrase: its tokens must be adjacent, in order.
    return " OR ".join(quote_term(p) for p in pairs) or None


def add_scores(base: Mapping[int, float], bonus: Mapping[int, float], weight: float) -> dict[int, float]:
    """`base` plus `weight` times `bonus`; an id only in `bonus` starts from the weakest base score."""
    floor = min(base.values()) if base else 0.0
    out = dict(base)
    for key, value in bonus.items():
        out[key] = out.get(key, floor) + weight * value
    return out


def make_snippet(body: str, terms: Sequence[str], width: int = 200) -> str:
    """A window of about `width` characters around the densest cluster of query terms.

    Falls back to the opening of the thought when no term occurs (a purely semantic match).
    Whitespace is collapsed so the snippet reads as one line; cut ends get an ellipsis.
    """
    text = " ".join(body.split())
    if len(text) <= width:
        return text
    wanted = _Folded({t.lower() for t in terms})
    positions = [m.start() for m in _TOKEN.finditer(text) if wanted.matches(m.group().lower())]
    start = 0
    if positions:
        best_count, best_start = -1, 0
        for p in positions:
            count = sum(1 for q in positions if p <= q < p + width)
            if count > best_count:
                best_count, best_start = count, p
        # Give the first hit a little leading context, snapped to a word boundary.
        start = max(0, best_start - width // 5)
        if start:
            space = text.find(" ", start)
            start = space + 1 if 0 <= space < best_start else start
        start = min(start, max(0, len(text) - width))
    end = min(len(text), start + width)
    if end < len(text):
        space = text.rfind(" ", start, end)
        end = space if space > start + width // 2 else end
    return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")


class _Folded:
    """A set of words matched with prefix folding, a crude stand-in for porter stemming.

    "migrations" matches "migration" and vice versa. Both sides need four letters, or "a" would
    match every term that starts with an a. The prefixes are precomputed, so a match is two set
    lookups and one C-level `startswith` however many words there are.
    """

    def __init__(self, words: set[str]) -> None:
        self.exact = words
        self.long = tuple(w for w in words if len(w) > 3)
        self.prefixes = {w[:i] for w in self.long for i in range(4, len(w) + 1)}

    def matches(self, word: str) -> bool:
        if word in self.exact:
            return True
        return len(word) > 3 and (word in self.prefixes or word.startswith(self.long))


def term_coverage(body: str, terms: Sequence[str]) -> float:
    """Share of `terms` found in `body` (prefix-folded like `make_snippet`); 0 without terms."""
    if not terms:
        return 0.0
    words = set(tokens(body))
    long = tuple(w for w in words if len(w) > 3)
    # " " + t inside the joined words: some word starts with t (one C-level search per term).
    joined = " " + " ".join(long)
    covered = sum(1 for t in terms if t in words or (len(t) > 3 and (t.startswith(long) or " " + t in joined)))
    return covered / len(terms)
