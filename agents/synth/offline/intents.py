"""Stage 2, intents: what each sentence of a passage offers about a concept.

An :class:`Offer` is (intent, concept, sentence): "this sentence says how much the annual fee costs". The intents and
their cues are data (``[intents.*]`` in ``lexicon.toml``: definition, purpose, procedure, cause, risk, cost, limit,
requirement, time, duration, comparison, advice, example, location, agent, and an overview fallback). A sentence
offers an intent when one of its cues matches (a pattern or a named-entity label) and the ``intents`` rules find the
concept it is about and the parts the intent's forms need (a verb for a procedure, a clause for *when*/*why*, the
agent of a passive for *who*, a second concept for a comparison). The answer to the question is that sentence with
its supporting context (:mod:`.checks`), never a span cut out of it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from agents.synth.offline.concepts import (Concept, concept_of, entity_of, gerund_concept, mentions, same,
                                          whole_name)
from agents.synth.offline.lexicon import Intent, lexicon, rule, rules
from agents.synth.offline.nlp import english, main_root, pointer, prose, sentence_spans, subordinate

MIN_TOKENS, MAX_TOKENS = 5, 80
OVERVIEW_CONCEPTS = 3       # concepts of a passage that get an overview offer (the fallback intent)


@dataclass(frozen=True)
class Clause:
    """A sentence's clause around its subject, to ask *when*/*why* of it: ``kind`` passive ("was X founded"),
    copula ("is X expensive"), active ("did X release the app") or modal ("can X hold more")."""
    kind: str
    past: bool
    verb: str           # participle, adjective, base form
    rest: str = ""
    modal: str = ""


@dataclass(frozen=True)
class Offer:
    intent: str
    concept: Concept
    sent_index: int
    sentence: str
    negated: bool = False
    verb: str = ""
    clause: Clause | None = None
    active: str = ""        # a passive's verb in the active voice, in the sentence's tense ("Who {active} X?")
    other: Concept | None = None


@dataclass
class Sentence:
    """What the rules see of one sentence: its span, the passage's concepts it mentions (chunk root index ->
    concept) and its subject concept."""
    span: object
    index: int
    concepts: dict
    subject: Concept | None
    subject_token: object | None


def _chunks(span, by_key: dict[str, Concept]) -> dict[int, Concept]:
    out = {}
    for chunk in span.noun_chunks:
        c = concept_of(whole_name(chunk))
        if c is not None:
            out[chunk.root.i] = by_key.get(c.key, c)
    return out


def _subject(span, concepts: dict[int, Concept], previous: Concept | None, main: Concept | None):
    root = main_root(span)
    for t in root.children:
        if t.dep_ == "csubj" and t.tag_ == "VBG":
            obj = next((c for c in t.children if c.dep_ == "dobj" and c.i in concepts), None)
            if obj is not None:     # the object up to its first conjunct (a second activity is not its name)
                end = min([k.i for k in obj.children if k.dep_ in ("cc", "conj") and k.i > obj.i]
                          or [max(x.i for x in obj.subtree) + 1])
                written = span.doc[min(x.i for x in obj.subtree):end].text
                return gerund_concept(t, concepts[obj.i], written), t
    for t in root.children:
        if t.dep_ in ("nsubj", "nsubjpass"):
            if t.i in concepts:
                return concepts[t.i], t
            if t.lower_ in lexicon().anaphors and t.lower_ not in ("he", "she"):
                ref = previous or main
                return (ref, t) if ref is not None else (None, None)
    return None, None


def _negated(span) -> bool:
    return any(t.dep_ == "neg" or t.lower_ in ("no", "never", "cannot") for t in span)


def _sure(ent) -> bool:
    """An entity the parser often guesses is taken when the text says so: an amount of money names its currency
    ("$95", "95 dollars"; not a number after "#", which the parser may read as money)."""
    if ent.label_ != "MONEY":
        return True
    lex = lexicon()
    sign = ent.doc[ent.start - 1].text if ent.start > 0 else ""
    return any(c in lex.currency_signs for c in sign + ent.text) or any(t.lower_ in lex.currency_words for t in ent)


def cue_at(intent: Intent, s: Sentence) -> int | None:
    """The character offset (in the sentence) of the intent's first cue, None without one."""
    found = [e.start_char - s.span.start_char for e in s.span.ents if e.label_ in intent.ents and _sure(e)]
    for pat in intent.cues:
        if "{X}" in pat.pattern:
            if _defines(intent, s):
                found.append(0)
        elif m := pat.search(s.span.text):
            found.append(m.start())
    return min(found) if found else None


