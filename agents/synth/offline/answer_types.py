"""Question types and answer types: what slot a question asks for and whether a text fills it.

* :func:`question_type` - ``who | when | where | how_many | how_much | why | how | define |
  yesno | what`` from the question's wording;
* :func:`fills_slot` - whether a span (or an answer) holds something of the asked-for type:
  a date for *when*, a number for *how many*, a person/organisation for *who*, a place for
  *where*, an amount for *how much*, a cause for *why*, a means or steps for *how*;
* :func:`answer_span` - the answer's short span (the offline answerer puts it first, an LLM
  answer is searched for a typed entity).
"""
from __future__ import annotations

import re

from agents.synth.offline.nlp import detokenize, parse

_MONTHS = r"January|February|March|April|May|June|July|August|September|October|November|December"
DATE_RE = re.compile(rf"\b(1[0-9]{{3}}|20[0-9]{{2}})s?\b|\b({_MONTHS})\b|\b\d+(st|nd|rd|th) century\b|"
                     r"\b(century|decade|year|today|yesterday|BC|AD|BCE|CE)\b", re.IGNORECASE)
NUMBER_RE = re.compile(r"\d|\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|dozens?|hundreds?|"
                       r"thousands?|millions?|billions?|several|twenty|thirty|forty|fifty|sixty|seventy|eighty|"
                       r"ninety|no|none|single|both)\b", re.IGNORECASE)
MONEY_RE = re.compile(r"[$€£₹¥]|\b(dollars?|euros?|pounds?|rupees?|yen|USD|EUR|cents?|million|billion|trillion|"
                      r"free|cost)\b", re.IGNORECASE)
CAUSE_RE = re.compile(r"\b(because|due to|as a result|owing to|so that|in order to|so as to|caused by|reason|"
                      r"result of|led to|thanks to|in response to|aimed to|intended to|to prevent|to stop|to protect)\b",
                      re.IGNORECASE)
MEANS_RE = re.compile(r"\b(by|using|through|via|with|use|run|click|select|enter|set|create|open|go to|step)\b",
                      re.IGNORECASE)


REQUEST = "What can you tell me about"      # the rewrite of an elliptical request ("What about X?")
_REQUEST_RE = re.compile(rf"^{REQUEST}\s+", re.IGNORECASE)


def request_body(question: str) -> str:
    """What a request asks about, with its context ("X in C?" of "What can you tell me about X in C?"); "" for
    any other question."""
    q = question.strip()
    return _REQUEST_RE.sub("", q) if _REQUEST_RE.match(q) else ""


def question_type(question: str) -> str:
    q = question.strip().lower()
    q = re.sub(r"^(and|so|but|ok|okay|well)[, ]+", "", q)
    if q.startswith("how many"):
        return "how_many"
    if q.startswith("how much"):
        return "how_much"
    if q.startswith(("who", "whom", "whose")):
        return "who"
    if q.startswith("when") or q.startswith("what year") or q.startswith("in what year"):
        return "when"
    if q.startswith("where"):
        return "where"
    if q.startswith("why"):
        return "why"
    if q.startswith("how"):
        return "how"
    if re.match(r"^what (is|was|are|were) [^?]*\?$", q) and len(q.split()) <= 8:
        return "define"
    if q.startswith(("can ", "is ", "are ", "does ", "do ", "did ", "was ", "were ", "could ", "has ", "have ")):
        return "yesno"
    return "what"


def _ents(text: str) -> set[str]:
    return {e.label_ for e in parse(text).ents}


def fills_slot(qtype: str, span: str, context: str = "") -> bool:
    """Whether ``span`` (read inside ``context`` for its entities) is an answer of ``qtype``."""
    span = detokenize(span)
    if not span.strip():
        return False
    ents = _ents(context or span) if context else _ents(span)
    if context:   # the entities that lie inside the span
        doc = parse(context)
        low = span.lower()
        ents = {e.label_ for e in doc.ents if e.text.lower() in low or low in e.text.lower()}
        ents |= _ents(span)
    if qtype == "when":
        return bool("DATE" in ents or "TIME" in ents or DATE_RE.search(span))
    if qtype == "how_many":
        return bool(NUMBER_RE.search(span)) or bool(ents & {"CARDINAL", "QUANTITY"})
    if qtype == "how_much":
        return bool(ents & {"MONEY", "QUANTITY", "PERCENT", "CARDINAL"}) or bool(MONEY_RE.search(span)) \
            or bool(re.search(r"\d", span))
    if qtype == "who":
        doc = parse(span)
        return bool(ents & {"PERSON", "ORG", "NORP", "GPE"}) or any(t.pos_ == "PROPN" for t in doc) \
            or any(t.lemma_.lower() in _PEOPLE for t in doc)
    if qtype == "where":
        return bool(ents & {"GPE", "LOC", "FAC", "ORG"}) or any(t.pos_ == "PROPN" for t in parse(span)) \
            or bool(re.search(r"\b(in|at|on|near|from)\b", span, re.IGNORECASE))
    if qtype == "why":
        return bool(CAUSE_RE.search(span))
    if qtype == "how":
        return len(span.split()) >= 2
    if qtype == "yesno":
        return span.strip().lower().startswith(("yes", "no"))
    return len(span.split()) >= 1


_PEOPLE = {"people", "person", "man", "woman", "king", "queen", "president", "leader", "founder", "author",
           "team", "company", "government", "army", "user", "administrator", "developer", "group", "family",
           "viewer", "fan", "critic", "reader", "scholar", "historian", "soldier", "citizen", "resident", "player",
           "student", "member", "official", "scientist", "researcher", "customer", "voter", "worker", "child",
           "parent", "doctor", "patient", "engineer", "settler", "immigrant", "audience", "crowd", "general",
           "emperor", "empress", "commander", "officer", "ruler", "governor", "minister", "prince", "princess", "priest",
           "bishop", "monk", "lord", "duke", "chief", "captain", "pope", "senator", "judge", "artist", "singer", "actor",
           "actress", "writer", "poet", "composer", "producer", "director", "coach", "owner", "employee", "farmer",
           "merchant", "colonist", "rebel", "troop", "sailor", "pilot", "explorer", "missionary", "inventor"}


def is_people(token) -> bool:
    """A common noun for people ("viewers", "critics", "the team"): asked about with "who", not "what"."""
    return token.lemma_.lower() in _PEOPLE


def answer_span(answer: str, qtype: str) -> str:
    """The short answer span: the answer's first sentence when it is short (the offline answerer's
    ``<span>. <supporting sentences>`` form), else the first entity of the asked-for type."""
    from agents.synth.text import sentences
    sents = sentences(answer)
    if sents and len(sents[0].split()) <= 12 and len(sents) > 1:
        return sents[0].rstrip(".")
    doc = parse(detokenize(answer[:2000]))
    want = {"when": {"DATE", "TIME"}, "how_many": {"CARDINAL", "QUANTITY"}, "how_much": {"MONEY", "QUANTITY",
            "PERCENT"}, "who": {"PERSON", "ORG", "NORP"}, "where": {"GPE", "LOC", "FAC"}}.get(qtype)
    if want:
        for e in doc.ents:
            if e.label_ in want:
                return e.text
    return sents[0] if sents else answer
