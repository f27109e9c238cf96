"""Stage 1, concepts: the salient noun phrases of a passage, weighted against the corpus.

A concept is a noun phrase of the passage (spaCy noun chunks, trimmed by the ``concepts`` rules) that names
something a person could ask about: "annual fee", "object storage", "the Treaty of Paris". It does not need a title
or a proper name, so forums, tickets and manuals get concepts too. Its weight (:func:`weights`) is TF-IDF-like:
the mean corpus idf of its words times (1 + ln of its mentions in the passage), plus a bonus when the passage's title
names it and when other shown passages mention it (a concept of the cluster, not of one passage: c-TF-IDF).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from agents.synth.offline.lexicon import lexicon, rule, rules
from agents.synth.offline.nlp import code_like, sentence_spans
from agents.synth.text import words

MAX_WORDS = 4


@dataclass(frozen=True)
class Concept:
    """A concept as the passage writes it. ``text``: the phrase without determiners (proper names keep their
    capitals and a "the" that belongs to them); ``key``: lower-cased lemmas, the identity used to compare
    concepts across passages and turns; ``head``: the head noun's lemma."""
    text: str
    key: str
    head: str
    plural: bool
    proper: bool
    article: str        # "the" or "" (a mass noun or a name without one): how a form names it
    person: bool = False
    named: bool = False     # a named place, person, group or event (spaCy entity of the head)

    @property
    def said(self) -> str:
        """The concept as a question names it ("the annual fee", "insurance", "IBM Cloud")."""
        return f"{self.article} {self.text}".strip()


def same(a: Concept, b: Concept) -> bool:
    """One concept, named in full or shorter: same key, or one's key words inside the other's with the same head
    ("annual fee" / "fee")."""
    if a.key == b.key:
        return True
    if a.head != b.head:
        return False
    wa, wb = set(a.key.split()), set(b.key.split())
    return wa <= wb or wb <= wa


@rule("concepts")
def trim_edges(tokens: list) -> list:
    """Determiners, quantifiers and vague adjectives leave the phrase: "these other annual fees" -> "annual fees"."""
    drop = lexicon().edge_drop
    while tokens and ((tokens[0].lower_ in drop and not _in_name(tokens[0]))
                      or tokens[0].pos_ in ("DET", "PRON", "NUM", "PUNCT", "ADV") or tokens[0].tag_ == "POS"):
        tokens = tokens[1:]
    while tokens and (tokens[-1].pos_ == "PUNCT" or tokens[-1].tag_ == "POS"):
        tokens = tokens[:-1]
    return tokens


def _in_name(t) -> bool:
    """A capitalised word of a name: "New" of "New York", "Great" of "the Great Wall" (not "New" of "New features
    include ...": an adjective that starts a sentence)."""
    return t.text[:1].isupper() and t.pos_ == "PROPN" and (t.i + 1 < len(t.doc) and t.doc[t.i + 1].pos_ == "PROPN")


@rule("concepts")
def no_vague_head(tokens: list) -> list:
    """A phrase whose head names nothing alone is no concept: "the way", "a number", "this section" (a noun before
    it makes it one: "bucket names")."""
    if not tokens:
        return tokens
    head = tokens[-1]
    specific = any(t.dep_ == "compound" and t.pos_ in ("NOUN", "PROPN") for t in tokens[:-1])
    if not specific and (head.lemma_.lower() in lexicon().generic_heads or head.lower_ in lexicon().generic_heads):
        return []
    if head.pos_ not in ("NOUN", "PROPN") or not head.text[:1].isalpha():
        return []
    return tokens


@rule("concepts")
def no_date_or_number(tokens: list) -> list:
    """A day, a month or an amount is an answer, not a concept: "March" of "In March 2015 ..." is not asked about
    (nor compared: no "How does March compare to the wall?"); "the 1960s" or "the summer festival" still are."""
    head = tokens[-1] if tokens else None
    if head is not None and (head.ent_type_ in _AMOUNT_ENTS or (
            head.ent_type_ in ("DATE", "TIME") and head.lower_ in lexicon().calendar_words)):
        return []
    return tokens


_AMOUNT_ENTS = ("CARDINAL", "ORDINAL", "PERCENT", "MONEY", "QUANTITY")


@rule("concepts")
def short_enough(tokens: list) -> list:
    """A concept is what a person types: at most 4 words, no number, identifier or half of a hyphenated word ("the
    custom resolver f1aba936b942", "the CLI plug" of "plug-in" are dropped)."""
    if len(tokens) > MAX_WORDS or any(t.like_url or t.like_email or (t.like_num and not _in_name(t)) for t in tokens):
        return []
    if any(not any(c.isalpha() for c in t.text) or code_like(t.text) for t in tokens):
        return []           # (a path, a placeholder or markup: "deployments/:deployment_id")
    if any(len(t.text) >= 8 and any(c.isdigit() for c in t.text) for t in tokens):
        return []           # an identifier ("f1aba936b94213e5") is looked up, not asked about
    last = tokens[-1]
    if last.i + 1 < len(last.doc) and last.doc[last.i + 1].text in ("-", "‑") and not last.doc[last.i + 1].whitespace_:
        return []           # cut before a hyphen: "the CLI plug" of "the CLI plug-in"
    return tokens


