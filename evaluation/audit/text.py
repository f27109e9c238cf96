"""Text helpers shared by the judges: cleaning, conversation rendering, content terms, IDF.

* :func:`clean_passage` removes citation markers (``[3]``, ``[1, 2]``) as the reference did
  before showing a passage to a judge, and collapses runs of blank lines.
* :func:`render_history` renders the earlier turns as quoted ``<turn>`` blocks, oldest first,
  left-truncated (the *oldest* turns go first) so the current question is never cut.
* :class:`TermStats` holds document frequencies of a corpus; :meth:`TermStats.idf` is the
  Lucene BM25 idf ``ln(1 + (N - df + 0.5) / (df + 0.5))``, so rare words weigh more in the
  heuristic judges' coverage scores.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from typing import Iterable, Mapping, Sequence

from agents.quoting import quote_turns
from common.text import JUDGE_STOPWORDS, content_tokens

_CITATION = re.compile(r"\s*\[\d+(?:\s*,\s*\d+)*\]")

STOPWORDS = JUDGE_STOPWORDS
"""The judges' stopword list (:data:`common.text.JUDGE_STOPWORDS`)."""


def clean_passage(text: str) -> str:
    """A passage as judges see it: citation markers removed, blank-line runs collapsed."""
    text = _CITATION.sub("", text or "")
    return re.sub(r"\n\s*\n+", "\n\n", text).strip()


def truncate(text: str, max_chars: int | None) -> str:
    """Cut ``text`` to ``max_chars`` at a word boundary, marking the cut with an ellipsis."""
    if max_chars is None or len(text) <= max_chars:
        return text
    cut = text[:max_chars]
    sp = cut.rfind(" ")
    return (cut[:sp] if sp > max_chars // 2 else cut).rstrip() + " [...]"


def render_history(history: Sequence[Sequence[str]], max_turns: int | None = 12,
                   max_chars: int | None = 6000) -> str:
    """``<turn role="user|assistant">...</turn>`` lines of the earlier messages (most recent kept), each
    quoted by :func:`agents.quoting.quote_turns` (text escaped, white space collapsed).

    Args:
        history: ``[(role, text), ...]`` oldest first.
        max_turns: keep at most this many most recent messages (None: all).
        max_chars: then drop whole oldest messages until the text fits (None: no limit); the
            most recent message's text is cut from the left when it alone is too long.
    """
    msgs = list(history)[-max_turns:] if max_turns else list(history)
    turns = [("assistant" if r == "assistant" else "user", " ".join(str(t).split())) for r, t in msgs]
    lines = [quote_turns([t]) for t in turns]
    dropped = len(history) - len(msgs)
    if max_chars is not None:
        while len(lines) > 1 and sum(len(x) + 1 for x in lines) > max_chars:
            lines.pop(0)
            turns.pop(0)
            dropped += 1
        if lines and len(lines[0]) > max_chars:
            role, text = turns[0]
            lines[0] = quote_turns([(role, "[...] " + text[-max_chars:])])
    if not lines:
        return "(no earlier turns)"
    head = [f"[{dropped} earlier message(s) omitted]"] if dropped else []
    return "\n".join(head + lines)


def content_terms(text: str) -> list[str]:
    """Tokens minus the judges' stopwords and one-character tokens (digits are kept)."""
    return content_tokens(text, STOPWORDS)


class TermStats:
    """Document frequencies of a corpus, for IDF weights.

    Args:
        texts: the corpus texts.
    """

    def __init__(self, texts: Iterable[str]) -> None:
        df: Counter[str] = Counter()
        n = 0
        for t in texts:
            df.update(set(content_terms(t)))
            n += 1
        self.df = df
        self.n_docs = n

    def idf(self, term: str) -> float:
        d = self.df.get(term, 0)
        return math.log(1.0 + (self.n_docs - d + 0.5) / (d + 0.5))

    def weights(self, terms: Iterable[str], scale: float = 1.0) -> dict[str, float]:
        """``{term: scale * idf}`` for the distinct ``terms``."""
        return {t: scale * self.idf(t) for t in set(terms)}


def coverage(weights: Mapping[str, float], present: set[str] | frozenset[str]) -> float:
    """Weighted fraction of the terms of ``weights`` found in ``present`` (0 when no terms)."""
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    return sum(w for t, w in weights.items() if t in present) / total


def query_weights(stats: TermStats, question: str, history: Sequence[Sequence[str]] = (),
                  rewrite: str | None = None, decay: float = 0.5) -> dict[str, float]:
    """IDF weights of the current question's terms, in context.

    With a standalone ``rewrite`` its terms are used (weight 1). Otherwise the current
    question's terms weigh 1 and each earlier *user* turn ``k`` steps back adds its new
    terms at ``decay ** k``, so an anaphoric follow-up ("and the second one?") still has
    the topic words of the conversation.
    """
    if rewrite:
        return stats.weights(content_terms(rewrite))
    w = stats.weights(content_terms(question))
    users = [t for r, t in history if r == "user"]
    for k, text in enumerate(reversed(users), start=1):
        scale = decay ** k
        if scale < 0.05:
            break
        for term, v in stats.weights(content_terms(text), scale).items():
            w.setdefault(term, v)
    return w


def to_rating(x: float, cuts: Sequence[float] = (0.2, 0.4, 0.6, 0.8)) -> int:
    """Map a score in [0, 1] to 1-5: below ``cuts[0]`` -> 1, ..., at least ``cuts[3]`` -> 5."""
    return 1 + sum(x >= c for c in cuts)