@rule("intents")
def cue(intent: Intent, s: Sentence) -> bool:
    """The sentence carries one of the intent's cues: "The annual fee is $95." -> cost (a money entity)."""
    return cue_at(intent, s) is not None


@rule("intents")
def affirmed(intent: Intent, s: Sentence) -> bool:
    """A negated sentence offers only a limit, a requirement, a risk, advice or a fix: "Funds cannot be used for
    new construction." answers no "What are funds used for?"."""
    return intent.negated_ok or not _negated(s.span)


@rule("intents")
def a_case_of_now(intent: Intent, s: Sentence) -> bool:
    """A problem to fix is one someone has: "My laptop won't connect." or "My laptop stopped connecting." offer a
    fix; "The boycott movement began to fail by 1770." is history and offers none."""
    if not intent.now:
        return True
    root = s.span.root
    past = root.tag_ == "VBD" or any(k.dep_ in ("aux", "auxpass") and k.tag_ == "VBD" for k in root.children)
    return not past or any(t.lower_ in lexicon().own_words for t in s.span)


def _defines(intent: Intent, s: Sentence) -> bool:
    """The sentence opens with its subject and defines it ("X is a ...", the intent's ``{X}`` cue)."""
    subj = s.subject_token
    if subj is None:
        return False
    lo = min(t.i for t in subj.subtree) - s.span.start
    hi = max(t.i for t in subj.subtree) - s.span.start + 1
    written = s.span[lo:hi].text
    for p in intent.cues:
        if "{X}" in p.pattern:
            pat = re.compile(p.pattern.replace("{X}", re.escape(written)), re.IGNORECASE)
            if pat.search(s.span[lo:].text):
                return True
    return False


def people_ok(intent: Intent, target: Concept) -> bool:
    """A person, a group of people or a named place or event is asked about, not fixed, priced or timed: no "How
    do I fix the support agent?", no "What does India cost?"."""
    lex = lexicon()
    return (not target.person or intent.name in lex.people_intents) and (
        not target.named or intent.name in lex.named_intents)


@rule("intents")
def states_a_number(intent: Intent, s: Sentence) -> bool:
    """A cost, a limit or a duration is a number: "Bucket names can contain up to 63 characters." offers a limit;
    "Use the limits page to check usage." does not."""
    return not intent.needs_number or any(t.like_num or t.ent_type_ in ("MONEY", "QUANTITY", "PERCENT", "CARDINAL", "TIME")
                                          for t in s.span)


def a_problem(intent: Intent, target: Concept, s: Sentence) -> bool:
    """A fix is asked of a problem: a concept that names one ("What can I do about low F1 scores?") or the subject the
    sentence says is failing ("My laptop won't connect." -> "How do I fix my laptop?"); never of what a sentence about
    an error merely names ("The response code is 404 when an error occurs." offers no "How do I fix the response
    code?")."""
    if not intent.problem:
        return True
    lex = lexicon()
    if set(target.key.split()) & lex.problem_words:
        return True
    if target is not s.subject or s.subject_token is None:
        return False
    root = s.span.root          # the failure is said of the subject: its verb, from after the subject on
    return s.subject_token.i < root.i and bool(lex.failing.search(s.span.doc[s.subject_token.i + 1:root.i + 2].text))


def in_main_clause(intent: Intent, target: Concept, s: Sentence) -> bool:
    """A risk or a limit is said in the main clause, or a condition of it, of a concept of that clause: "Strange was
    a neurosurgeon before nerve damage impaired his hands." offers no risk of Strange; "If you exceed 100 requests a
    minute, requests are throttled." offers a limit on requests."""
    if not intent.main_clause:
        return True
    root, at = main_root(s.span), cue_at(intent, s)
    cue = None if at is None else next((t for t in s.span if t.idx - s.span.start_char >= at), None)
    where = next((s.span.doc[i] for i, c in s.concepts.items() if c is target), None)
    return not any(t is not None and subordinate(t, root) for t in (cue, where))


