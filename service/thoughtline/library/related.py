"""The rule of related earlier reasoning (SPEC §5.4): which earlier sequences a new one's opening names.

Pure code, no SQLite and no model. The evidence is the words an opening shares with each earlier
sequence, weighted by how rare each word is among the user's sequences: an opening that names
"bellhop", "OOMKilled" and "heap snapshot" is about the sequence that did, whatever their wording
around it. `similarity` is the share of the opening's weight that an earlier sequence also holds
(0 to 1). Measured on the reasoning set's train and dev replays (docs/related.md), this beat
MiniLM cosines of the first thought and gained nothing from adding them, so the evidence needs
no vector and no model: it is there on a fresh Lambda as on a laptop.

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
THRESHOLD = 0.22
LIMIT = 3
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


def terms(text: str) -> set[str]:
    """The words of `text` that can carry a topic: no stopwords, no single characters, plurals folded."""
    out: set[str] = set()
    for word in _WORD.findall(text.lower()):
        if word in STOPWORDS:
            continue
        # A crude plural fold ("runbooks" -> "runbook", "class" stays): cheaper than a stemmer,
        # and this index is built without SQLite's porter tokenizer.
        if len(word) > 3 and word[-1] == "s" and word[-2] != "s":
            word = word[:-1]
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
        yet). A word's weight is its rarity among the other sequences, log((N + 1) / (df + 1)),
        so a word every sequence uses weighs nearly nothing and the sequence never counts itself.
        Every sequence whose share reaches `at_least` is listed with its exact share; others may
        be left out: words are taken rarest first, and once the words left weigh less than
        `at_least` of the whole, a sequence not met yet cannot reach it, so the long posting lists
        of common words are only checked against the sequences already met.
        """
        opening = self.terms_of.get(key, set()) | (terms(more) if more else set())
        if not opening:
            return []
        others = len(self.terms_of) - (1 if key in self.terms_of else 0)
        none: set[int] = set()
        weighted: list[tuple[float, str, set[int]]] = []
        for word in opening:
            holders = self.postings.get(word, none)
            holding = len(holders) + (0 if key in holders else 1)  # the opening holds it too
            weighted.append((math.log((others + 2) / holding), word, holders))
        weighted.sort(key=lambda item: (-item[0], item[1]))
        total = sum(weight for weight, _, _ in weighted)
        if total <= 0.0:
            return []
        # A hair below the floor, so float rounding never drops a sequence that reaches it exactly.
        remaining, floor = total, at_least * total * (1 - 1e-9)
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
        return sorted(((k, w / total) for k, w in found.items()), key=lambda kv: (-kv[1], -kv[0]))


def choose(
    scored: Sequence[tuple[int, float]], threshold: float = THRESHOLD, limit: int = LIMIT
) -> list[tuple[int, float]]:
    """The rule: the best `limit` candidates, each at or above `threshold`; none is better than a weak one."""
    return [(key, share) for key, share in scored[:limit] if share >= threshold]