def _keeps_case(t) -> bool:
    """A name keeps its capitals; a sentence's first word only when the passage never writes it in lower case
    ("Bucket names must be unique ... a bucket" -> "bucket names"; "Rachel dates ..." keeps "Rachel")."""
    if t.text.isupper() and len(t.text) > 1:
        return True
    if t.is_sent_start or t.i == t.sent.start:
        return (t.pos_ == "PROPN" or bool(t.ent_type_)) and t.lower_ not in _lowercase_words(t.doc)
    return True             # inside a sentence a word is written as it is meant ("an English mathematician")


_LOWER: dict[int, frozenset[str]] = {}


def _lowercase_words(doc) -> frozenset[str]:
    """The words a passage writes in lower case somewhere (kept for the last few parsed passages)."""
    key = id(doc)
    if key not in _LOWER:
        if len(_LOWER) > 64:
            _LOWER.clear()
        _LOWER[key] = frozenset(t.text for t in doc if t.text.islower())
    return _LOWER[key]


def gerund_concept(verb, obj: Concept, written: str) -> Concept:
    """An activity as a concept: "Deleting a bucket takes a few minutes." -> "deleting a bucket"."""
    return Concept(f"{verb.lower_} {written}", f"{verb.lemma_.lower()} {obj.key}", obj.head, False, False, "")


def concept_of(chunk) -> Concept | None:
    """The concept a noun chunk names, after the ``concepts`` rules; None when a rule rejects it."""
    tokens = list(chunk)
    for r in rules("concepts"):
        tokens = r(tokens)
        if not tokens:
            return None
    head = chunk.root if any(t.i == chunk.root.i for t in tokens) else tokens[-1]    # "University" of "University of
    proper = head.pos_ == "PROPN"                                                   # New York", not "York"
    keep = [_keeps_case(t) for t in tokens]
    if len(tokens) > 1 and keep[1] and tokens[1].text[:1].isupper() and tokens[0].text[:1].isupper():
        keep[0] = True      # a name's first word at a sentence's start: "Object Storage is ..." (not "object Storage")
    text = " ".join(t.text if k else t.lower_ for t, k in zip(tokens, keep))
    text = text.replace(" - ", "-").replace(" '", "'")
    if not any(ch.isalpha() for ch in text) or len(text) < 3:
        return None
    first = chunk[0]
    article = "the" if proper and first.lower_ == "the" else ""
    key = " ".join(t.lemma_.lower() for t in tokens)
    plural = head.tag_ in ("NNS", "NNPS")
    person = head.ent_type_ == "PERSON" or head.lower_ in lexicon().people_heads
    named = head.ent_type_ in ("PERSON", "GPE", "LOC", "NORP", "ORG", "EVENT", "FAC", "WORK_OF_ART")
    return Concept(text=text, key=key, head=head.lemma_.lower(), plural=plural, proper=proper, article=article,
                   person=person, named=named)


@dataclass(frozen=True)
class Mentions:
    """A passage's concepts with their mention counts and the index of the first sentence naming each."""
    concepts: tuple[Concept, ...]
    counts: dict[str, int]
    first: dict[str, int]
    bare: frozenset[str]        # keys written without a determiner in a sentence (a mass noun: "insurance")


_NAME_ENTS = ("ORG", "FAC", "WORK_OF_ART", "EVENT", "LAW", "PRODUCT", "GPE", "LOC")


def entity_of(t):
    """The named entity span that holds token ``t`` (None outside one)."""
    return next((e for e in t.doc.ents if e.start <= t.i < e.end), None)


def whole_name(chunk):
    """A noun chunk cut inside a name takes the whole name: "University" of "University of New York" (an
    organisation the parser names whole) is that university, not "University"."""
    doc = chunk.doc
    ent = entity_of(chunk.root)
    if ent is None or ent.label_ not in _NAME_ENTS or ent.end <= chunk.end or ent.start < chunk.start:
        return chunk
    tail = doc[chunk.end:ent.end]
    if tail[-1].pos_ != "PROPN" or any(t.pos_ not in ("PROPN", "ADP", "DET", "CCONJ") for t in tail):
        return chunk        # (the small model's entity can run on: "The Second World War ended in")
    return doc[chunk.start:ent.end]