def no_tautology(intent: Intent, target: Concept) -> bool:
    """A concept named by the intent's own cue is not asked with it: no "Is there a limit on the limit increase?"
    nor "What are the risks of the damage?". An intent with forms for such a concept (lexicon ``cue_named``) asks
    those, of a concept with a word besides its cue words (:meth:`~agents.synth.offline.lexicon.Intent.cue_names`)."""
    if not intent.cue_names(target.text):
        return True
    return bool(intent.cue_named) and any(not intent.cue_names(w) for w in target.text.split())


@rule("intents")
def about_subject(intent: Intent, s: Sentence) -> bool:
    """An intent that is said of the subject needs one: "It was founded in 1901." is about the passage's subject;
    "In 1901, a fire broke out." offers no *when* about a concept."""
    return not intent.subject or s.subject is not None


def _target(intent: Intent, s: Sentence) -> Concept | None:
    """The concept the intent is about: the subject, or (``about`` after_cue / before_cue) the concept nearest the
    cue on that side ("The agent recommended reinstalling the VPN client" -> advice about the VPN client)."""
    if intent.about != "subject":
        at = cue_at(intent, s) or 0
        spans = [(s.span.doc[i].idx - s.span.start_char, c) for i, c in s.concepts.items()]
        side = [(off, c) for off, c in spans if (off > at if intent.about == "after_cue" else off < at)]
        if side:
            return (min if intent.about == "after_cue" else max)(side, key=lambda t: t[0])[1]
    if s.subject is not None:
        return s.subject
    if intent.subject:
        return None
    return next(iter(s.concepts.values()), None)


def _procedure(s: Sentence) -> tuple[str, Concept] | None:
    """(verb, object concept) of an instruction's goal: "To rename a skill, open ..." / "Click Delete to remove the
    bucket." / "You can export the report as CSV." -> ("rename", skill) / ("remove", bucket) / ("export", report);
    the interface step itself ("click", "select") is no goal."""
    lex = lexicon()
    for t in s.span:
        if t.pos_ != "VERB" or t.tag_ != "VB" or t.lemma_.lower() in lex.interface_verbs | lex.light_verbs:
            continue        # a step ("click Save") or a light verb ("take advantage") is not a goal
        to_inf = any(c.dep_ == "aux" and c.lower_ == "to" for c in t.children)
        imperative = t.dep_ == "ROOT" and not any(c.dep_.startswith("nsubj") for c in t.children)
        you = any(c.dep_ == "nsubj" and c.lower_ == "you" for c in t.children) or (
            t.head.i != t.i and any(c.dep_ == "nsubj" and c.lower_ == "you" for c in t.head.children))
        if not (to_inf or imperative or you):
            continue
        for c in t.children:
            if c.dep_ == "dobj" and c.i in s.concepts:
                prt = " ".join(p.lower_ for p in t.children if p.dep_ == "prt")
                return (f"{t.lemma_.lower()} {prt}".strip(), s.concepts[c.i])
    return None


_ANCHORS = {"date": ("DATE",), "place": ("GPE", "LOC", "FAC")}


def _time_span(k) -> bool:
    """The verb's dependent ``k`` states a span of time: a number and a unit, after "for", "within" or "over", or
    as what "take" or "last" governs ("kept for 30 days", "takes a few minutes"; not "covers the last 12 months")."""
    lex = lexicon()
    if not ((k.dep_ == "prep" and k.lower_ in lex.span_preps) or k.dep_ == "npadvmod"
            or (k.dep_ == "dobj" and k.head.lemma_.lower() in lex.span_verbs)):
        return False
    sub = list(k.subtree)
    return any(t.lemma_.lower() in lex.duration_units for t in sub) and any(
        t.like_num or t.lower_ in lex.span_counts for t in sub)


def _anchored(root, anchor: str) -> bool:
    """The verb has a complement of the anchor's kind: a date ("opened in 1937"), a place ("originated in the
    Andes") or a span of time said of the subject ("Backups are kept for 30 days"; not "Write the 30-day report")."""
    if not anchor:
        return True
    if anchor == "span":
        return any(k.dep_ not in ("nsubj", "nsubjpass", "csubj") and _time_span(k) for k in root.children)
    labels = _ANCHORS[anchor]
    return any(t.ent_type_ in labels and not _recurring(t) for k in root.children
               if k.dep_ in ("prep", "npadvmod", "advmod", "agent") for t in k.subtree)


def _recurring(t) -> bool:
    """A date that recurs is no time to ask "when" about: "each month", "per year", "every day", "monthly"."""
    ent = entity_of(t)
    first = (ent[0] if ent is not None else t).lower_
    return first in lexicon().recurring_date_words or (ent is not None and len(ent) == 1 and first.endswith("ly"))


