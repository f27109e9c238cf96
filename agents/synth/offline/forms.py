"""Stage 3, question forms: an offer asked the way a person with that need would ask it, in common words.

A form is a template of its intent (``lexicon.toml``): *full* names the concept ("How much does the annual fee
cost?"), *pronoun* refers to it ("How much does it cost?"), *ellipsis* leaves it to the conversation ("What about
the cost?"), and *shift* carries the previous turn's question over to a new concept ("What about the late fee?").
The standalone form of every follow-up is its full form. Slots: ``{X}`` the concept, ``{Y}`` a second concept,
``{it}``/``{them}``/``{its}`` pronouns and ``{is}``/``{does}`` verbs that agree with the concept, ``{V}`` the
instruction's verb, ``{clause}`` the sentence's clause, ``{kinds}`` a plural or mass concept without its article
("What kinds of plans are there?"; a singular concept has no kinds: the form is refused), ``{active}`` the passive's
verb in the active voice (the sentence's tense). The ``forms`` rules then refuse a rendering no person would type.
"""
from __future__ import annotations

import re
from functools import lru_cache

from agents.synth.offline.concepts import Concept
from agents.synth.offline.intents import Clause, Offer
from agents.synth.offline.lexicon import lexicon, rule, rules
from agents.synth.text import content_words, words

KINDS = ("full", "pronoun", "ellipsis")
SHIFT = "What about {X}?"
CONTEXT = "in"       # how a rewrite adds the conversation's focus ("... in IBM Cloud Kubernetes Service?")
_VOWEL = re.compile(r"^(?:[aeio]|u(?![nr]i|s[eu]))", re.IGNORECASE)


def _indefinite(c: Concept) -> str:
    """How a definition names a concept: "a credit card", "an index", "insurance", "IBM Cloud"."""
    if c.article == "the" and not c.proper and not c.plural:
        return ("an " if _VOWEL.match(c.text) else "a ") + c.text
    return c.said


def _agree(c: Concept | None) -> dict[str, str]:
    plural = c is not None and c.plural
    return {"it": "they" if plural else "it", "them": "them" if plural else "it", "its": "their" if plural else "its",
            "is": "are" if plural else "is", "does": "do" if plural else "does"}


def _clause(cl: Clause, subject: str, plural: bool) -> str:
    if cl.kind in ("passive", "copula"):
        be = ("were" if plural else "was") if cl.past else ("are" if plural else "is")
        return f"{be} {subject} {cl.verb}"
    if cl.kind == "modal":
        return f"{cl.modal} {subject} {cl.verb}{cl.rest}"
    do = "did" if cl.past else ("do" if plural else "does")
    return f"{do} {subject} {cl.verb}{cl.rest}"


def fill(template: str, offer: Offer, pronoun: bool) -> str:
    """The template with its slots filled for ``offer`` (``pronoun``: the concept is referred to, not named)."""
    c = offer.concept
    agree = _agree(c)
    subj = agree["it"] if pronoun else c.said
    values = {**agree, "X": _indefinite(c) if offer.intent == "definition" else c.said,
              "Y": offer.other.said if offer.other else "{Y}", "V": offer.verb or "{V}", "active": offer.active or "{active}",
              "clause": _clause(offer.clause, subj, c.plural) if offer.clause else "{clause}",
              "kinds": c.text if c.plural or (c.article == "" and not c.proper) else "{kinds}"}
    out = re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), template)
    out = " ".join(out.split())
    return out[:1].upper() + out[1:]


def _person_name(text: str) -> bool:
    """Written as a person's name: capitalised words of letters, none an acronym ("Ada Lovelace", "J. K. Rowling";
    not "json", not "IBM Cloud Backup")."""
    ws = [w.replace("-", "").replace(".", "") for w in text.split()]
    return bool(ws) and all(w[:1].isupper() and w.isalpha() and not (len(w) > 1 and w.isupper()) for w in ws)


def templates(offer: Offer, kind: str) -> tuple[str, ...]:
    intent = lexicon().intents[offer.intent]
    if kind == "full" and intent.named_person and offer.concept.person and offer.concept.proper \
            and _person_name(offer.concept.text):
        return intent.named_person      # "Who is Ada Lovelace?", not "What is Ada Lovelace?"
    if intent.cue_named and kind in ("full", "pronoun") and intent.cue_names(offer.concept.text):
        return intent.cue_named if kind == "full" else intent.cue_named_pronoun     # the intent is in the concept
    return {"full": intent.full, "pronoun": intent.pronoun, "ellipsis": intent.ellipsis}[kind]


