"""Stage 4, discourse: a follow-up refers to the segment's concept and to the previous turn, as people do.

The segment (turn 1 or the hard topic switch, onwards) is read back from its accepted turns (:func:`read`): each
turn's standalone question is one of its gold passage's full forms, so its offer, hence its concept and intent, is
found again without any state of our own. A follow-up on the segment's concept (or the previous turn's) is asked with
a pronoun ("How much does it cost?"), elliptically for a new intent ("What about the risks?"), by a shorter name
("the fee" for "the annual fee") or in full, by the shares of :class:`~agents.synth.config.OfflineConfig`; a
follow-up that keeps the previous intent for a new concept is a shift ("What about the late fee?"). Its rewrite is
the full form: it names the concept the way the conversation did, and adds nothing the conversation did not say; a
follow-up on a new concept leaves the conversation's named focus out when its passage names it, and its rewrite adds
it (:func:`in_context`: "... in IBM Cloud Kubernetes Service?").
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import lru_cache

from agents.synth.config import OfflineConfig
from agents.synth.offline.concepts import Concept, concept_of, mentions, same, whole_name
from agents.synth.offline.forms import CONTEXT, parse, render, templates
from agents.synth.offline.intents import Offer, passage_offers
from agents.synth.offline.lexicon import lexicon, rule
from agents.synth.offline.nlp import main_root, sentence_spans
from agents.synth.text import words


@lru_cache(maxsize=2048)
def full_forms(text: str) -> dict[str, Offer]:
    """Every full form of every offer of a passage -> its offer (the reverse of rendering)."""
    out: dict[str, Offer] = {}
    for o in passage_offers(text):
        for v in range(len(templates(o, "full"))):
            q = render(o, "full", v)
            if q:
                out.setdefault(q, o)
    return out


def offer_of(standalone: str, text: str) -> Offer | None:
    """The offer a standalone question was asked from (None for a question not made from ``text``): one of the
    passage's full forms, or one whose concept the rewrite names the way the conversation did (a longer name with
    the same head: "the Golden Gate Bridge" for the passage's "the bridge")."""
    if not text:
        return None
    hit = full_forms(text).get(standalone.strip())
    if hit is not None:
        return hit
    for intent, kind, slot in parse(standalone):
        said = set(words(slot))
        for o in passage_offers(text) if kind == "full" else ():
            if o.intent == intent and (o.concept.head in said or o.concept.head + "s" in said):
                return o
    return None


@dataclass
class Segment:
    """What a follow-up needs of its segment: the segment's concept, the previous turn's concept and intent, and
    the (intent, concept) pairs asked so far."""
    focus: Concept | None = None
    last: Concept | None = None
    last_intent: str | None = None
    last_question: str = ""        # the previous turn's standalone question
    last_answer: str = ""          # the previous turn's answer
    asked: set[tuple[str, str]] = field(default_factory=set)
    turns: int = 0
    centre: Concept | None = None  # the subject of the previous answer (:func:`answer_subject`)

    def on_thread(self, c: Concept) -> bool:
        return any(x is not None and same(c, x) for x in (self.focus, self.last, self.centre))

    def answered(self, c: Concept) -> bool:
        """The previous answer named ``c`` as written and no other concept with its head, so "the branch" can only
        mean the answer's "Scranton branch"."""
        if not self.last_answer or _spaced(c.text) not in _spaced(self.last_answer):
            return False
        return not any(a.head == c.head and not same(a, c) for a in mentions(self.last_answer).concepts)


@lru_cache(maxsize=4096)
def _spaced(text: str) -> str:
    """The words of ``text`` between spaces, to find a phrase in it word for word."""
    return f" {' '.join(words(text))} "


def read(segment: list[dict]) -> Segment:
    """The :class:`Segment` of the accepted turns ``segment`` ([{standalone_question, gold_text, ...}])."""
    seg = Segment(turns=len(segment))
    for t in segment:
        standalone = t.get("standalone_question") or ""
        if seg.focus is not None and standalone.endswith(tail := f" {CONTEXT} {seg.focus.said}?"):
            standalone = standalone[:-len(tail)] + "?"          # a rewrite that added the conversation's focus
        o = offer_of(standalone, t.get("gold_text") or "")
        if o is None:
            continue
        seg.focus = seg.focus or o.concept
        seg.last, seg.last_intent = o.concept, o.intent
        seg.last_question = (t.get("standalone_question") or "").strip()
        seg.last_answer = t.get("answer") or ""
        seg.centre = answer_subject(seg.last_answer)
        seg.asked.add((o.intent, o.concept.key))
    return seg