def _clause(s: Sentence, anchor: str = "") -> Clause | None:
    """The clause around the subject: "The bridge was opened in 1937." -> passive "opened"."""
    root = s.span.root
    if s.subject is None or root.pos_ not in ("VERB", "AUX") or _negated(s.span) or not _anchored(root, anchor):
        return None
    kids = list(root.children)
    past = root.tag_ in ("VBD", "VBN") and not any(k.lower_ in ("is", "are", "has", "have") for k in kids)
    auxpass = [k for k in kids if k.dep_ == "auxpass"]
    prt = " ".join(k.lower_ for k in kids if k.dep_ == "prt")
    modal = next((k.lower_ for k in kids if k.tag_ == "MD"), "")
    if auxpass and modal:       # "can be used for 30 days" -> "can the plan be used"
        return Clause("modal", False, f"be {root.lower_} {prt}".strip(), "", modal)
    if auxpass:
        past = auxpass[0].lower_ in ("was", "were")
        return Clause("passive", past, f"{root.lower_} {prt}".strip())
    if anchor == "span":        # the span is what is asked: "How long are backups kept?", not "... kept 30 days?"
        kids = [k for k in kids if not _time_span(k)]
    if root.lemma_ == "be":
        adj = [k for k in kids if k.dep_ == "acomp" and k.pos_ == "ADJ" and not list(k.children)]
        return Clause("copula", root.lower_ in ("was", "were"), adj[0].lower_) if adj else None
    if root.tag_ == "VBN" and not any(k.dep_ in ("aux", "auxpass") for k in kids):
        return None         # a participle without its auxiliary is a caption or a list entry: "University X founded in 1998"
    rest = _object(root, kids)
    if rest is None or root.tag_ not in ("VBD", "VBZ", "VBP", "VB", "VBN"):
        return None
    return Clause("modal" if modal else "active", past and not modal, f"{root.lemma_.lower()} {prt}".strip(), rest,
                  modal)


def _object(root, kids) -> str | None:
    """The words a clause keeps after its verb: a short object ("did X release the app"), the complement of a
    linking verb ("did India become a republic"; "did Berlin become the capital" of "... the capital of a unified
    Germany": the phrase up to its head) and the verb of an infinitive ("did the movement begin to fail"); None
    when the complement is too long to ask with or a pronoun ("When did India become?" says nothing)."""
    rest = ""
    for k in kids:
        if k.dep_ == "xcomp" and k.pos_ == "VERB":
            rest += " to " + " ".join(t.lower_ for t in [k, *k.children] if t is k or t.dep_ == "prt")
        elif k.dep_ in ("dobj", "attr", "acomp", "oprd"):
            toks = [t for t in k.subtree if t.i <= k.i]     # the phrase up to its head: "the capital" (of ...)
            if len(toks) > 4 or any(t.pos_ == "PRON" or t.ent_type_ == "DATE" for t in toks):
                return None
            rest += " " + " ".join(t.text if t.pos_ == "PROPN" else t.lower_ for t in toks)
    if not rest and root.lemma_.lower() in lexicon().linking_verbs:
        return None
    return rest


def _agent(s: Sentence) -> str:
    """A passive's verb in the active voice and the sentence's tense, when its agent is a person or organisation:
    "The company was founded by Ada Park." -> "founded" (for "Who founded the company?"); "The project is managed by
    a foundation." -> "manages" (for "Who manages the project?")."""
    root = s.span.root
    kids = list(root.children)
    aux = next((k for k in kids if k.dep_ == "auxpass"), None)
    if aux is None:
        return ""
    agent = next((k for k in kids if k.dep_ == "agent"), None)
    if agent is None or not any(t.ent_type_ in ("PERSON", "ORG") for t in agent.subtree):
        return ""
    if any(k.dep_ == "aux" and k.tag_ == "MD" for k in kids):
        return ""           # "can be managed by": who may, not who does
    if aux.tag_ in ("VBZ", "VBP") and not any(k.dep_ == "aux" for k in kids):
        return third_person(root.lemma_.lower())
    irregular = lexicon().irregular_past
    return irregular.get(root.lower_) or irregular.get(root.lemma_.lower()) or root.lower_


