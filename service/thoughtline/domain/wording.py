"""Counted nouns in tool texts: "1 thought", "2 thoughts" (every noun used here takes a plain -s)."""

from __future__ import annotations


def counted(count: object, noun: str) -> str:
    """`count` and `noun`, plural unless the count is exactly one (counts come from untyped row dicts)."""
    return f"{count} {noun}{'' if count == 1 else 's'}"