def render(offer: Offer, kind: str, variant: int = 0) -> str | None:
    """The question of ``offer`` in form ``kind`` (one of :data:`KINDS`, or "shift"), template ``variant`` (modulo
    the number of templates); None when the intent has no such form or a ``forms`` rule refuses it."""
    if kind == "shift":
        q = fill(SHIFT, offer, False)
    else:
        ts = templates(offer, kind)
        if not ts:
            return None
        q = fill(ts[variant % len(ts)], offer, kind == "pronoun")
    return q if all(r(q, offer) for r in rules("forms")) else None


@lru_cache(maxsize=1)
def _patterns() -> tuple[tuple[str, str, re.Pattern], ...]:
    """(intent, kind, pattern) of every template, most literal first; the concept's slot (``{X}`` or ``{clause}``)
    is captured as ``X``, the other slots match any words."""
    out = []
    for name, intent in lexicon().intents.items():
        for kind, ts in (("full", intent.full + intent.named_person + intent.cue_named),
                         ("pronoun", intent.pronoun + intent.cue_named_pronoun),
                         ("ellipsis", intent.ellipsis)):
            for t in ts:
                rx = re.escape(t[:1].upper() + t[1:])
                rx = re.sub(r"\\\{(?:X|clause|kinds)\\\}", "(?P<X>.+?)", rx, count=1)
                rx = re.sub(r"\\\{\w+\\\}", ".+?", rx)
                out.append((len(re.sub(r"\{\w+\}", "", t)), name, kind, re.compile(f"^{rx}$", re.IGNORECASE)))
    return tuple((name, kind, pat) for _, name, kind, pat in sorted(out, key=lambda r: -r[0]))


def parse(question: str) -> list[tuple[str, str, str]]:
    """(intent, kind, the words in the concept's slot) of every template the question fits, most literal first; a
    rewrite that added the conversation's focus ("How much does the plan cost in IBM Cloud?") is read without it."""
    q = " ".join(question.split())
    found = [(name, kind, (m.groupdict().get("X") or "")) for name, kind, pat in _patterns() if (m := pat.match(q))]
    if not found and (i := q.rfind(f" {CONTEXT} ")) > 0 and q.endswith("?"):
        return parse(q[:i] + "?")
    return found


def standalone(offer: Offer, variant: int = 0) -> str | None:
    """The follow-up's rewrite: its full form."""
    return render(offer, "full", variant)


def is_yesno(question: str, offer: Offer) -> bool:
    """The rendered question is one of its intent's yes/no forms ("Is there a limit on it?")."""
    intent = lexicon().intents[offer.intent]
    return any(fill(t, offer, p) == question for t in intent.yesno_forms for p in (False, True))


@rule("forms")
def slots_filled(question: str, offer: Offer) -> bool:
    """Every slot has a value: "How do I {V} the bucket?" is no question."""
    return "{" not in question and "}" not in question


@rule("forms")
def asks(question: str, offer: Offer) -> bool:
    """A question ends in one question mark and has 3-18 words: "What about?" is not one."""
    n = len(question.split())
    return question.endswith("?") and question.count("?") == 1 and 3 <= n <= 18


@rule("forms")
def no_echo(question: str, offer: Offer) -> bool:
    """No word twice in a row, a comparison compares two things ("How does the fee compare to the fee?") and a
    clause does not name its own subject again ("Why did the service choose the service?")."""
    ws = re.findall(r"[\w'-]+", question.lower())     # words, not tokens: a mark stuck to a word hides no repeat
    if any(a == b for a, b in zip(ws, ws[1:])):
        return False
    if offer.clause and re.search(rf"\b{re.escape(offer.concept.text)}\b", offer.clause.rest, re.IGNORECASE):
        return False
    return offer.other is None or offer.other.key != offer.concept.key


@rule("forms")
def not_a_copy(question: str, offer: Offer) -> bool:
    """The question is not its sentence turned around: of its words beyond the concept, at most 80% come from the
    sentence ("Was the bridge designed by Joseph Strauss?" copies "It was designed by Joseph Strauss.")."""
    cw = set(content_words(question)) - set(words(offer.concept.text))
    if offer.other is not None:
        cw -= set(words(offer.other.text))
    if len(cw) < 2:
        return True         # nothing but the concept and the intent's common words
    return len(cw & set(words(offer.sentence))) / len(cw) <= 0.8