def third_person(lemma: str) -> str:
    """The present tense after "who": "manage" -> "manages", "publish" -> "publishes", "fly" -> "flies"."""
    if lemma in lexicon().irregular_present:
        return lexicon().irregular_present[lemma]
    if lemma.endswith(("s", "sh", "ch", "x", "z")):
        return lemma + "es"
    if lemma.endswith("y") and len(lemma) > 1 and lemma[-2] not in "aeiou":
        return lemma[:-1] + "ies"
    return lemma + "s"


def _other(intent: Intent, target: Concept, s: Sentence) -> Concept | None:
    """The second concept of a comparison: the first one after the cue ("... higher than what the stock market
    returns" -> the stock market)."""
    at = cue_at(intent, s) or 0
    after = sorted((s.span.doc[i].idx - s.span.start_char, c) for i, c in s.concepts.items())
    return next((c for off, c in after if off > at and not same(c, target) and not c.person), None)


def sentence_offers(s: Sentence) -> list[Offer]:
    """The offers of one sentence: every intent whose ``intents`` rules pass and whose form parts are found."""
    out = []
    neg = _negated(s.span)
    for intent in lexicon().intents.values():
        if intent.fallback or not all(r(intent, s) for r in rules("intents")):
            continue
        target = _target(intent, s)
        if target is None or not people_ok(intent, target) or not no_tautology(intent, target) \
                or not a_problem(intent, target, s) or not in_main_clause(intent, target, s):
            continue
        extra: dict = {}
        if intent.needs_verb:
            proc = _procedure(s)
            if proc is None:
                continue
            extra["verb"], target = proc
        if intent.needs_clause:
            if target is not s.subject or (extra_clause := _clause(s, intent.anchor)) is None:
                continue
            extra["clause"] = extra_clause
        if intent.needs_agent:
            if not (active := _agent(s)):
                continue
            extra["active"] = active
        if intent.needs_other:
            if (other := _other(intent, target, s)) is None:
                continue
            extra["other"] = other
        out.append(Offer(intent.name, target, s.index, s.span.text, neg, **extra))
    return out


def _has_verb(span) -> bool:
    return any(t.pos_ in ("VERB", "AUX") for t in span)


def mostly_prose(spans, is_prose: list[bool]) -> bool:
    """A passage to ask of is mostly prose: at least half its words are in prose sentences (``is_prose``, one flag
    per span). A passage of code, a schema or a table with one sentence of prose is looked up, not asked about (a
    person asks of what they read)."""
    sizes = [len(s.text.split()) for s in spans]
    return sum(sizes) > 0 and 2 * sum(n for n, ok in zip(sizes, is_prose) if ok) >= sum(sizes)


@lru_cache(maxsize=4096)
def passage_offers(text: str) -> tuple[Offer, ...]:
    """Every offer of a passage, sentence by sentence, then an overview offer for its most mentioned concepts (none
    of a passage that is not in English: :func:`~agents.synth.offline.nlp.english`)."""
    m = mentions(text)
    by_key = {c.key: c for c in m.concepts}
    main = max(m.concepts, key=lambda c: (m.counts[c.key], -m.first[c.key]), default=None)
    out: list[Offer] = []
    previous = None
    spans = sentence_spans(text)
    is_prose = [prose(s) for s in spans]
    if not mostly_prose(spans, is_prose) or not english(text):
        return ()
    # a heading, a label, a code line, a table row or a pointer is no sentence to ask of
    readable = [MIN_TOKENS <= len(s) <= MAX_TOKENS and ok and _has_verb(s) and not pointer(s)
                for s, ok in zip(spans, is_prose)]
    for i, span in enumerate(spans):
        if not readable[i] or span.text.rstrip().endswith(("?", ":")):
            continue
        concepts = _chunks(span, by_key)
        subject, token = _subject(span, concepts, previous, main)
        out.extend(sentence_offers(Sentence(span, i, concepts, subject, token)))
        if subject is not None:
            previous = subject
    seen: set[tuple[str, str]] = set()
    out = [o for o in out if (o.intent, o.concept.key) not in seen and not seen.add((o.intent, o.concept.key))]
    ranked = sorted(m.concepts, key=lambda c: (-m.counts[c.key], m.first[c.key], c.key))
    for c in ranked[:OVERVIEW_CONCEPTS]:
        i = m.first[c.key]
        if i < len(spans) and readable[i]:
            out.append(Offer("overview", c, i, spans[i].text))
    return tuple(out)