@lru_cache(maxsize=2048)
def answer_subject(answer: str) -> Concept | None:
    """The subject of an answer's first sentence: what the next question's pronoun refers to when it names no other
    (the subject of the last thing said is the first antecedent a reader tries). "The east wing opened in 2001 and
    holds modern art." -> the east wing."""
    spans = sentence_spans(answer.removeprefix("Yes. ").removeprefix("No. "))
    if not spans:
        return None
    subj = next((t for t in main_root(spans[0]).children if t.dep_ in ("nsubj", "nsubjpass")), None)
    chunk = next((ch for ch in spans[0].noun_chunks if subj is not None and ch.root.i == subj.i), None)
    return concept_of(whole_name(chunk)) if chunk is not None else None


def _default(key: str) -> float:
    return OfflineConfig.model_fields[key].default


@dataclass(frozen=True)
class Shares:
    """The discourse shares (defaults: :class:`~agents.synth.config.OfflineConfig`'s, the one place to change them)."""
    pronoun: float = _default("pronoun_share")
    ellipsis: float = _default("ellipsis_share")
    short: float = _default("short_share")
    shift: float = _default("shift_share")

    @classmethod
    def of(cls, w: dict) -> "Shares":
        """The shares of an ``OfflineConfig`` dump."""
        return cls(w["pronoun_share"], w["ellipsis_share"], w["short_share"], w["shift_share"])


@dataclass(frozen=True)
class Asked:
    question: str
    standalone: str
    leans: bool         # asked in a form that needs the conversation
    form: str


@rule("discourse")
def named_as_said(offer: Offer, seg: Segment) -> Offer:
    """A rewrite names the concept the way the conversation did: "Where is it located?" about "the bridge" of a
    conversation on "the Golden Gate Bridge" is rewritten "Where is the Golden Gate Bridge located?"."""
    for said in (seg.last, seg.focus):
        if said is not None and same(offer.concept, said):
            if len(said.text.split()) > len(offer.concept.text.split()):
                return replace(offer, concept=said)
            return offer
    return offer


@rule("discourse")
def short_name(offer: Offer, seg: Segment) -> str | None:
    """A concept the conversation named in full (its thread, or the previous answer) is asked by its head: "the
    annual fee" -> "the fee"; never in a definition ("What is a fee?" asks what the word means)."""
    c = offer.concept
    head = c.text.split()[-1]
    if offer.intent == "definition" or c.proper or c.person or len(c.text.split()) < 2 or head in lexicon().generic_heads \
            or not (seg.on_thread(c) or seg.answered(c)):
        return None         # (no "the types" for "rock types": a vague head alone names nothing)
    short = Concept(head, c.head, c.head, c.plural, False, "" if c.plural else "the")
    q = render(Offer(offer.intent, short, offer.sent_index, offer.sentence, offer.negated, offer.verb, offer.clause,
                     offer.active, offer.other), "full")
    return q


_HE = re.compile(r"\b(he|his|him|she|her|hers)\b", re.IGNORECASE)
_AFTER_PREP = re.compile(r"\b(about|for|on|of|to|with|by) it\b")


def _personal(c: Concept, text: str) -> str | None:
    """"he" or "she": the personal pronoun the passage uses after it names the person ``c`` (None when it uses
    none: a name says nothing of how its bearer is referred to)."""
    at = _spaced(text).find(_spaced(c.text))
    m = _HE.search(" ".join(words(text))[max(0, at):]) if at >= 0 else None
    return None if m is None else ("she" if m.group(1).lower() in ("she", "her", "hers") else "he")


def _as_person(question: str | None, he: str) -> str | None:
    """A pronoun form about a thing, said of a person: "Can you tell me more about it?" -> "... about him?"."""
    if question is None:
        return None
    obj, pos = ("him", "his") if he == "he" else ("her", "her")
    q = _AFTER_PREP.sub(lambda m: f"{m.group(1)} {obj}", question)
    q = re.sub(r"\bits\b", pos, q)
    return re.sub(r"\bit\b", he, q)


