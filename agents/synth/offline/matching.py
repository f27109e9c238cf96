"""Offline "does this other passage also answer?": the same answer (normalised span, or the
same number/date/entity) in a sentence of the other passage that carries enough of the
question's terms (that sentence and its neighbours).

For an unanswerable question (no reference answer) a passage answers when one of its
windows carries most of the question's terms *and* something of the asked-for type that the
question does not already name (:func:`new_filler`).
"""
from __future__ import annotations

import re

from agents.synth.offline.answer_types import CAUSE_RE, answer_span, question_type
from agents.synth.offline.nlp import clean_passage, detokenize, parse
from agents.synth.text import content_words, sentences, words

_NUM = re.compile(r"\d[\d,.]*")


def norm(text: str) -> str:
    return " ".join(words(detokenize(text)))


def _key_values(span: str) -> set[str]:
    """Numbers (commas dropped) of a span: 1,000 == 1000."""
    return {n.replace(",", "").rstrip(".") for n in _NUM.findall(span)}


def span_in(span: str, text: str) -> bool:
    """The span occurs in the text (normalised words), or all its numbers do."""
    s, t = norm(span), norm(text)
    if s and f" {s} " in f" {t} ":
        return True
    nums = _key_values(span)
    return bool(nums) and nums <= _key_values(text) and len(s.split()) <= 4


def support(question: str, text: str) -> float:
    """Share of the question's content words found in ``text``."""
    q = set(content_words(question))
    if not q:
        return 0.0
    return len(q & set(words(detokenize(text)))) / len(q)


def windows(passage: str) -> list[str]:
    """Each sentence with its neighbours (the context a span is read in)."""
    sents = sentences(clean_passage(passage))
    return [" ".join(sents[max(0, i - 1): i + 2]) for i in range(len(sents))] or [passage]


_SLOT_ENTS = {"when": {"DATE", "TIME"}, "where": {"GPE", "LOC", "FAC"}, "who": {"PERSON", "ORG", "NORP"},
              "how_many": {"CARDINAL", "QUANTITY"}, "how_much": {"MONEY", "QUANTITY", "PERCENT"}}


def new_filler(qtype: str, text: str, question: str) -> bool:
    """``text`` holds something of the asked-for type that the question does not already name
    (a place other than the question's places for *where*, a date for *when* ...)."""
    ql = norm(question)
    want = _SLOT_ENTS.get(qtype)
    if want:
        return any(e.label_ in want and norm(e.text) not in ql for e in parse(text).ents)
    if qtype == "why":
        return bool(CAUSE_RE.search(text))
    if qtype == "how":
        return any(t.lower_ == "by" and any(c.tag_ == "VBG" for c in t.children) for t in parse(text))
    return False


def _stem(w: str) -> str:
    return re.sub(r"(ies|es|s|ed|ing|e)$", "", w) if len(w) > 4 else w


_AUX_WORDS = {"does", "do", "did", "is", "are", "was", "were", "has", "have", "had", "can", "could", "will", "would",
              "should", "may", "might"}


def clause_support(question: str, text: str) -> float:
    """Share of the question's content words found in ``text``, up to a plural/tense ending (a
    yes/no question has the verb's base form: "Does X replicate ...?" / "X replicates ...")."""
    q = {_stem(w) for w in content_words(question) if w not in _AUX_WORDS}
    if not q:
        return 0.0
    return len(q & {_stem(w) for w in words(detokenize(text))}) / len(q)


def negated(text: str) -> bool:
    """The text says not/never/cannot (a yes/no answer's polarity)."""
    return re.search(r"\b(not|never|cannot|no longer)\b|n[’']t\b", text, re.IGNORECASE) is not None


YESNO_SUPPORT = 0.8     # share of a yes/no question's terms a sentence must carry to state its clause


def yes_no(span: str) -> str | None:
    """``"yes"``/``"no"`` when an answer's span is a yes/no answer, else None."""
    s = span.strip().lower()
    return s if s in ("yes", "no") else None


def states(question: str, text: str, answer: str) -> tuple[bool, float]:
    """(``text`` states the yes/no ``question``'s clause with the polarity of ``answer``, the term support)."""
    s = clause_support(question, text)
    return s >= YESNO_SUPPORT and negated(text) == (answer == "no"), s


def also_answers(question: str, answer: str, candidate: str, min_support: float = 0.6) -> tuple[bool, str]:
    """(answers, reason) for the candidate passage; see the module docstring. A yes/no answer is
    found where a window carries >= 0.8 of the question's terms with the same polarity."""
    qtype = question_type(question)
    if answer:
        span = answer_span(answer, qtype)
        yn = yes_no(span) if qtype == "yesno" else None
        if yn:
            best = 0.0
            for w in windows(candidate):
                ok, s = states(question, w, yn)
                best = max(best, s)
                if ok:
                    return True, f"the same {span.strip()!r} with {s:.2f} of the question's terms in one passage window"
            return False, f"no window states the question's clause (best term support {best:.2f})"
        best = 0.0
        for w in windows(candidate):
            if span_in(span, w):
                s = support(question, w)
                best = max(best, s)
                if s >= min_support:
                    return True, (f"the same answer ({span[:60]!r}) with {s:.2f} of the question's terms "
                                  "in one passage window")
        return False, (f"answer span {span[:60]!r} " + (f"found with only {best:.2f} of the question's terms"
                                                        if best else "not found"))
    best = 0.0
    for w in windows(candidate):
        s = support(question, w)
        best = max(best, s)
        if s >= 0.75 and new_filler(qtype, w, question):
            return True, f"a window holds {s:.2f} of the question's terms and a {qtype} answer"
    return False, f"no window holds the question's terms with a {qtype} answer (best term support {best:.2f})"
