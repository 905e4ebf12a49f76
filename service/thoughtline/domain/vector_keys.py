"""How a thought's vectors are keyed: which text sits in which of its 16 slots, and the key arithmetic.

A thought is embedded as its whole text (slot 0) and, when it says several things, one passage
per sentence (slots 1-15). Its vectors are stored under `thought id * VECTOR_SLOTS + slot`, so
one integer names a vector and the thought it belongs to. Pure functions: the migrations, the
vector SQL, the embedding job and the in-memory index all read the rule from here.
"""

from __future__ import annotations

import math
import re

# Slots per thought: the whole text and up to 15 passages.
VECTOR_SLOTS = 16

# Thoughts longer than this also get one vector per sentence. Issue 5 kept passages for text past
# MiniLM's window (1,000 chars); on the reasoning set's dev split every multi-sentence step gains
# from them (vector-only recall@5 0.617 whole-thought -> 0.664 with best-sentence and sequence
# evidence, issue 8), at ~2.7 vectors per thought (a 5k store: ~14k vectors, ~2 ms a query).
PASSAGE_MIN_CHARS = 0

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def vector_key(thought_id: int, slot: int) -> int:
    """The stored key of one of a thought's vectors."""
    return thought_id * VECTOR_SLOTS + slot


def thought_of(key: int) -> int:
    """The thought a vector key belongs to."""
    return key // VECTOR_SLOTS


def slot_of(key: int) -> int:
    """Which of its thought's vectors a key names (0 = the whole thought)."""
    return key % VECTOR_SLOTS


def sentence_count(body: str) -> int:
    """How many sentences `chunk_texts` sees in a thought."""
    return sum(1 for part in _SENTENCE_END.split(body) if part.strip())


def chunk_texts(body: str, max_chunks: int = VECTOR_SLOTS, min_chars: int = 0) -> list[str]:
    """The texts a thought is embedded as: the whole thought, then its sentences.

    MiniLM reads 256 tokens and averages them, so one vector per thought blurs a step that says
    several things and ignores everything past its first ~1,000 characters. Thoughts longer than
    `min_chars` with two or more sentences also get one vector per sentence (or, past
    `max_chunks - 1` sentences, per contiguous group of them). A sentence names one thing: on the
    reasoning set's dev split, best-sentence evidence beat sentence pairs (vector-only recall@5,
    with the sequence term, 0.664 against 0.642; issue 8).
    """
    text = " ".join(body.split())
    sentences = [" ".join(part.split()) for part in _SENTENCE_END.split(body) if part.strip()]
    if len(sentences) < 2 or len(text) <= min_chars:
        return [text]
    if len(sentences) > max_chunks - 1:
        size = math.ceil(len(sentences) / (max_chunks - 1))
        sentences = [" ".join(sentences[i : i + size]) for i in range(0, len(sentences), size)]
    return [text, *sentences[: max_chunks - 1]]


def passage_of(body: str, slot: int, min_chars: int) -> str:
    """The text behind vector `slot` of a thought (see `chunk_texts`)."""
    chunks = chunk_texts(body, VECTOR_SLOTS, min_chars)
    return chunks[slot] if 0 <= slot < len(chunks) else chunks[0]
