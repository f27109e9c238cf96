"""Offline "does this other passage also answer?": the same answer (normalised span, or the
same number/date/entity) in a sentence of the other passage that carries enough of the
question's terms (that sentence and its neighbours).

For an unanswerable question (no reference answer) a passage answers when one of its
sentences carries most of the question's terms *and* something of the asked-for type.
"""
from __future__ import annotations

import re

from agents.synth.offline.answer_types import answer_span, fills_slot, question_type
from agents.synth.offline.nlp import clean_passage, detokenize
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


def also_answers(question: str, answer: str, candidate: str, min_support: float = 0.6) -> tuple[bool, str]:
    """(answers, reason) for the candidate passage; see the module docstring."""
    qtype = question_type(question)
    if answer:
        span = answer_span(answer, qtype)
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
        if s >= 0.75 and fills_slot(qtype, w):
            return True, f"a window holds {s:.2f} of the question's terms and a {qtype} answer"
    return False, f"no window holds the question's terms with a {qtype} answer (best term support {best:.2f})"
