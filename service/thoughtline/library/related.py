"""The rule of related earlier reasoning (SPEC §5.4): which earlier sequences a new one's opening names.

Pure code, no SQLite and no model. The evidence is the words an opening shares with each earlier
sequence, weighted by how rare each word is among the user's sequences: an opening that names
"bellhop", "OOMKilled" and "heap snapshot" is about the sequence that did, whatever their wording
around it. Words any reasoning uses ("restate the problem", "list the constraints", "first",
"next step") are no evidence at all, and an opening with little evidence cannot claim much:
`similarity` is the share of the opening's weight that an earlier sequence also holds, counting
the opening as at least MIN_EVIDENCE words (0 to 1). Measured on the reasoning set's train and
dev replays (docs/related.md), this beat MiniLM cosines of the first thought and gained nothing
from adding them, so the evidence needs no vector and no model: it is there on a fresh Lambda as
on a laptop.

`TermIndex` is the in-memory form of that evidence for one store: each sequence's words and each
word's sequences, folded in thought id order (`library/related_open.py` decides when, and how
many stores' indexes stay in memory, by their `nbytes`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from thoughtline.library.search import STOPWORDS

_WORD = re.compile(r"\w\w+", re.UNICODE)  # two characters or more

# Calibrated on the train and dev replays only (bench/eval_related.py): the lowest share whose
# precision stays at or above 0.95 on both; test is reported, never tuned on.
THRESHOLD = 0.20
LIMIT = 3
# The least evidence an opening counts as holding, in words only it holds (each weighs 1): a short
# or generic opening's share is of this much, so two or three shared words, however well matched,
# never make a high share, and a suggestion needs at least THRESHOLD * MIN_EVIDENCE (3.2) words of
# shared evidence. Chosen on train and dev: of none and 14-20, the one whose calibrated threshold
# gives the best recall on the worse of the two (dev 0.733; none: 0.693). From 14 up, none of the
# topic-free openings (bench/topic_free_openings.py) is given a suggestion.
MIN_EVIDENCE = 16.0
# How an opening is read: its first two thoughts. The first alone is often a bare restatement
# ("Going through expenses properly."); the second names what it is about (recall 0.44 -> 0.76
# at equal precision on train).
OPENING_THOUGHTS = 2
# The index holds at most this many sequences (the newest); older ones are never suggested.
MAX_SEQUENCES = 2_000
# A sequence's words beyond this many are not indexed (bounds memory on very long sequences).
MAX_TERMS_PER_SEQUENCE = 600
# What an index holds, estimated from its counts, a little above what tracemalloc measures (CPython
# 3.11, 64-bit; the reasoning set folded at 1k, 5k and 100k thoughts: 3.4, 13.1 and 34.2 MB against
# estimates of 4.2, 16.4 and 35.4; `bench/related_memory.py`). A (sequence, word) entry is a slot
# in the sequence's word set and one in the word's posting set; a word is its string, its vocabulary
# and postings entries and its posting set; a sequence is its word set and its keys.
ENTRY_BYTES = 160
WORD_BYTES = 300
SEQUENCE_BYTES = 1_500


# The scaffolding of reasoning itself: its steps, acts and objects, and the thinking voice. An agent
# writes them whatever the subject ("Let me restate the problem. Next, list the constraints."), so
# they say nothing about which earlier sequence an opening is about; in a store of a few sequences
# their rarity cannot show that either. Written by hand from what reasoning text does; the train
# and dev replays only chose it over a longer list that also held words topics use ("plan",
# "check", "review", "key"). The pieces contractions leave ("doesn't" -> "doesn") are here too.
# Each word is checked as written and after the plural fold ("constraints" -> "constraint").
SCAFFOLDING = frozenset(
    """
    first second third fourth fifth next last finally step start begin continue recap summary
    summarize summarise conclusion conclude overview outline list
    think thinking thought reason reasoning consider reconsider analyze analyse analysis evaluate
    assess decide decided decision understand figure identify determine compare weigh verify confirm
    restate rephrase clarify explore examine
    problem question task goal constraint requirement assumption option alternative approach idea
    hypothesis hypotheses evidence fact detail situation context outcome tradeoff pro con criteria
    criterion factor aspect unknown
    okay ok hmm maybe perhaps probably actually basically really seem seemed need want know
    ll re ve don doesn didn isn wasn won aren shouldn couldn wouldn hasn haven hadn weren
    """.split()  # noqa: SIM905  # a word list reads better as prose than as 110 quoted strings
)
_NOT_EVIDENCE = STOPWORDS | SCAFFOLDING


def terms(text: str) -> set[str]:
    """The words of `text` that can carry a topic: no stopwords or scaffolding, no single characters, plurals folded."""
    out: set[str] = set()
    for word in _WORD.findall(text.lower()):
        if word in _NOT_EVIDENCE:
            continue
        # A crude plural fold ("runbooks" -> "runbook", "class" stays): cheaper than a stemmer,
        # and this index is built without SQLite's porter tokenizer.
        if len(word) > 3 and word[-1] == "s" and word[-2] != "s":
            word = word[:-1]
            if word in _NOT_EVIDENCE:  # "constraints", "options", "others"
                continue
        out.add(word)
    return out


# A stored thought as the index folds it: (thought id, sequence rowid, sequence id, text).
Folded = tuple[int, int, str, str]


@dataclass
class TermIndex:
    """Each indexed sequence's words and each word's sequences, for one store (keys are sequence rowids).

    Folding is idempotent (sets), so folding a thought twice changes nothing; `folded_to` is the
    highest thought id folded so far, and every lower id has been folded too. `keys` maps each
    indexed sequence's public id to its rowid. Each word is held once, however many sequences
    use it (`_vocab` hands every fold the string already held).
    """

    max_sequences: int = MAX_SEQUENCES
    terms_of: dict[int, set[str]] = field(default_factory=dict)
    postings: dict[str, set[int]] = field(default_factory=dict)
    keys: dict[str, int] = field(default_factory=dict)
    folded_to: int = 0
    _names: dict[int, str] = field(default_factory=dict)
    _vocab: dict[str, str] = field(default_factory=dict)
    _entries: int = 0  # (sequence, word) pairs in `postings`

    @property
    def nbytes(self) -> int:
        """An estimate of the memory the index holds (see ENTRY_BYTES)."""
        return self._entries * ENTRY_BYTES + len(self.postings) * WORD_BYTES + len(self.terms_of) * SEQUENCE_BYTES

    def add(self, key: int, sequence_id: str, text: str) -> None:
        """Fold one thought's text into sequence `key` (does not move `folded_to`)."""
        mine = self.terms_of.get(key)
        if mine is None:
            mine = self.terms_of[key] = set()
            self.keys[sequence_id], self._names[key] = key, sequence_id
            if len(self.terms_of) > self.max_sequences:
                self.forget(min(self.terms_of))
        room = MAX_TERMS_PER_SEQUENCE - len(mine)
        if room <= 0:
            return  # full: a long sequence's later thoughts cost no tokenizing on the write path
        vocab = self._vocab
        for word in terms(text):
            if room <= 0:
                break
            if word not in mine:
                word = vocab.setdefault(word, word)
                mine.add(word)
                holders = self.postings.setdefault(word, set())
                if key not in holders:
                    holders.add(key)
                    self._entries += 1
                room -= 1

    def fold(self, rows: Iterable[Folded]) -> None:
        """Fold stored thoughts, in id order."""
        for thought_id, key, sequence_id, text in rows:
            self.add(key, sequence_id, text)
            self.folded_to = max(self.folded_to, thought_id)

    def forget(self, key: int) -> None:
        """Drop a sequence (evicted, or deleted from the store)."""
        self.keys.pop(self._names.pop(key, ""), None)
        for word in self.terms_of.pop(key, set()):
            holders = self.postings.get(word)
            if holders is not None and key in holders:
                holders.discard(key)
                self._entries -= 1
                if not holders:
                    del self.postings[word]
                    del self._vocab[word]

    def shares(self, key: int, at_least: float = 0.0, more: str = "") -> list[tuple[int, float]]:
        """Other sequences' shares of sequence `key`'s word weight, best first (empty when it has no words).

        The opening is the sequence's folded words plus those of `more` (a thought not folded
        yet). A word's weight is its rarity among the N other sequences, log((N + 2) / (df + 1))
        with df of them holding it, over log(N + 2), its value for a word no other sequence holds:
        1 for such a word, nearly 0 for one every sequence uses, whatever the store's size (so
        MIN_EVIDENCE means the same in a store of ten sequences as in one of a thousand); the
        sequence never counts itself.
        A share is the weight a sequence holds over the opening's, or over MIN_EVIDENCE when the
        opening weighs less: a few words, however well matched, are not enough to name a sequence.
        Every sequence whose share reaches `at_least` is listed with its exact share; others may
        be left out: words are taken rarest first, and once the words left weigh less than
        `at_least` of the whole, a sequence not met yet cannot reach it, so the long posting lists
        of common words are only checked against the sequences already met.
        """
        opening = self.terms_of.get(key, set()) | (terms(more) if more else set())
        if not opening:
            return []
        others = len(self.terms_of) - (1 if key in self.terms_of else 0)
        unique = math.log(others + 2)  # > 0: at least log 2
        none: set[int] = set()
        weighted: list[tuple[float, str, set[int]]] = []
        for word in opening:
            holders = self.postings.get(word, none)
            holding = len(holders) + (0 if key in holders else 1)  # the opening holds it too
            weighted.append((math.log((others + 2) / holding) / unique, word, holders))
        weighted.sort(key=lambda item: (-item[0], item[1]))
        total = sum(weight for weight, _, _ in weighted)
        if total <= 0.0:
            return []
        whole = max(total, MIN_EVIDENCE)
        # A hair below the floor, so float rounding never drops a sequence that reaches it exactly.
        remaining, floor = total, at_least * whole * (1 - 1e-9)
        found: dict[int, float] = {}
        for weight, _, holders in weighted:
            if weight > 0.0 and holders:
                if remaining >= floor:
                    for holder in holders:
                        if holder != key:
                            found[holder] = found.get(holder, 0.0) + weight
                else:
                    # Only sequences that can still reach the floor are followed further.
                    found = {h: w + weight if h in holders else w for h, w in found.items() if w + remaining >= floor}
            remaining -= weight
        return sorted(((k, w / whole) for k, w in found.items()), key=lambda kv: (-kv[1], -kv[0]))


def choose(
    scored: Sequence[tuple[int, float]], threshold: float = THRESHOLD, limit: int = LIMIT
) -> list[tuple[int, float]]:
    """The rule: the best `limit` candidates, each at or above `threshold`; none is better than a weak one."""
    return [(key, share) for key, share in scored[:limit] if share >= threshold]
