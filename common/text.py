"""Ground-floor text helpers: the word tokenizer, sentence splitting, whitespace
normalisation and the stopword lists (imports nothing of ours; third-party lists load lazily).

Tokens are maximal runs of Unicode letters/digits of the lower-cased text (:data:`TOKEN_PATTERN`,
the BM25 tokenizer's default pattern). Sentences are split after ``.``, ``!``, ``?`` followed
by white space, and at line breaks.

Why several stopword lists (on purpose, one module): each list is part of the behaviour of
the code that uses it, and outputs (judge scores, synthesised conversations, BM25 runs) would
change if they were merged. Each variant is named after its user:

* :func:`bm25_stopwords` - bm25s' English list (BM25 ``stopwords="en"``, RM3 feedback terms).
* :func:`abstention_stopwords` - bm25s' list plus question/auxiliary words
  (:data:`ABSTENTION_EXTRA_STOPWORDS`): the offline abstention heuristics.
* :data:`JUDGE_STOPWORDS` - a fixed English list plus chat words ("tell", "please", "thanks"):
  the offline audit judges (MTR-Eval heuristics), a frozen copy so scores never depend on a
  library version.
* :func:`synthesis_stopwords` - scikit-learn's English list plus a few narrative words: the
  offline synthesis agents (questions, salient phrases, overlaps).
"""
from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Collection

TOKEN_PATTERN = r"[^\W_]+"
_TOKEN = re.compile(TOKEN_PATTERN)
_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\n+")

JUDGE_STOPWORDS = frozenset("""a about above after again against all also am an and any are as at be because been
before being below between both but by can could did do does doing down during each few for from further had
has have having he her here hers herself him himself his how i if in into is it its itself just let me more
most my myself no nor not now of off on once only or other our ours ourselves out over own same she should so
some such than that the their theirs them themselves then there these they this those through to too under
until up very was we were what when where which while who whom why will with would you your yours yourself
yourselves tell know please thanks thank ok okay yes also many much""".split())

ABSTENTION_EXTRA_STOPWORDS = frozenset("""
what when where which who whom whose why how do does did done can could would should may might must
shall will has have had am i you me my your yours we our us he him his she her its they them their
tell please about also any some all more most very just so than then there here from into out up
""".split())

SYNTHESIS_EXTRA_STOPWORDS = frozenset({"also", "however", "including", "later", "known", "called"})


@lru_cache(maxsize=1)
def bm25_stopwords() -> frozenset[str]:
    """bm25s' English stopword list."""
    from bm25s.stopwords import STOPWORDS_EN   # costly: bm25s
    return frozenset(STOPWORDS_EN)


@lru_cache(maxsize=1)
def abstention_stopwords() -> frozenset[str]:
    """bm25s' English list plus :data:`ABSTENTION_EXTRA_STOPWORDS`."""
    return bm25_stopwords() | ABSTENTION_EXTRA_STOPWORDS


@lru_cache(maxsize=1)
def synthesis_stopwords() -> frozenset[str]:
    """scikit-learn's English list plus :data:`SYNTHESIS_EXTRA_STOPWORDS`."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS   # costly: scikit-learn
    return frozenset(ENGLISH_STOP_WORDS) | SYNTHESIS_EXTRA_STOPWORDS


def tokens(text: str | None) -> list[str]:
    """Lower-cased word tokens (runs of Unicode letters/digits); ``None`` gives ``[]``."""
    return _TOKEN.findall((text or "").lower())


def content_tokens(text: str | None, stopwords: Collection[str]) -> list[str]:
    """Tokens minus ``stopwords`` and one-character tokens (single digits are kept), in order."""
    return [t for t in tokens(text) if t not in stopwords and (len(t) > 1 or t.isdigit())]


def sentences(text: str | None) -> list[str]:
    """Sentences / lines of ``text`` (split after . ! ? + white space and at newlines), stripped, non-empty."""
    return [s.strip() for s in _SENTENCE_BREAK.split(text or "") if s and s.strip()]


def normalize_space(text: str | None) -> str:
    """Runs of white space (newlines included) collapsed to one space, ends stripped."""
    return " ".join((text or "").split())


__all__ = ["ABSTENTION_EXTRA_STOPWORDS", "JUDGE_STOPWORDS", "SYNTHESIS_EXTRA_STOPWORDS", "TOKEN_PATTERN",
           "abstention_stopwords", "bm25_stopwords", "content_tokens", "normalize_space", "sentences",
           "synthesis_stopwords", "tokens"]


# Characters that show nothing: besides the format (Cf: zero-width space/joiners, BOM, bidi marks),
# control (Cc) and separator (Z*) categories, the combining grapheme joiner, variation selectors,
# Hangul fillers and the blank braille pattern.
_INVISIBLE_EXTRA = frozenset([0x034F, 0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800, *range(0xFE00, 0xFE10),
                              *range(0xE0100, 0xE01F0)])


def visible(text: str) -> str:
    """``text`` without its invisible characters (zero-width spaces, format and control
    characters, white space, variation selectors ...): empty for a name that shows nothing."""
    return "".join(ch for ch in text if ord(ch) not in _INVISIBLE_EXTRA
                   and unicodedata.category(ch)[0] not in "CZ")