@lru_cache(maxsize=4096)
def mentions(text: str) -> Mentions:
    """The concepts of a passage (cached by text)."""
    found: dict[str, Concept] = {}
    counts: dict[str, int] = {}
    first: dict[str, int] = {}
    bare: dict[str, int] = {}       # singular uses without a determiner in a sentence with a subject
    det: dict[str, int] = {}        # uses with a determiner or a possessive
    indefinite: set[str] = set()    # written with "a"/"an" somewhere: countable
    for i, sent in enumerate(sentence_spans(text)):
        prose = any(t.dep_ in ("nsubj", "nsubjpass", "csubj", "expl") for t in sent)
        for chunk in sent.noun_chunks:
            c = concept_of(whole_name(chunk))
            if c is None:
                continue
            found.setdefault(c.key, c)
            counts[c.key] = counts.get(c.key, 0) + 1
            first.setdefault(c.key, i)
            if chunk[0].pos_ in ("DET", "PRON") or chunk[0].tag_ == "PRP$":
                det[c.key] = det.get(c.key, 0) + 1
                if chunk[0].lower_ in ("a", "an"):
                    indefinite.add(c.key)
            elif prose and chunk.root.tag_ not in ("NNS", "NNPS") and not _numbered(chunk):
                bare[c.key] = bare.get(c.key, 0) + 1
    out = []
    for key, c in found.items():
        if not c.plural and _takes_the(c.proper, bare.get(key, 0), det.get(key, 0), key in indefinite):
            c = Concept(c.text, c.key, c.head, c.plural, c.proper, "the", c.person, c.named)
        out.append(c)
    return Mentions(tuple(out), counts, first, frozenset(bare))


def _numbered(chunk) -> bool:
    """A noun before its number or identifier goes without an article: "version 2.0", "step 3"."""
    if chunk.end >= len(chunk.doc):
        return False
    nxt = chunk.doc[chunk.end]
    return nxt.like_num or any(ch.isdigit() for ch in nxt.text)


def _takes_the(proper: bool, bare: int, det: int, indefinite: bool) -> bool:
    """How a question names a singular concept: a common noun takes "the" unless the passage writes it bare in
    its sentences more often than with a determiner, and never with "a" ("insurance", "data"); a name takes
    "the" when the passage writes it with one as often as without or more ("the SDK", "the Nile"; "IBM Cloud")."""
    if proper:
        return det > 0 and det >= bare
    return indefinite or det >= bare


DEFAULT_IDF = 2.0       # a word the corpus idf table leaves out is common (idf below its floor)
TITLE_BONUS = 1.0
SHARED_BONUS = 1.0      # per other shown passage that mentions the concept (up to 3)


def weights(text: str, title: str, idf: dict[str, float], others: list[str] = ()) -> dict[str, float]:
    """key -> salience of each concept of the passage ``text`` (see the module docstring). ``others``: the other
    shown passages' texts."""
    m = mentions(text)
    title_words = set(words(title))
    title_words |= {w[:-1] for w in title_words if w.endswith("s")}
    other_keys = [set(mentions(o).counts) for o in others]
    out = {}
    for c in m.concepts:
        ws = words(c.text)
        if not ws:
            continue
        rarity = sum(min(idf.get(w, DEFAULT_IDF), 8.0) for w in ws) / len(ws)
        w = rarity * (1.0 + math.log(m.counts[c.key])) + 0.3 * min(len(ws) - 1, 2)
        if title_words and (set(ws) <= title_words or set(c.key.split()) <= title_words):
            w += TITLE_BONUS
        w += SHARED_BONUS * min(3, sum(c.key in k for k in other_keys))
        w -= 0.1 * m.first[c.key]
        out[c.key] = w
    return out


LEAD_WORDS = 60         # a passage's lead: what a reader sees first (a search snippet, a first paragraph)


@lru_cache(maxsize=4096)
def lead(text: str, title: str = "") -> frozenset[str]:
    """The words of a passage's lead, as lemmas and as written (lower case): its title and its first ``LEAD_WORDS``
    words."""
    from agents.synth.offline.nlp import passage_doc
    out: set[str] = set(words(title))
    n = 0
    for t in passage_doc(text):
        if t.is_punct or t.is_space:
            continue
        n += 1
        if n > LEAD_WORDS:
            break
        out |= {t.lemma_.lower(), t.lower_}
    return frozenset(out)


def in_lead(c: Concept, text: str, title: str = "") -> bool:
    """The passage names the concept in its :func:`lead`: every word of it, as lemma or as written. A long manual
    page that opens on "Creating a bucket" is about buckets; a "retention period" first named 200 words down is one
    of its details."""
    words_of_lead = lead(text, title)
    return all(w in words_of_lead for w in c.key.split()) or all(w in words_of_lead for w in words(c.text))


def top(text: str, title: str = "", idf: dict[str, float] | None = None) -> Concept | None:
    """The passage's most salient concept (None for a passage with none)."""
    w = weights(text, title, idf or {})
    m = mentions(text)
    if not w:
        return None
    best = max(m.concepts, key=lambda c: (w.get(c.key, -1e9), -m.first[c.key], c.key))
    return best


def find(text: str, key: str) -> Concept | None:
    """The passage's concept with ``key`` (None when it does not mention it)."""
    return next((c for c in mentions(text).concepts if c.key == key), None)
