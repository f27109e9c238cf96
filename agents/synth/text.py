"""Deterministic text helpers for the offline backend (no model, no network).

Sentence splitting, content words, salient phrases and a small rule-based question
generator. They are plain functions so the offline agents stay readable and testable.
"""
from __future__ import annotations

import re

from common.text import synthesis_stopwords

_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")
_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*", re.UNICODE)
COPULA = r"(is|was|are|were)"


def stopwords() -> frozenset[str]:
    """The synthesis agents' stopword list (:func:`common.text.synthesis_stopwords`)."""
    return synthesis_stopwords()


def sentences(text: str) -> list[str]:
    """Sentences of a passage (paragraph breaks and end punctuation), whitespace-normalised."""
    out = []
    for para in re.split(r"\n\s*\n|\n", text):
        para = " ".join(para.split())
        if para.startswith("#"):          # markdown heading lines are not sentences
            continue
        if not para:
            continue
        out.extend(s.strip() for s in _SENT.split(para) if s.strip())
    return out


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def content_words(text: str) -> list[str]:
    sw = stopwords()
    return [w for w in words(text) if w not in sw and len(w) > 2 and not w.isdigit()]


def phrase_pattern(words_: list[str], flags: int = re.IGNORECASE, possessive: bool = False) -> re.Pattern:
    """A regex for the phrase ``words_`` written as whole words with any spacing or punctuation between them
    ("Berlin Wall" matches "the Berlin  Wall", not "Berlin Walls" nor "East-Berlin Wall"). ``possessive``: the words
    come normalised, their apostrophes dropped, and a word ending in "s" (4+ letters) also matches its possessive
    ("huntingtons disease" matches "Huntington's disease")."""
    parts = [re.escape(w[:-1]) + r"['’]?s" if possessive and len(w) > 3 and w.endswith("s") else re.escape(w)
             for w in words_]
    return re.compile(r"(?<![\w-])" + r"[\W_]+".join(parts) + r"(?![\w-])", flags)


def overlap(a: str, b: str) -> float:
    """Share of a's content words that occur in b."""
    wa = set(content_words(a))
    if not wa:
        return 0.0
    return len(wa & set(words(b))) / len(wa)


def jaccard_words(a: str, b: str) -> float:
    return jaccard(set(content_words(a)), set(content_words(b)))


def jaccard(sa: set[str] | frozenset[str], sb: set[str] | frozenset[str]) -> float:
    """Jaccard of two word sets (1.0 for two empty sets)."""
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


def informative(sentence: str) -> float:
    """How good a sentence is as the basis of a question (length, entities, numbers)."""
    n = len(sentence.split())
    if n < 6 or n > 60 or sentence.endswith("?") or sentence.endswith(":"):
        return 0.0
    caps = len(re.findall(r"(?<!^)\b[A-Z][a-z]+", sentence))
    nums = len(re.findall(r"\b\d[\d,.]*\b", sentence))
    return 1.0 + min(caps, 5) * 0.3 + min(nums, 3) * 0.4 - abs(n - 22) * 0.01


def salient_phrase(sentence: str, title: str = "") -> str:
    """The most specific noun-ish phrase of a sentence: a run of capitalised words, else content words."""
    runs = re.findall(r"(?:\b[A-Z][\w'’-]*(?:\s+(?:of|the|and|de|von|in)\s+|\s+))*\b[A-Z][\w'’-]*", sentence)
    first_word = sentence.split()[0] if sentence.split() else ""
    cands = [r.strip() for r in runs if r.strip() and r.strip() != first_word and r.strip().lower() not in stopwords()]
    cands = [c for c in cands if c.lower() != title.lower()] or cands
    if cands:
        return max(cands, key=lambda c: (len(c.split()), len(c)))
    cw = content_words(sentence)
    return " ".join(cw[:3]) if cw else (title or "this")


def _clean_np(np_: str) -> str:
    np_ = np_.strip(" ,;:")
    return np_[0].lower() + np_[1:] if np_[:1].isupper() and not np_[1:2].isupper() and np_.split()[0].lower() in (
        "the", "a", "an", "its", "their", "his", "her") else np_


def question_from_sentence(sentence: str, title: str = "") -> tuple[str, str]:
    """(question, standalone question) for a sentence, by simple wh-rules.

    * "X was Y ..." with a short subject -> "What was X?" / "Who was X?"
    * "In 1961, ..." / a year in the sentence -> "What happened in 1961 regarding <phrase>?"
    * otherwise -> "What is known about <salient phrase>?"
    The standalone form adds the document title when the question does not name it.
    """
    s = sentence.strip().rstrip(".")
    m = re.match(rf"^((?:[\w'’().,-]+\s+){{0,7}}?[\w'’().-]+)\s+{COPULA}\s+(.+)$", s)
    q = None
    subj_ok = m is not None and (re.search(r"(?<!^)\b[A-Z][a-z]+", m.group(1)) is not None
                                 or m.group(1)[:1].isupper() and not m.group(1).lower().startswith(("the ", "a ", "an ")))
    if m and subj_ok and len(m.group(1).split()) <= 8 and not m.group(1).lower().startswith(("it ", "this ", "these ", "they ", "he ", "she ")) \
            and m.group(1).lower() not in ("it", "this", "he", "she", "they", "there"):
        subj = _clean_np(m.group(1))
        wh = "Who" if re.match(r"^[A-Z][a-z]+ [A-Z][a-z]+$", subj) and not title.lower().startswith(subj.lower()) else "What"
        verb = m.group(0).split()[len(m.group(1).split())]
        q = f"{wh} {verb} {subj}?"
    if q is None:
        year = re.search(r"\b(1[0-9]{3}|20[0-9]{2})\b", s)
        phrase = salient_phrase(s, title)
        if year and year.group(1) not in phrase:
            q = f"What happened in {year.group(1)} regarding {phrase}?"
        else:
            q = f"What is known about {phrase}?"
    q = q[0].upper() + q[1:]
    standalone = q
    has_entity = re.search(r"(?<!^)\b[A-Z][a-z]+", q) is not None
    if title and not has_entity and not any(w in q.lower() for w in content_words(title)):
        standalone = q[:-1] + f" in {title}?"
    return q, standalone


def page_name(title: str) -> str:
    """A page title as the name its text uses: "Wonder Woman (2017 film)" -> "Wonder Woman"."""
    return re.sub(r"\s*\([^()]*\)\s*$", "", (title or "").strip()).strip()