@rule("discourse")
def in_context(offer: Offer, seg: Segment, text: str) -> str | None:
    """A follow-up on a new concept of a passage that names the conversation's named focus leaves the focus to the
    conversation, as people do; its rewrite adds it: "How do I update a worker node?" after turns on IBM Cloud
    Kubernetes Service, rewritten "How do I update a worker node in IBM Cloud Kubernetes Service?". The focus is a
    name the parser knows as a place, a work or a group, or one of two words or more (not a lone word such as a
    surname, a word written in lower case, a person, a plural such as "the Romans" or an acronym such as "the URI"),
    the concept is none (no "IBM Cloudant in IBM Cloud"), and the gold passage names the focus: the rewrite says
    nothing the passage and the conversation do not."""
    f = seg.focus
    if f is None or not text or f.person or f.plural or not f.proper or offer.concept.proper or offer.concept.named:
        return None         # a name is no part of another ("IBM Cloudant in IBM Cloud")
    lone = " " not in f.text
    if (lone and not f.named) or (lone and f.text.isupper()) or not any(ch.isupper() for ch in f.text):
        return None         # a lone surname, an acronym ("the URI"), a word in lower case: no name to add
    if same(offer.concept, f) or (offer.other is not None and same(offer.other, f)):
        return None
    return f.said if _spaced(f.text) in _spaced(text) else None


@rule("discourse")
def repeats_previous(offer: Offer, seg: Segment) -> int | None:
    """"What about Y?" asks the previous question of another concept, so it is said only when that is all it asks:
    after "How much does the annual fee cost?", "What about the late fee?" for "How much does the late fee cost?",
    never for "When was the late fee introduced?" (a verb the conversation did not say). The form of the previous
    question it repeats (its rewrite is that form: "What should I know about Y?" after "What should I know about
    X?"), or None."""
    if seg.last is None or not seg.last_question:
        return None
    swapped = replace(offer, concept=seg.last)
    return next((v for v in range(len(templates(offer, "full"))) if render(swapped, "full", v) == seg.last_question),
                None)


def ask(offer: Offer, seg: Segment | None, shares: Shares, u: float, variant: int = 0, text: str = "") -> Asked | None:
    """How a person asks ``offer`` at this point of the conversation (``seg`` None: an opening question);
    ``u`` in [0, 1) draws the form by the shares; ``text`` is the offer's passage. None when the offer has no full
    form."""
    full = render(offer, "full", variant)
    if full is None:
        return None
    if seg is None or seg.turns == 0:
        return Asked(full, full, False, "full")
    c = offer.concept
    if seg.on_thread(c):
        full = render(named_as_said(offer, seg), "full", variant) or full
        order = []
        if u < shares.pronoun:
            order = ["pronoun", "ellipsis", "short"]
        elif u < shares.pronoun + shares.ellipsis:
            order = ["ellipsis", "short", "pronoun"]     # (a pronoun only when no other form leans)
        elif u < shares.pronoun + shares.ellipsis + shares.short:
            order = ["short", "ellipsis", "pronoun"]
        for form in order:
            q = None
            if form == "pronoun" and not c.person:
                q = render(offer, "pronoun", variant)
            elif form == "pronoun" and (his := _personal(c, text)):
                q = _as_person(render(offer, "pronoun", variant), his)
            elif form == "ellipsis" and offer.intent != seg.last_intent:
                q = render(offer, "ellipsis", variant)
            elif form == "short":
                q = short_name(offer, seg)
            if q and q != full:
                return Asked(q, full, True, form)
        return Asked(full, full, False, "full")
    if seg.last_intent == offer.intent and offer.intent not in ("overview", "definition") and u < shares.shift \
            and (v := repeats_previous(offer, seg)) is not None:
        q = render(offer, "shift")
        if q:
            return Asked(q, render(offer, "full", v) or full, True, "shift")
    if u < shares.pronoun + shares.ellipsis + shares.short:
        q = short_name(offer, seg)      # "the branch", of the "Scranton branch" the answer just named (else None)
        if q and q != full:
            return Asked(q, full, True, "short")
    ctx = in_context(offer, seg, text)
    if ctx and _spaced(ctx) not in _spaced(full):
        return Asked(full, f"{full[:-1]} {CONTEXT} {ctx}?", True, "context")
    return Asked(full, full, False, "full")
