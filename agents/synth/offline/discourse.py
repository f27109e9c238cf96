"""Conversation discourse for offline follow-ups: the focus of a segment and how a follow-up
refers back to it.

A *segment* is the run of accepted turns since the conversation start or the last hard topic
switch (the questioner passes their standalone questions and answers). Its focus is what its
questions are about: the topic noun phrases of the segment's standalone questions, the most
recent first, plus the named entities of the last answer. A candidate question whose topic
is one of them is *coreferable*; it can be asked the way people ask follow-ups:

* ``pronoun``   - "When was it built?", "Who designed them?", possessive "What was its purpose?"
                  (``the N of {T}`` -> ``its N``);
* ``short``     - a shorter definite description or a surname: "When was the wall built?",
                  "When did Cummings graduate?";
* ``ellipsis``  - the previous question's frame with a new topic: "What about the Great Wall?",
                  or a new attribute of the same topic: "And its population?";
* ``clarify``   - a definitional question about a term the previous answer used: "What do you
                  mean by the Stasi?";
* ``refer``     - any other phrase the segment mentioned (a multiword or proper name, or the
                  focus), replaced by a pronoun in the question (:func:`refer_back`);
* ``explicit``  - the standalone question itself.

The form is drawn with the configured shares (:class:`DiscourseShares`) from a stable hash,
falling back in the order pronoun -> short -> explicit when a form does not apply. The
standalone question is always the resolved form (the rewrite).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from http import HTTPStatus

from agents.synth.config import SynthConfig
from agents.synth.offline.nlp import detokenize, parse
from agents.synth.offline.qgen import _RESTRICT_PREPS, QA, finish, well_formed
from agents.synth.text import content_words, page_name, phrase_pattern, words

SUBJ = {"SING": "it", "PLUR": "they", "PERSON": "he"}
OBJ = {"SING": "it", "PLUR": "them", "PERSON": "him"}
POSS = {"SING": "its", "PLUR": "their", "PERSON": "his"}


@dataclass(frozen=True)
class DiscourseShares:
    """Shares of follow-up forms among coreferable follow-ups (the rest is explicit), and the share
    of follow-ups that may check a fact with a yes/no question (people: about a quarter of the
    MTRAG questions are yes/no)."""
    pronoun: float = 0.42
    short: float = 0.43
    ellipsis: float = 0.1
    yesno: float = SynthConfig.model_fields["offline_yesno_share"].default     # one default, the config's
    request: float = 0.35       # follow-ups about something new inside the context asked as "What about X?"


def norm_np(text: str) -> str:
    t = text.lower().strip()
    t = re.sub(r"^(the|a|an)\s+", "", t)
    return re.sub(r"[^\w\s]", "", t).strip()


def segment_topics(segment: list[dict]) -> list[str]:
    """Noun phrases the segment is about, most salient first: noun chunks of the standalone
    questions (newest first, proper names first) then named entities of the last answer."""
    out: list[str] = []
    f = focus(segment)
    if f:
        out.append(norm_np(f))
    here = _title_topic(segment[-1].get("title") or "") if segment else ""
    if here and norm_np(here) not in out:
        out.append(norm_np(here))       # the page the conversation is on now ("Is it a significant phase ...?")
    for t in reversed(segment):
        doc = parse(t.get("standalone_question") or t.get("question") or "")
        chunks = [c for c in doc.noun_chunks if c.root.lower_ not in ("what", "who", "which", "it", "they", "i",
                                                                       "you", "we", "he", "she")]
        chunks.sort(key=lambda c: (not any(x.pos_ == "PROPN" for x in c), c.start))
        for c in chunks:
            n = norm_np(c.text)
            if n and n not in out:
                out.append(n)
    if segment:
        last = segment[-1].get("answer") or ""
        for e in parse(last[:1500]).ents:
            n = norm_np(e.text)
            if e.label_ not in ("DATE", "CARDINAL", "ORDINAL", "PERCENT", "MONEY", "QUANTITY", "TIME") and n \
                    and n not in out:
                out.append(n)
    return out


def focus(segment: list[dict]) -> str:
    """The segment's focus: the title of its first turn's gold passage (without a disambiguation in brackets) when
    it is a short name, else that passage's most frequent proper name (:func:`main_name`), else the main noun
    phrase of its first standalone question (a proper-name subject or object first, then any proper name, then the
    first noun chunk), as written there ("" when none)."""
    if not segment:
        return ""
    title = _title_topic(segment[0].get("title") or "")
    if title:
        return title
    named = main_name(segment[0].get("gold_text") or "")
    if named:
        return named
    doc = parse(segment[0].get("standalone_question") or "")
    subj = [c for c in doc.noun_chunks if c.root.dep_ in ("nsubj", "nsubjpass", "dobj")
            and c.root.lower_ not in ("what", "who", "which", "it", "they", "i", "you", "we", "he", "she")]
    chunks = [c for c in doc.noun_chunks if c.root.lower_ not in ("what", "who", "which", "it", "they", "i", "you",
                                                                   "we", "he", "she", "how", "many")]
    if not chunks:
        return ""
    best = next((c for c in subj if any(x.pos_ == "PROPN" for x in c)), None) or \
        next((c for c in chunks if any(x.pos_ == "PROPN" for x in c)), chunks[0])
    toks = [t for t in best if not (t.i == best.start and t.pos_ == "DET") and t.lower_ not in _WH]
    text = " ".join(t.text for t in toks)
    det = "the " if best[0].lower_ == "the" else ""
    return det + text


_WH = {"what", "who", "which", "how", "many", "much", "when", "where", "why", "whose"}


def _title_topic(title: str) -> str:
    """A page's title as a topic of the conversation: its name ("Ryan Howard (The Office)" -> "Ryan Howard"), a
    common noun with "the" ("the sickle cell disease"); "" for a long title, a list or a namespace page."""
    title = page_name(detokenize(title))
    if title and len(title.split()) <= 5 and ":" not in title and not title.lower().startswith("list of"):
        tdoc = parse(title)
        return title if any(t.pos_ == "PROPN" for t in tdoc) else "the " + title.lower()
    return ""


_LABELS = {"lesson", "step", "steps", "table", "figure", "chapter", "section", "example", "examples", "note",
           "notes", "important", "optional", "default", "tip", "warning", "caution", "procedure", "overview",
           "task", "tasks", "part", "appendix", "option", "options", "results", "result", "summary", "introduction"}


# the reason phrases of the HTTP status codes ("Bad Request", "Not Found"): an API page's error tables repeat them
_HTTP_PHRASES = frozenset(st.phrase.lower() for st in HTTPStatus)


@lru_cache(maxsize=4096)
def main_name(text: str) -> str:
    """The passage's main name: the proper-noun phrase (2+ letters, at most 5 words) it mentions
    most often, at least twice ("" when none)."""
    if not text:
        return ""
    from collections import Counter
    from agents.synth.offline.nlp import passage_doc
    doc = passage_doc(text)
    counts: Counter = Counter()
    first: dict[str, str] = {}
    for c in doc.noun_chunks:
        toks = [t for t in c if t.pos_ == "PROPN" or (t.pos_ in ("NOUN", "ADJ") and t.text[:1].isupper()
                                                      and t.i != c.sent.start)
                or (t.pos_ == "NUM" and t.text[:1].isupper() and t.i + 1 < c.end and doc[t.i + 1].text[:1].isupper())]
        toks = [t for t in toks if t.i >= c.start]
        if not toks or not any(t.pos_ == "PROPN" for t in toks) or len(toks) > 5:
            continue
        inside = doc[toks[0].i:toks[-1].i + 1]
        # the name as written ("One Piece", "the Seven Years' War"), when only a possessive mark lies inside it
        name = inside.text if all(t in toks or t.tag_ == "POS" for t in inside) else " ".join(t.text for t in toks)
        if len(name) < 3 or not name[:1].isupper() or all(t.lower_ in _LABELS for t in toks):
            continue          # "Lesson", "Step", "Table": document structure, not a subject
        if name.lower() in _HTTP_PHRASES:
            continue          # "400 Bad Request" in an error-code table: a response, not what the page is about
        key = name.lower()
        counts[key] += 1
        first.setdefault(key, name)
    if not counts:
        return ""
    key, n = max(counts.items(), key=lambda kv: (kv[1], len(kv[0].split()), kv[0]))
    return first[key] if n >= 2 else ""


def with_context(question: str, focus_np: str) -> str:
    """The standalone form of a question asked inside the focus's context: the focus added as
    ``in <focus>`` ("How do I create a database?" -> "How do I create a database in IBM
    Cloudant?"), ``for <focus>`` when the question already has an ``in`` phrase, ``during <focus>``
    when the focus is an event or a period (:func:`is_event`: "How many leaders did the government arrest
    during the Quit India Movement?")."""
    return finish(f"{question.rstrip('?')} {context_preposition(question, focus_np)} {focus_np}")


def context_preposition(question: str, focus_np: str) -> str:
    """The preposition that adds ``focus_np`` to ``question`` (:func:`with_context`)."""
    if is_event(focus_np) and not re.search(r"\bduring\b", question, re.IGNORECASE):
        return "during"
    if norm_np(focus_np) in _PLANETS and not re.search(r"\bon\b", question):
        return "on"         # "... on Earth?", "... on Mars?", not "in Earth"
    return "for" if re.search(r"\bin\b", question) else "in"


_PLANETS = {"earth", "mars", "venus", "mercury", "jupiter", "saturn", "uranus", "neptune", "pluto", "moon"}


# heads of phrases that name an event or a period: things that happen "during", not places one is "in"
_EVENT_HEADS = frozenset("""war wars invasion invasions battle battles campaign campaigns revolution rebellion uprising
movement crisis era period age reign restoration occupation outbreak epidemic pandemic election elections olympics
championship championships tournament festival ceremony conference summit expedition depression recession massacre siege
offensive operation genocide holocaust famine strike protests riots coup purge renaissance reformation
enlightenment raj dynasty colonization hurricane storm typhoon cyclone earthquake tsunami eruption flood""".split())
# "rule" is a period only after a people's name ("British rule", "Mughal rule"), not "the firewall rule"
_NAMED_EVENT_HEADS = frozenset({"rule"})
_EVENT_OF = re.compile(r"^(?:the )?(?:(?:battle|siege|invasion|occupation|partition|sack|fall|war|reign|colonization) of|"
                       r"operation|hurricane|typhoon|cyclone|tropical storm) ", re.IGNORECASE)


def is_event(phrase: str) -> bool:
    """``phrase`` names an event or a period: its head (the last word before any ``of``/``in`` phrase, a
    trailing numeral skipped) is one of ``_EVENT_HEADS`` ("World War II", "the Quit India Movement", "the Qing
    dynasty"), or "rule" after a people's name ("British rule"), or it opens with one ("the Battle of Gettysburg",
    "Operation Barbarossa"); not "the Soviet Union in World War II" (a country), "the history of India" nor "the
    firewall rule"."""
    if _EVENT_OF.match(phrase.strip()):
        return True
    raw = re.findall(r"[^\W_]+", phrase)
    for i, w in enumerate(raw):
        if w.lower() in ("of", "in", "for", "on", "at", "from"):
            raw = raw[:i]
            break
    while raw and (raw[-1].isdigit() or re.fullmatch(r"[ivxIVX]+", raw[-1])):
        raw = raw[:-1]
    if not raw:
        return False
    head = raw[-1].lower()
    if head in _NAMED_EVENT_HEADS:
        return len(raw) >= 2 and raw[-2][:1].isupper() and raw[-2].lower() != "the"
    return head in _EVENT_HEADS


def coreferable(qa: QA, topics: list[str]) -> int | None:
    """Salience rank of the segment topic the candidate's topic refers to (None: none)."""
    if not qa.template or not qa.topic:
        return None
    t = norm_np(qa.topic)
    m = re.match(r"^(.+?) of (.+)$", t)
    for i, s in enumerate(topics[:6]):
        if t == s or (m and norm_np(m.group(2)) == s):
            return i
        # the same head with fewer modifiers ("berlin wall" / "wall") only for multiword topics
        if len(s.split()) >= 2 and (t.endswith(" " + s) or s.endswith(" " + t)) and len(t.split()) >= 1:
            return i
    return None


def misrefers(qa: QA, topic: str, text: str) -> bool:
    """``qa``'s subject is a shorter form of segment topic ``topic`` ("the river" of "delaware river") but its passage
    names other things of the kind and not that one ("the Hudson River"): there "the river" is another river, and a
    follow-up asking "it" would refer to the wrong one."""
    t = norm_np(qa.topic or "")
    if not t or t == topic or not topic.endswith(" " + t) \
            or phrase_pattern(topic.split(), possessive=True).search(text):
        return False
    return any(n != topic for n in _names_with_head((qa.topic or "").split()[-1], text))


def _names_with_head(head: str, text: str) -> set[str]:
    """The capitalised names in ``text`` that end with ``head`` ("Hudson River", "Delaware River" for "river"),
    normalised (:func:`norm_np`): the things of that kind the text names."""
    return {norm_np(m.group(0)) for m in re.finditer(rf"(?:(?!The\b)[A-Z][\w'’-]*[ \t]+)+(?i:{re.escape(head)})\b",
                                                     text)}


_JOINERS = {"and", "or", "of", "in", "on", "for", "to", "at", "by", "with", "from", "nor", "but", "versus", "vs"}


def full_name(qa: QA, topics: list[str], text: str, history: str) -> str | None:
    """``qa``'s question with its subject, a shorter form of a segment topic ("the river", "the Empire": the passage's
    wording), replaced by the topic's full name as the passage writes it ("the Hudson River", "the Byzantine Empire"):
    the standalone form of a follow-up names what it asks about. Only where the passage names the topic and no other
    thing with the same head ("the Delaware River" beside "the Hudson River" leaves "the river" as it is); None when
    nothing applies or the result is not well formed."""
    if not qa.template or not qa.topic or "{T}" not in qa.template:
        return None
    t = norm_np(qa.topic)
    full = next((s for s in topics[:6] if len(s.split()) > len(t.split()) and s.endswith(" " + t)
                 and not set(s.split()[:-len(t.split())]) & _JOINERS), None)
    if full is None:
        return None       # (nor is a conjunct or a phrase's object a shorter name of it: "Juliet" is not "Romeo and
                          # Juliet", "Germany" not "the history of Germany")
    ms = list(phrase_pattern(full.split(), possessive=True).finditer(text))
    if not ms:
        return None
    if any(n != full for n in _names_with_head(qa.topic.split()[-1], text)):
        return None       # another thing of the kind: which one "the river" is, the passage does not settle
    found = next((m.group(0) for m in ms if m.group(0)[:1].isupper()), ms[0].group(0))
    name = _as_phrase(re.sub(r"\s+", " ", found), text, history)
    q = finish(qa.template.replace("{T}", name))
    return q if well_formed(q) is None and q != qa.question else None


def _common_noun(word: str) -> bool:
    """``word`` in lower case reads as a common noun ("the flag is here"), not a name."""
    return parse(f"the {word.lower()} is here")[1].tag_ in ("NN", "NNS")


_QUANTIFIERS = {"all", "both", "half", "each", "every", "most", "many", "some", "several", "few", "any"}
_SOME_OR_NONE = _QUANTIFIERS | {"no", "another", "other"}     # how many, or none: no thing of its own
_DETERMINERS = {"a", "an", "another", "this", "that", "these", "those", "such", "no", "one", "other"}


def _pronoun_form(qa: QA) -> str | None:
    kind = qa.topic_kind
    m = re.match(r"^(?:the )?(.+?) of (.+)$", qa.topic, re.IGNORECASE)
    if m:   # "the demolition of the Berlin Wall" -> "its demolition"
        head = m.group(1)
        if head.split()[0].lower() in _QUANTIFIERS | _DETERMINERS:
            return None       # "all ten seasons of Friends": no "their all ten seasons"; "a source of X": no
                              # "their a source"
        if head[:1].isupper():
            # "Flag of France" -> "its flag"; a name ("Federal Republic of Germany") has no possessive form
            if len(head.split()) > 1 or head.isupper() or not _common_noun(head):
                return None
            head = head.lower()
        return qa.template.replace("{T}", f"{POSS['SING' if not m.group(2).lower().endswith('s') else 'PLUR']} "
                                          f"{head}")
    poss = re.search(r"\bthe ((?:\w+ ){0,2}\w+) of \{T\}", qa.template)
    if poss:
        p = POSS[kind] if kind != "PERSON" else {"she": "her", "he": "his"}.get(qa.extra.get("gender"), "their")
        return qa.template.replace(poss.group(0), f"{p} {poss.group(1)}")
    tmpl = qa.template
    if kind == "SING" and qa.topic[:1].isupper() and not qa.topic.lower().startswith(("the ", "a ", "an ")):
        # a name the tagger took for a thing, whose own question says "his" or "her" of it: a person ("Why has
        # Eastwood contributed music to his films?" -> "Why has he ...", not "Why has it ...")
        said = re.findall(r"\b(his|him|himself|her|herself)\b", tmpl, re.IGNORECASE)
        if said:
            return tmpl.replace("{T}", ("him" if qa.topic_role == "obj" else "he") if said[0].lower().startswith("hi")
                                else ("her" if qa.topic_role == "obj" else "she"))
    if kind == "PERSON":
        g = qa.extra.get("gender", "they")
        if g == "they":
            kind = "PLUR"
        else:
            subj, obj = ("she", "her") if g == "she" else ("he", "him")
            return tmpl.replace("{T}", obj if qa.topic_role == "obj" else subj)
    pron = (OBJ if qa.topic_role == "obj" else SUBJ)[kind]
    # verb agreement after a plural pronoun in present tense ("does it" stays, "is they" -> "are they")
    if kind == "PLUR":      # (a yes/no question starts with its auxiliary: "Is {T} ..." -> "Are they ...")
        for sing, plur in (("is", "are"), ("was", "were"), ("does", "do"), ("has", "have")):
            tmpl = re.sub(rf"\b{sing} \{{T\}}", f"{plur} {{T}}", tmpl)
            tmpl = re.sub(rf"\b{sing.capitalize()} \{{T\}}", f"{plur.capitalize()} {{T}}", tmpl)
    return tmpl.replace("{T}", pron)


# first words that make a name another thing than its last word ("North Carolina" is not "Carolina")
_PLACE_QUALIFIERS = {"north", "south", "east", "west", "northern", "southern", "eastern", "western", "central", "new",
                     "old", "upper", "lower", "great", "greater", "little", "high", "low", "mount", "lake", "cape",
                     "port", "fort", "saint", "st", "san", "santa", "los", "las", "el", "la", "le"}


def _short_form(qa: QA, said: str = "") -> str | None:
    """A shorter description of the topic: a person's surname, ``the <head noun>`` ("the Berlin Wall"
    -> "the wall"), or the name's last word ("IBM MQ" -> "MQ"). A capitalised head is a common noun only
    when the conversation (``said``: its passages and answers) or the question's sentence writes it in
    lower case: "the wall" after "The wall fell", never "the cloudant" for "IBM Cloudant"."""
    words = qa.topic.split()
    if len(words) < 2 or " of " in qa.topic or any(w.lower() in ("and", "or", "&") for w in words):
        return None           # a coordination has no short form ("Romeo and Juliet" is not "Juliet")
    if any(w.lower() in _RESTRICT_PREPS for w in words[1:]):
        return None           # its last word is no head: "potential difficulties with primary sources" is no "the sources"
    if words[0][:1].isupper() and words[0].lower() in _DETERMINERS:
        return None           # a title that opens with "One"/"This"/"Another" is a name: "One Piece" is no "the piece"
    head = words[-1]
    if not re.fullmatch(r"[A-Za-z][\w-]*", head) or re.fullmatch(r"[IVXLCDM]+", head):
        return None           # "IBM Cloud ®" has no short form "®", "World War II" none "II" ("IBM MQ": "MQ")
    if qa.topic_kind == "PERSON":
        if not re.search(rf"(?<!{re.escape(words[-2])} )\b{re.escape(head)}\b", f"{said} {qa.sentence}"):
            return None       # a surname the texts never use alone: "Gossip Girl" (a show the tagger calls a person)
                              # is no "Girl"
        short = head
    else:
        if _common_noun(head) and head.lower() not in ("one", "system", "thing", "part", "way"):
            if head[:1].isupper() and not re.search(rf"\b{re.escape(head.lower())}s?\b", f"{said} {qa.sentence}"):
                return None   # a name's word nobody writes in lower case ("Cloudant"): no "the cloudant"
            short = f"the {head.lower()}"
        elif head[:1].isupper() and not words[0].lower() in ("the", "a", "an") \
                and words[0].lower() not in _PLACE_QUALIFIERS:
            short = head          # "IBM MQ" -> "MQ"; not "North Carolina" -> "Carolina" (another place)
        else:
            return None
    if norm_np(short) == norm_np(qa.topic):
        return None
    return qa.template.replace("{T}", short)


def _ellipsis_form(qa: QA, segment: list[dict], topics: list[str]) -> str | None:
    if not segment:
        return None
    prev = segment[-1].get("standalone_question") or ""
    pdoc = parse(prev)
    prev_verb = pdoc[:].root.lemma_ if len(pdoc) else ""
    prev_wh = prev.split()[0].lower() if prev else ""
    cur_wh = qa.question.split()[0].lower()
    rank = coreferable(qa, topics)
    frame = set(content_words(qa.question)) - set(content_words(qa.topic))
    if qa.verb and qa.verb == prev_verb and prev_wh == cur_wh and rank is None and qa.topic \
            and frame <= set(content_words(prev)):
        return f"What about {qa.topic}"        # same frame, new topic (the rest of the question is the one before's:
                                               # not "What about a subject of research?" for "Is a subject of research
                                               # the formation of the Moon?" after another "Is ...?")
    poss = re.search(r"^what (?:is|was|are|were) the ((?:\w+ ){0,2}\w+) of \{T\}$", qa.template, re.IGNORECASE)
    if poss and rank == 0:
        return f"And {POSS[qa.topic_kind]} {poss.group(1)}"
    return None


def said_in_conversation(phrase: str, segment: list[dict]) -> bool:
    """The user has heard of ``phrase``: its last content word and half of its content words (3+ letters, not
    stopwords) are in the segment's questions as asked or its answers - not only in a rewrite or a passage the user
    never saw. A pronoun or a shorter name needs that ("Does it block my account?" for IBM Cloudant, in a
    conversation that said only "IBM Cloud", refers to nothing the user knows)."""
    from common.text import synthesis_stopwords
    sw = synthesis_stopwords()
    ws = [w for w in words(phrase) if len(w) >= 3 and w not in sw]
    if not ws:
        return True
    text = " ".join(f"{t.get('question') or t.get('standalone_question') or ''} {t.get('answer') or ''}"
                    for t in segment)
    seen = set(words(text))
    stems = {_singular(w) for w in seen}
    have = [w in seen or _singular(w) in stems for w in ws]
    # a name's capitalised words as written: "One Piece" is not heard in "different pieces of theme music"
    cased = set(re.findall(r"[^\W_]+", text))
    named = [w for w in re.findall(r"[^\W_]+", phrase) if w[:1].isupper() and w.lower() not in sw]
    return have[-1] and 2 * sum(have) >= len(ws) and all(w in cased for w in named)


def render(qa: QA, segment: list[dict], shares: DiscourseShares, u: float) -> tuple[str, str]:
    """(question as asked, form) for a follow-up; ``u`` in [0,1) picks the form by the shares."""
    topics = segment_topics(segment)
    talk = shares.pronoun + shares.short + shares.ellipsis
    if qa.qtype == "define" and qa.topic and segment and u < talk:
        # clarification of the previous answer: it used a term the question now asks to define
        last = detokenize(segment[-1].get("answer") or "").lower()
        if len(qa.topic) > 3 and qa.topic.lower() in last:
            q = finish(f"What do you mean by {qa.topic}")
            if well_formed(q, followup=True) is None:
                return q, "clarify"
    order: list[str]
    if u < shares.ellipsis:
        order = ["ellipsis", "pronoun", "short"]
    elif u < shares.ellipsis + shares.pronoun:
        order = ["pronoun", "short"]
    elif u < shares.ellipsis + shares.pronoun + shares.short:
        order = ["short", "pronoun"]
    else:
        order = []
    # what the pronoun stands for was said: the topic, or the X of "the N of X" ("its flag" for the Flag of France)
    owner = re.match(r"^(?:the )?(.+?) of (.+)$", qa.topic or "", re.IGNORECASE)
    heard = said_in_conversation(qa.topic or "", segment) or bool(owner and said_in_conversation(owner.group(2),
                                                                                                  segment))
    for form in order:
        if form == "ellipsis":
            text = _ellipsis_form(qa, segment, topics)
            if text and text.startswith("And ") and not heard:
                text = None       # "And its population?" of something the user never heard of ("What about X?" names it)
        elif coreferable(qa, topics) is None or not heard:
            continue
        elif form == "pronoun":
            text = _pronoun_form(qa)
        else:
            text = _short_form(qa, _segment_text(segment))
        if text:
            q = finish(text)
            if well_formed(q, followup=True) is None and (form != "pronoun" or says_something(q)):
                return q, form
    if order:
        # any other phrase the segment mentioned, referred back to with a pronoun
        text = refer_back(qa.question, segment)
        if text:
            return text, "pronoun"
    return qa.question, "explicit"


def _segment_text(segment: list[dict]) -> str:
    """The segment's passages and answers (what the conversation has read)."""
    return " ".join(f"{t.get('gold_text') or ''} {t.get('answer') or ''}" for t in segment)


def history_text(segment: list[dict]) -> str:
    """The segment's standalone questions, passages and answers: how the conversation has written its names."""
    return " ".join(f"{t.get('standalone_question') or ''}\n{t.get('gold_text') or ''}\n{t.get('answer') or ''}"
                    for t in segment)


def mentions_history(question: str, mentions: list[str]) -> bool:
    """The question names a phrase the segment mentioned (multiword or a proper name), so it can
    stay on the conversation's subject and refer back to it."""
    q = " " + " ".join(norm_np(w) for w in question.rstrip("?").split()) + " "
    return any(f" {m} " in q for m in mentions[:16] if len(m.split()) >= 2 or m == (mentions[0] if mentions else ""))


# --- referring back to anything the segment mentioned --------------------------------------------

_NOT_NP = {"what", "who", "which", "it", "they", "i", "you", "we", "he", "she", "how", "many", "much", "them",
           "this", "that", "these", "those", "one", "ones", "there"}
_SING_AUX = {"is", "was", "does", "has"}
_PLUR_AUX = {"are", "were", "do", "have"}
_GENERIC = {"information", "way", "ways", "thing", "things", "part", "parts", "example", "examples", "type",
            "types", "number", "use", "list", "step", "steps", "time", "name", "topic", "page", "section"}


def history_mentions(segment: list[dict]) -> list[str]:
    """Normalised noun phrases a follow-up may refer back to: the segment's topics
    (:func:`segment_topics`) plus the noun phrases of the last answer's first sentences that
    carry a content word (``a database`` in "You create a database in the dashboard.")."""
    out = list(segment_topics(segment))
    if segment:
        last = (segment[-1].get("answer") or "")[:600]
        for c in parse(last).noun_chunks:
            n = norm_np(c.text)
            if n and n not in out and c.root.lower_ not in _NOT_NP and c.root.pos_ in ("NOUN", "PROPN") \
                    and any(len(w) >= 4 for w in n.split()) and n not in _GENERIC:
                out.append(n)
    return [m for m in out if m and m not in _GENERIC]


def _singular(n: str) -> str:
    """The phrase with its last word's regular plural ending removed ("cashews" -> "cashew",
    "policies" -> "policy", "boxes" -> "box"); other words unchanged."""
    head, _, last = n.rpartition(" ")
    if len(last) > 4 and last.endswith("ies"):
        last = last[:-3] + "y"
    elif len(last) > 4 and last.endswith(("ches", "shes", "sses", "xes")):
        last = last[:-2]
    elif len(last) > 3 and last.endswith("s") and not last.endswith(("ss", "us", "is")):
        last = last[:-1]
    return f"{head} {last}" if head else last


def _same_np(n: str, m: str) -> bool:
    """The same phrase, or its singular/plural ("cashews" after "the cashew")."""
    return n == m or _singular(n) == _singular(m)


def _np_matches(n: str, mentions: list[str]) -> bool:
    if not n or n in _GENERIC:
        return False
    for m in mentions:
        if _same_np(n, m):
            return True
        # the same name with fewer or more modifiers: "cloud object storage" / "ibm cloud object storage"
        if len(n.split()) >= 2 and len(m.split()) >= 2 and (m.endswith(" " + n) or n.endswith(" " + m)):
            return True
    return False


def says_something(question: str) -> bool:
    """The question has a content word besides its wh-word and pronouns ("What is it?" has none)."""
    return any(t.pos_ in ("NOUN", "VERB", "PROPN", "ADJ", "NUM") and t.lemma_ not in ("be", "do", "have")
               for t in parse(question))


def _people(segment: list[dict]) -> set[str]:
    """The people the segment's answers name (normalised): never "it", never a context."""
    return {norm_np(e.text) for t in segment for e in parse((t.get("answer") or "")[:1500]).ents
            if e.label_ == "PERSON"}


def _passage_people(segment: list[dict], label: str = "PERSON") -> set[str]:
    """The people the segment's gold passages name (normalised, the passage's own entity labels): a person's page
    is about a person ("Franklin D. Roosevelt", "Adolf Hitler" said "Hitler"), never a context. ``label="NORP"``:
    the groups of people they name ("the Dutch", "East Germans")."""
    from agents.synth.offline.nlp import passage_doc
    return {norm_np(e.text) for t in segment if t.get("gold_text")
            for e in passage_doc(t["gold_text"]).ents if e.label_ == label}


def _groups(segment: list[dict]) -> set[str]:
    """The nationalities and groups of people the segment's answers and passages name (normalised, spaCy's NORP):
    who acted, never what a question is in ("Did Phillip II's enemies become Portugal's enemies in the Dutch?",
    "How many people attempted to escape in East Germans?")."""
    return _passage_people(segment, "NORP") | {norm_np(e.text) for t in segment
                                               for e in parse((t.get("answer") or "")[:1500]).ents
                                               if e.label_ == "NORP"}


def _a_person(k: str, people: set[str]) -> bool:
    """Normalised phrase ``k`` is one of ``people``, a word of one of their names ("roosevelt"), or a person's full
    name where they say the surname ("adolf hitler" for "hitler"; not a title that joins names: "romeo and juliet";
    a multiword label is no surname: spaCy calls "Kubernetes Benchmark" a person)."""
    kw = k.split()
    # a first name before a surname the passage calls a person; not "Romeo and Juliet"
    named = len(kw) in (2, 3) and not set(kw) & {"and", "of", "in", "the", "for", "on", "at", "to"}
    return any(k == p or k in p.split() or (named and " " not in p and kw[-1] == p) for p in people if p)


def refer_back(question: str, segment: list[dict]) -> str | None:
    """``question`` as a follow-up that refers back with a pronoun to one noun phrase the segment
    already mentioned (:func:`history_mentions`), or None when it names none or the result would
    say too little. Subject -> ``it``/``they`` (number read off the question's own auxiliary or
    the noun's tag), object -> ``it``/``them``, ``the N of X`` -> ``its N``; people are not
    replaced (their gender is unknown); the first matching phrase is the one replaced."""
    mentions = history_mentions(segment)
    if not mentions:
        return None
    # people the segment talked about are never "it" (their gender is unknown)
    people = _people(segment)
    doc = parse(question)
    for c in doc.noun_chunks:
        root = c.root
        if root.lower_ in _NOT_NP or c.start == 0 or root.ent_type_ == "PERSON" or any(t.ent_type_ == "PERSON" for t in c):
            continue
        if root.dep_ in ("attr", "oprd") or doc[c.start - 1].pos_ in ("ADJ", "NOUN", "PROPN", "NUM") \
                or any(t.pos_ == "NUM" or t.ent_type_ in ("DATE", "TIME", "QUANTITY", "MONEY", "CARDINAL") for t in c) \
                or (c.end < len(doc) and doc[c.end].pos_ == "VERB" and root.dep_ == "dobj") \
                or (c.end < len(doc) and doc[c.end].pos_ in ("NOUN", "PROPN")) \
                or (root.dep_ == "nsubj" and root.head.tag_ in ("VBP", "VBZ", "VB")
                    and any(a.dep_ == "aux" and a.lemma_ == "be" for a in root.head.children)) \
                or (c.end < len(doc) and doc[c.end].tag_ == "VB" and doc[0].lemma_ == "be") \
                or (c.start > 0 and doc[c.start - 1].dep_ == "prt"):
            continue          # a predicate ("Was Vespasian it?"), half a phrase ("domain they"), an amount
                              # ("Did Feinman spend them on the project?") or a misparse
                              # ("What may hematopoietic them cross?": the object is the verb's subject; "Is it
                              # feature beta functionality?", "Is it estuary the site ...?": the phrase goes on past the
                              # chunk the parser saw, a noun read as a verb after "Is"; "Did the Texans call out them?":
                              # a pronoun goes before the particle)
        n = norm_np(c.text)
        if n in people or any(n in p.split() or p.endswith(" " + n) for p in people) \
                or any(t.tag_ == "PRP$" or t.pos_ == "PRON" for t in c):
            continue          # a person, or a phrase that already refers ("her mother")
        if c[0].lower_ in _SOME_OR_NONE:
            continue          # "any mentions", "some keys": a quantity, not a thing to call "them"
        if sum(t.lower_ == root.lower_ for t in doc) > 1:
            continue          # "from node to node": half of a pair, no "from it to node"
        if not _np_matches(n, mentions) or root.right_edge.i >= c.end or not said_in_conversation(n, segment):
            continue          # not mentioned before (where the user heard it), or a post-modified phrase ("the
                              # policies of the account")
        if not (len(n.split()) >= 2 or any(t.pos_ == "PROPN" for t in c) or _same_np(n, mentions[0])):
            continue          # a bare common noun ("access") reads oddly as "it"
        plural = root.tag_ in ("NNS", "NNPS")
        dep = root.dep_
        start, end = c.start, c.end
        if dep == "pobj" and root.head.lower_ == "of" and root.head.i > 1 and doc[root.head.i - 1].text[:1].isupper():
            continue          # the end of a name ("the Federal Republic of Germany", "the Government of India")
        if dep == "pobj" and root.head.lower_ == "of" and root.head.head.pos_ == "NOUN":
            noun = root.head.head
            left = noun.left_edge.i
            if noun.i + 1 == root.head.i and doc[left].lower_ == "the" and left < noun.i:
                rep = f"{'their' if plural else 'its'} " + doc[left + 1:noun.i + 1].text
                start = left
            else:
                rep = "them" if plural else "it"
        elif dep in ("nsubj", "nsubjpass"):
            aux = {t.lower_ for t in root.head.children if t.dep_ in ("aux", "auxpass")} | {root.head.lower_}
            if aux & _SING_AUX:
                plural = False
            elif aux & _PLUR_AUX:
                plural = True
            rep = "they" if plural else "it"
        elif dep == "pobj" and root.head.lower_ in ("at", "in", "near") and root.ent_type_ in ("GPE", "LOC", "FAC") \
                and root.head.i == c.start - 1:
            rep, start = "there", root.head.i        # a place: "Did they lose their flag there?", not "... at it?"
        elif dep == "pobj" and root.head.lower_ == "at" and root.pos_ == "PROPN":
            continue          # "at it" of a name reads as no place
        elif dep in ("dobj", "pobj", "dative"):
            rep = "them" if plural else "it"
        else:
            continue
        words_before = doc[:start].text
        text = finish(f"{words_before} {rep} {doc[end:].text}".strip())
        if not says_something(text) or well_formed(text, followup=True) is not None:
            return None
        return text
    return None


_VAGUE_HEADS = _GENERIC | _NOT_NP | {"people", "person", "persons"}     # "the people", "the thing" say nothing alone


def elide_given(question: str, phrases: list[str]) -> str | None:
    """``question`` with a name the conversation already gave left out of a noun phrase it modifies, the
    definite description people use once the subject is known: "How many stages does the Jewish wedding
    process have?" -> "How many stages does the process have?", "Does a traditional Jewish wedding ceremony
    take place under a chuppah?" -> "Does the traditional ceremony take place ...?" (``phrases``: normalised
    phrases the segment established, :func:`segment_topics` and :func:`context_candidates`). The name must
    stand right before the phrase's common-noun head and be a name (a capital) or two words or more; the head
    must say something alone (not "the thing"). None when no phrase applies or the result is not well formed.
    The standalone question keeps the name: the rewrite adds back what the question leaves out."""
    if not phrases:
        return None
    doc = parse(question)
    for c in doc.noun_chunks:
        root = c.root
        if root.pos_ != "NOUN" or root.lower_ in _VAGUE_HEADS or c.start == 0 or root.i != c.end - 1:
            continue
        if c[0].dep_ == "det" and c[0].lower_ not in ("the", "a", "an"):
            continue                      # "this Jewish wedding process", "every ...": left as it is
        pre = [t for t in c if t.i < root.i and t.dep_ != "det"]
        for ph in phrases:
            pw = ph.split()
            n = len(pw)
            if not pre or n > len(pre):
                continue
            run = pre[-n:]                # the name stands right before the head
            if [t.lower_ for t in run] != pw or run[-1].i != root.i - 1 or any(t.tag_ == "POS" for t in run):
                continue
            if not (n >= 2 or run[0].text[:1].isupper()) or any(t.pos_ in ("NUM", "PRON") for t in run):
                continue
            kept = [t.text for t in pre if t not in run] + [root.text]
            if kept[0].lower() in _QUANTIFIERS or not any(w.isalpha() for w in kept):
                continue
            # the phrase's own possessive stays its determiner ("my instance", not "the my instance")
            det = "" if pre and pre[0].tag_ in ("PRP$", "WP$") and pre[0] not in run else "the "
            text = finish(f"{question[:c.start_char]}{det}{' '.join(kept)}{question[c.end_char:]}".strip())
            if says_something(text) and well_formed(text, followup=True) is None:
                return text
    return None


# --- the context a follow-up leaves implicit ---------------------------------------------------------

_WH = {"what", "which", "who", "whom", "whose", "when", "where", "why", "how"}     # "... in What products?"


def context_candidates(segment: list[dict]) -> list[str]:
    """Phrases the segment established as its context, most salient first (normalised): the focus,
    the titles of the segment's pages and the main names of its gold passages (newest first), the
    multiword proper names its questions asked about, then other multiword phrases it mentioned; each
    with a content word (4+ letters, not a stopword). Single words count only as the focus, a title or
    a main name (single capitalised words in answers are often UI labels: "Save", "Create"). Each needs
    half its content words said in the conversation; a one-word main name needs to be in the user's
    questions as asked."""
    from common.text import synthesis_stopwords
    sw = synthesis_stopwords()
    # the pages the segment read (titles, newest first) before their most frequent names: a conversation that
    # moved from its opening page to another one is inside the page it is on now
    salient = [focus(segment)] + [title_name(t.get("title") or "") for t in reversed(segment)] \
        + [main_name(t.get("gold_text") or "") for t in reversed(segment)]
    asked = []
    for t in reversed(segment):       # proper names the user asked about (multiword: single words are often UI labels)
        for c in parse(t.get("standalone_question") or t.get("question") or "").noun_chunks:
            if any(x.pos_ == "PROPN" for x in c) and len(norm_np(c.text).split()) >= 2:
                asked.append(c.text)
    # multiword names the conversation mentioned (questions or answers), written with a capital
    which = _modifier_led(segment)
    mentioned = [m for m in history_mentions(segment) if len(m.split()) >= 2 and m not in which]
    people = _people(segment) | _passage_people(segment)
    groups = _groups(segment)
    said = _said_words(segment)
    questioned = _said_words([{"question": t.get("question") or ""} for t in segment])
    pages = 1 + len(segment)          # the focus and the page titles
    text = _segment_text(segment)
    out: list[str] = []
    for rank, n in enumerate(salient + asked + mentioned):
        k = norm_np(n or "")
        content = [w for w in k.split() if len(w) >= 4 and w not in sw]
        # a one-word name that no page title gives (the focus or a main name: a passage's most frequent
        # name) must be in the user's questions: "Integer", "Lite" in a manual page are no context
        heard = said if len(k.split()) >= 2 or (1 <= rank < pages and n) else questioned
        if k and k not in out and k not in _GENERIC and content \
                and k.split()[0] not in _WH | _DEICTIC | _SOME_OR_NONE | _MANY \
                and k.split()[-1] not in _UI_HEADS | _PEOPLE_HEADS and k.split()[0] not in _UI_VERBS \
                and not (rank >= pages and _an_award(k)) \
                and "," not in (n or "") \
                and not _a_person(k, people) and k not in groups \
                and not (len(k.split()) == 1 and rank >= pages and any(f" {k} " in f" {o} " for o in out)
                         and _only_inside_names(k, text)) \
                and 2 * sum(w in heard for w in content) >= len(content):
            # (a person is never the context: "... in Gandhi?"; and the context is what the
            # conversation said - at least half its content words were in a question or an answer -,
            # not a page title nobody mentioned: a person's rewrite adds words from the history; a
            # passage's frequent one-word name is the context only when the user asked about it:
            # "JSON", "Integer", "Lite" in a passage give no "... in Integer?"; nor a passage's one-word name that is
            # a word of a longer name already there and never stands alone in the text: "Prejudice" of "Pride and
            # Prejudice and Zombies"; "Mars" beside "Exploration of Mars" stays where the text says "on Mars")
            out.append(k)
    return out[:24]


_AWARD_HEADS = {"award", "awards", "prize", "prizes", "medal", "medals", "trophy", "nomination", "nominations", "globe",
                "globes", "emmy", "emmys", "oscar", "oscars", "grammy", "grammys"}


def _an_award(k: str) -> bool:
    """An award or a category of one, mentioned by an answer ("the Screen Actors Guild Award", "Best Actress",
    "Outstanding Drama Series"): what was won, not where a question is asked ("What did the franchise receive in the
    Screen Actors Guild Award?", "... for Best Actress?"). A page about the award is still the context (a title)."""
    ws = k.split()
    return any(w in _AWARD_HEADS for w in ws) or ws[0] in ("best", "outstanding")


def _only_inside_names(word: str, text: str) -> bool:
    """Every occurrence of ``word`` in ``text`` continues a capitalised name ("Pride and Prejudice", "Pride +
    Prejudice"): it is a piece of that name, not a name of its own."""
    hits = list(re.finditer(rf"\b{re.escape(word)}\b", text, re.IGNORECASE))
    for m in hits:
        before = text[max(0, m.start() - 120):m.start()].split()     # the few words before it
        while before and before[-1].lower() in ("and", "of", "the", "+", "&"):
            before.pop()
        if not before or not before[-1][:1].isupper():
            return False
    return bool(hits)


def _modifier_led(segment: list[dict]) -> set[str]:
    """The segment's noun phrases (normalised) that are a thing qualified by lower-case adjectives, participles,
    numbers or determiners only ("a signed JWT", "the existing JWT", "a proper private key", "each session"; not "the
    Jewish wedding"): they say which one, they name no context ("How do I configure the web chat to include JWTs in
    existing JWT?")."""
    texts = [t.get("standalone_question") or t.get("question") or "" for t in segment]
    texts += [(segment[-1].get("answer") or "")[:600]] if segment else []
    out = set()
    for text in texts:
        for c in parse(text).noun_chunks:
            pre = [t for t in c if t.i < c.root.i]
            if pre and all((t.pos_ in ("ADJ", "DET", "NUM") or t.tag_ in ("VBN", "VBG")) and not t.text[:1].isupper()
                           for t in pre) and any(t.pos_ != "DET" or t.lower_ in _SOME_OR_NONE for t in pre):
                out.add(norm_np(c.text))
            elif pre and (pre[0].pos_ in ("ADJ", "NUM") or pre[0].tag_ in ("VBN", "VBG")) \
                    and (pre[0].text.islower() or pre[0].is_sent_start and not pre[0].ent_type_):
                out.add(norm_np(c.text))        # a lower-case quality before a name: "aggressive CSS resets", "low
                                                # F1 scores" say which ones, they name no context
    return out


_UI_HEADS = {"icon", "button", "tab", "menu", "field", "fields", "column", "link", "window", "pane", "panel", "page",
             "section", "file", "files", "format", "message", "results", "option", "options", "setting", "settings",
             "feature", "id", "checkbox", "dialog", "screen", "value", "values"}
# ("the Actions icon", "JSON format", "the ID value": where, not what)
# a label that starts with a command is a button or a menu item: "View usage", "Create bucket" ("... in View usage?")
_UI_VERBS = {"view", "create", "edit", "manage", "add", "delete", "remove", "open", "select", "click", "save", "update",
             "enable", "disable", "configure", "show", "hide", "cancel", "submit", "download", "upload", "import",
             "export", "copy", "launch", "deploy", "provision", "restore", "reset", "refresh", "apply", "go"}

# people named by their role ("IBM engineers", "Enterprise Manager administrators"): who, never what a question is in
_PEOPLE_HEADS = {"engineer", "engineers", "administrator", "administrators", "admin", "admins", "user", "users",
                 "developer", "developers", "customer", "customers", "people", "person", "persons", "member", "members",
                 "operator", "operators", "owner", "owners", "analyst", "analysts", "researcher", "researchers",
                 "student", "students", "player", "players", "employee", "employees", "worker", "workers", "client",
                 "clients", "scientist", "scientists", "official", "officials", "leader", "leaders", "soldier",
                 "soldiers", "citizen", "citizens", "residents", "resident", "children", "child", "women", "men",
                 "author", "authors", "writer", "writers", "critics", "critic", "fans", "viewers", "annotators",
                 "annotator", "subscribers", "subscriber", "partners", "vendors", "consumers", "patients", "doctors",
                 "authorities", "powers", "forces", "troops", "allies", "rebels", "settlers", "colonists", "tribes"}
# (groups of people as well: "What did a hermit establish in Roman authorities?", "... in axis powers?")

_DEICTIC = {"this", "that", "these", "those", "its", "their", "his", "her", "our", "your", "my", "some", "any",
            "available", "following", "above", "below", "previous", "preceding"}     # "this initiative", "its sewer plants": no context to name ("... in this World War II?")
_MANY = {"numerous", "various", "multiple", "countless", "certain", "different"}     # (and _SOME_OR_NONE)
# "numerous American cities" is how many, not which: no context ("... for numerous American cities?")


def _said_words(segment: list[dict]) -> set[str]:
    """Lower-cased words of the segment's questions (asked and standalone) and answers."""
    text = " ".join(f"{t.get('question') or ''} {t.get('standalone_question') or ''} {t.get('answer') or ''}"
                    for t in segment)
    return {w.lower() for w in re.findall(r"[^\W_]+", text)}


def context_phrase(question: str, passage: dict, candidates: list[str], history: str = "") -> str:
    """The phrase of the segment's context that the question leaves implicit: the first candidate
    (:func:`context_candidates`) that the question's passage contains, when the question names no
    candidate before it (half of its words or more) - a name (:func:`_names_something`), as the passage
    writes it ("How do I delete a bucket?" in a conversation about IBM Cloud Object Storage, from a
    passage about it -> "IBM Cloud Object Storage"), with the article and the case that the passage or the
    conversation so far (``history``: its questions, answers and passages) give it (:func:`_as_phrase`: "the
    United States", "the economy of India"); "" when none."""
    found = _context_phrase(question, passage, candidates, history)
    return _as_phrase(found, passage["text"][:4000], history) if found else ""


def _context_phrase(question: str, passage: dict, candidates: list[str], history: str = "") -> str:
    qw = {w.lower() for w in re.findall(r"[^\W_]+", question)}
    title = passage.get("title") or ""
    text = passage["text"][:4000] + "\n" + title     # the text's own wording first
    body = len(passage["text"][:4000])
    head = passage["text"].split("\n", 1)[0]
    # the passage's first line when it is its title (the MTRAG ClapNQ passages open with it): not its sentences
    lead = len(head) if title and head.strip().lower() == title.strip().lower() else 0
    name = title_name(title)                          # the page as a thing to ask about
    page_key = norm_np(name or "-")
    for k in candidates:
        kw = k.split()
        if 2 * sum(w in qw for w in kw) >= len(kw):
            return ""         # the question already names it (half of its words or more), and it is more salient
                              # than any context left to add: "How do I secure the web chat?" in a conversation
                              # about the web chat needs no "... in RSA signature?" from the last answer
        ms = list(phrase_pattern(kw, possessive=True).finditer(text))
        if not ms:
            continue
        # the wording inside a sentence, not a title line's sentence case ("the guinea pig", not "Guinea pig")
        inside = next((x for x in ms if re.search(r"[a-z,;] $", text[max(0, x.start() - 2):x.start()])), None)
        if "in" in kw[1:-1] and not any(lead <= x.start() < body for x in ms):
            continue          # a page title with its own "in" phrase reads wrong after another one ("... in horses in
                              # warfare?", "... in Soviet Union in World War II?"); a name the text writes is kept
                              # ("... in Jack in the Box?")
        if len(kw) == 1 and _only_inside_names(kw[0], passage["text"][:4000]):
            continue          # a word of a longer name in this passage: "Rabbit" of "White Rabbit" is no "... in Rabbit?"
        m = inside or ms[0]
        found = re.sub(r"\s+", " ", m.group(0))
        fw = found.split()
        if len(fw) >= 2 and fw[0].islower() and fw[0] not in ("the", "a", "an") and any(w[:1].isupper() for w in fw[1:]):
            continue          # a lower-case quality before a name says which ones: "low F1 scores", "aggressive CSS
                              # resets" are no context ("... in low F1 scores?")
        page = page_key == k                  # the candidate is the passage's page
        if inside is None and norm_np(found) == page_key:
            found = name                       # only in the title line: the title, its sentence case undone
            if _names_something(found, text):
                return found
            if len(kw) >= 2:      # a common noun phrase: "the photo booth" where the text counts it ("a photo booth")
                return _article_as_written(found, text) if found.islower() else found
            if page and _written_as_a_name(found, history):
                return found          # a one-word page the conversation writes as a name: "in Friends", "in Celts"
                                      # (the passage has it in its title line only), not "in friends"
            if page and _common_noun(found):
                # a one-word page about a common thing: "the cashew" where the text writes the article, a mass
                # noun without one ("apoptosis", not "the apoptosis")
                return _article_as_written(found.lower(), text)
            if page and found[:1].isupper():
                return found          # a one-word page with a proper name that the conversation said, where the
                                      # passage says "the state": "What did the state have in 2012?" -> "... in Oklahoma?"
            continue
        if inside is None and len(kw) >= 2 and not page and not any(w[:1].isupper() for w in found.split()[1:]):
            continue          # only its first word capitalised, at a sentence start: "Some people" is no name
        if inside is None and len(kw) >= 2 and not page and found.split()[-1].islower() \
                and parse(found)[0].tag_ in ("JJ", "DT", "CD", "RB", "PDT"):
            continue          # a common noun phrase with a sentence's capital: "Unpopular Byzantine governors" is no name
        if _names_something(found, text) or (len(kw) >= 2 and norm_np(title) == k):
            # the article the passage writes before it ("the Byzantine Empire"); a common noun phrase the page is about
            # takes "the" where it is counted ("in the photo booth", not "in photo booth")
            if _with_article(ms, text):
                return _the(found, text) + found
            return _article_as_written(found, text) if found.islower() else found
        if page and len(kw) == 1:
            if _names_something(name, text):
                return name                      # a name the sentences capitalise ("Friends", not "the friends")
            if inside is not None and found.islower():
                return _article_as_written(found, text)     # the page's common noun, as its sentences write it
    return ""


# heads of multiword names that English writes with "the" ("the Berlin Wall", "the Byzantine Empire", "the Supreme
# Court", "the Great Wall of China"), when neither the passage nor the conversation shows how the name is written
_THE_HEADS = frozenset("""wall empire states kingdom republic union court ages universe river ocean sea gulf bay lake canal
church army navy party league association federation council senate parliament congress station guild award awards
prize cup bowl series war revolution movement dynasty confederacy commonwealth emirates islands mountains alps desert
valley basin peninsula strait channel institute foundation museum tower bridge""".split())


def _written_as_a_name(word: str, text: str) -> bool:
    """``text`` writes ``word`` with its capital inside a sentence and never in lower case there."""
    inside = [m.group(0) for m in re.finditer(rf"(?<=[a-z,;] ){re.escape(word)}\b", text, re.IGNORECASE)]
    return bool(inside) and all(w[:1].isupper() for w in inside)


def _as_phrase(found: str, text: str, history: str) -> str:
    """A context name as a phrase of the rewrite: a title's sentence case undone where the sentences of the
    passage or the conversation write its first word in lower case ("Economy of India" -> "the economy of India"),
    and "the" before a name that they write "the <name>" (:func:`_with_article`: "the United States" from "the United
    States of America") or, when they never write it after "the", whose head is a plural or one of
    ``_THE_HEADS`` ("the Seattle Seahawks", "the Berlin Wall"); a person's or a country's name stays bare
    ("Imperial Japan", "Franklin D. Roosevelt")."""
    ws = found.split()
    if len(ws) < 2 or ws[0].lower() in ("the", "a", "an") or not ws[0][:1].isupper():
        return found
    both = f"{text}\n{history}"
    ms = list(phrase_pattern(ws).finditer(both))
    inside = [m for m in ms if re.search(r"[a-z,;] $", both[max(0, m.start() - 2):m.start()])]
    if inside and all(m.group(0)[:1].islower() for m in inside):
        # sentence case: inside a sentence the name starts in lower case, "the economy of India"
        found = ws[0].lower() + found[len(ws[0]):]
        return ("the " + found) if _with_article(inside, both) or ws[1].lower() == "of" else found
    if _with_article(ms, both):
        return _the(found, both) + found
    if any(m.start() >= 1 and both[m.start() - 1] in " (" and re.search(r"\b(?:in|of|from|to|by|with|and|for|on|at) $",
                                                                       both[max(0, m.start() - 5):m.start()])
           for m in inside):
        return found          # written bare after a preposition: "in Imperial Japan", "of Romeo and Juliet"
    lowered = [w.lower() for w in ws]
    if lowered[1] == "of" and parse(found)[0].tag_ == "NN":
        return "the " + ws[0].lower() + found[len(ws[0]):]     # a title's sentence case: "the economy of India"
    head = ws[lowered.index("of") - 1] if "of" in lowered[1:] else ws[-1]
    if head[:1].isupper() and (head.lower() in _THE_HEADS or re.fullmatch(r"[A-Z][a-z]+[^s']s", head)):
        return _the(found, both) + found
    return found


def _the(name: str, text: str) -> str:
    """"The " where the text writes the article of ``name`` with a capital inside a sentence (a title that starts
    with it: "season of The Office", "in The Mother"), else "the "."""
    return "The " if re.search(r"[a-z,;] The " + re.escape(name) + r"\b", text) else "the "


def _article_as_written(noun: str, text: str) -> str:
    """``the <noun>`` when the text writes the article before it ("the cashew"), else the bare noun (a mass noun:
    "apoptosis", "photosynthesis")."""
    # as a phrase of its own: "the cashew is", not "the football codes"
    if _with_article(list(phrase_pattern(noun.split()).finditer(text)), text):
        return "the " + noun
    # a count noun (the text writes "a photo booth" or "photo booths") takes "the" too: "in the photo booth", not "in
    # photo booth"; a mass noun stays bare ("apoptosis", "egg donation")
    counted = re.search(rf"\b(?:a|an|one)\s+{re.escape(noun)}\b|\b{re.escape(noun)}(?:s|es)\b", text, re.IGNORECASE)
    return ("the " + noun) if counted else noun


_AFTER_NAME = frozenset("""is are was were has have had does do did can could will would may might must should
and or but of in on at to for from with by as that which who whose when where while after before during since
until than into onto over under about against between through the a an its their his her this these those it
they he she there not also then""".split())


def _with_article(matches: list, text: str) -> bool:
    """The name of ``matches`` (its occurrences in ``text``) is written "the <name>" as a phrase of its own
    ("the Byzantine Empire was ..."): some occurrence has "the" before it and a sentence mark or a function word
    (or a past tense) after it. "the IBM Cloudant Dashboard", "the IBM Cloudant service" are other things: there the
    article belongs to the longer phrase, and the name alone is "IBM Cloudant"."""
    for m in matches:
        if text[max(0, m.start() - 4):m.start()].lower() != "the ":
            continue
        nxt = re.match(r"\s*([^\W_]+|\S)?", text[m.end():])
        word = nxt.group(1) if nxt else None
        if word is None or not word[:1].isalnum() or word.lower() in _AFTER_NAME \
                or (word.islower() and word.endswith("ed")):          # "the Byzantine Empire collapsed"
            return True
    return False


def title_name(title: str) -> str:
    """A page title as a thing to ask about: the disambiguation dropped ("American Pie (song)" ->
    "American Pie"), sentence case undone for a common noun phrase ("Guinea pig" -> "guinea pig",
    "History of Germany" -> "the history of Germany"); "" for a title that names no thing
    ("Wikipedia:Reference desk/Archives/...")."""
    t = re.sub(r"\s*\([^)]*\)\s*$", "", title).strip()
    if not t or re.search(r"[:/|_#=\[\]{}()]", t) or not re.search(r"[A-Za-z]", t) or len(t.split()) > 6 \
            or re.match(r"(?:lists?|index|indexes|outline|timeline|glossary) of\b", t, re.IGNORECASE):
        return ""           # a list of things is no thing: "List of Madagascar (franchise) characters"
    ws = t.split()
    first = ws[0]
    if len(ws) > 1 and first[:1].isupper() and first[1:].islower():
        doc = parse(t)
        rest_lower = all(not w[:1].isupper() for w in ws[1:] if w.lower() not in ("of", "the", "and", "in"))
        if (doc[0].pos_ == "NOUN" and doc[0].tag_ == "NN" and not any(x.pos_ == "PROPN" for x in doc[:2])) \
                or (ws[1].lower() == "of" and first.lower() in _TOPIC_PLURALS) \
                or (rest_lower and not doc.ents):
            # a sentence-case common noun phrase: "Sickle cell disease", "History of Germany"
            t = ("the " if any(x.lower_ == "of" for x in doc[1:3]) else "") + first.lower() + t[len(first):]
    return t


# plural heads of a page about an aspect of something ("Causes of World War II"), unlike a name ("Sons of Anarchy")
_TOPIC_PLURALS = {"causes", "effects", "consequences", "origins", "uses", "applications", "types", "impacts",
                  "symptoms", "treatments", "characteristics", "criticisms", "benefits", "advantages", "aspects"}


_NOTICE = {"important", "note", "notes", "warning", "tip", "caution", "attention", "example", "examples",
           "overview", "step", "steps", "procedure", "lesson", "optional", "required"}


def _names_something(found: str, text: str) -> bool:
    """A name worth carrying as context: a capitalised word that is not a notice label
    ("IMPORTANT", "Note") and, for a single word, written capitalised inside a sentence of the
    passage, not only at a line or sentence start ("Swift", "Kubernetes")."""
    ws = found.split()
    if not any(w[:1].isupper() and w.lower() not in _NOTICE for w in ws):
        return False
    if len(ws) >= 2:
        return True
    # capitalised inside a sentence and standing alone ("Friends is ...", not "the Football League"), at least as
    # often as the text writes it in lower case ("football" on the page "Football" is a common noun)
    alone = len(re.findall(r"[a-z,;] " + re.escape(found) + r"\b(?!\s+[A-Z])", text))
    return alone > 0 and alone >= len(re.findall(r"\b" + re.escape(found.lower()) + r"\b", text))
