"""Small text helpers shared by the offline heuristics (judges, answerer, answer check).

Tokens are maximal runs of Unicode letters/digits of the lower-cased text (the BM25
tokenizer's pattern). *Content tokens* drop bm25s' English stopword list, the question and
auxiliary words below (:data:`EXTRA_STOPWORDS`) and one-letter tokens (digits are kept:
numbers carry answers). Sentences are split after ``.``, ``!``,
``?`` followed by white space, and at line breaks.
"""
from __future__ import annotations

import re
from functools import lru_cache

_TOKEN = re.compile(r"[^\W_]+")
_SENT = re.compile(r"(?<=[.!?])\s+|\n+")


EXTRA_STOPWORDS = frozenset("""
what when where which who whom whose why how do does did done can could would should may might must
shall will has have had am i you me my your yours we our us he him his she her its they them their
tell please about also any some all more most very just so than then there here from into out up
""".split())


@lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN
    return frozenset(STOPWORDS_EN) | EXTRA_STOPWORDS


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def content_tokens(text: str) -> list[str]:
    """Tokens without stopwords and one-letter words (digits kept), in order."""
    stop = _stopwords()
    return [t for t in tokens(text) if t not in stop and (len(t) > 1 or t.isdigit())]


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT.split(text) if s and s.strip()]


def bigrams(toks: list[str]) -> set[tuple[str, str]]:
    return set(zip(toks, toks[1:]))


def coverage(needles: set, haystack: set) -> float:
    """Share of ``needles`` found in ``haystack`` (0.0 for no needles)."""
    return len(needles & haystack) / len(needles) if needles else 0.0


__all__ = ["bigrams", "content_tokens", "coverage", "sentences", "tokens"]
