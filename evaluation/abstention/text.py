"""Text helpers of the offline abstention heuristics (judges, answerer, answer check).

Tokenizer, sentence splitter and stopword lists live in :mod:`common.text`. *Content
tokens* drop the abstention stopword list (:func:`common.text.abstention_stopwords`: bm25s' English list plus question and
auxiliary words) and one-letter tokens (digits are kept: numbers carry answers).
"""
from __future__ import annotations

from common.text import abstention_stopwords
from common.text import content_tokens as _content_tokens


def content_tokens(text: str) -> list[str]:
    """Tokens without the abstention stopwords and one-letter words (digits kept), in order."""
    return _content_tokens(text, abstention_stopwords())


def bigrams(toks: list[str]) -> set[tuple[str, str]]:
    """Adjacent token pairs of ``toks``."""
    return set(zip(toks, toks[1:]))


def coverage(needles: set, haystack: set) -> float:
    """Share of ``needles`` found in ``haystack`` (0.0 for no needles)."""
    return len(needles & haystack) / len(needles) if needles else 0.0


__all__ = ["bigrams", "content_tokens", "coverage"]
