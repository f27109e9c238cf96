"""Question generation from linguistic structure (over-generate, then rank).

Every sentence of a passage is parsed (:mod:`agents.synth.offline.nlp`); from its dependency
tree and named entities we read one clause (subject, verb group, complements) and turn each
slot that can be asked for into a wh-question whose answer is a span of that sentence:

* ``when``  - a date complement (``in 1961``) -> "When was the Berlin Wall built?"
* ``where`` - a place complement (``in the Andes``) -> "Where did guinea pigs originate?"
* ``who``   - a person/organisation subject or passive agent -> "Who built the Berlin Wall?"
* ``how_many`` / ``how_much`` - a counted noun or a sum of money -> "How many people escaped?"
* ``why``   - a ``because``/``due to`` complement; ``how`` - a ``by``-gerund or a ``To X, do Y`` instruction
* ``define`` - a copular definition -> "What is IBM Cloudant?"; ``what`` - a subject/object NP
* ``yesno`` - ``you can ...`` statements of manuals -> "Can I store JSON documents in IBM Cloudant?";
  any clause about its subject, the way people check a fact -> "Does IBM Cloudant replicate data
  across zones?" (``Yes``), a negated clause without its negation -> "Was the bridge completed?"
  (``No``; a negated clause gives no wh-question)

Each candidate (:class:`QA`) keeps the answer span, its sentence, the question type and the
*topic*: the noun phrase the question is about (not the answer), with its grammatical role,
so :mod:`agents.synth.offline.discourse` can refer back to it with a pronoun, a possessive, a
shorter description or ellipsis. Candidates that fail :func:`well_formed` are dropped.

References: Heilman & Smith (2010), "Good Question! Statistical Ranking for Question
Generation" (over-generate and rank).
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field, replace
from functools import lru_cache

from agents.synth.offline.nlp import detokenize, parse, sentence_spans
from agents.synth.offline.answer_types import is_people, request_body
from agents.synth.text import page_name

PRONOUNS = {"it", "they", "he", "she", "this", "these", "those", "its", "their", "his", "her", "them", "him",
            "we", "i", "you", "that", "which", "who", "there", "one"}
PERSONAL = {"he": "PERSON", "she": "PERSON", "it": "SING", "they": "PLUR", "this": "SING", "these": "PLUR"}
WH_WORDS = ("what", "who", "whom", "whose", "when", "where", "why", "how", "which")
AUX_FIRST = ("is", "are", "was", "were", "do", "does", "did", "can", "could", "has", "have", "had", "will",
             "would", "should", "may", "might", "must")
_SKIP_CHILD = {"relcl", "acl", "appos", "advcl", "punct", "cc", "conj", "parataxis", "mark", "dep", "meta",
               "discourse", "intj", "preconj", "predet", "csubj", "ccomp", "expl"}
_NP_KEEP = {"det", "compound", "amod", "poss", "nummod", "nmod", "case", "quantmod", "advmod", "neg", "npadvmod",
            "prep", "pobj", "pcomp", "predet", "nn", "possessive", "flat"}
_BAD_ADV = {"also", "then", "however", "therefore", "thus", "still", "now", "further", "furthermore", "later",
            "first", "finally", "instead", "only", "just", "even", "again", "already", "so", "too", "as", "well",
            "often", "usually", "currently", "generally", "typically", "otherwise", "meanwhile", "nevertheless",
            "subsequently", "additionally", "eventually", "soon", "here", "there", "similarly", "likewise"}
IRREGULAR_PAST = {"build": "built", "write": "wrote", "begin": "began", "give": "gave", "take": "took",
                  "make": "made", "find": "found", "lead": "led", "win": "won", "lose": "lost", "hold": "held",
                  "bring": "brought", "buy": "bought", "teach": "taught", "think": "thought", "sell": "sold",
                  "tell": "told", "say": "said", "see": "saw", "become": "became", "come": "came", "go": "went",
                  "know": "knew", "grow": "grew", "draw": "drew", "throw": "threw", "fly": "flew", "run": "ran",
                  "sing": "sang", "speak": "spoke", "choose": "chose", "break": "broke", "drive": "drove",
                  "ride": "rode", "rise": "rose", "steal": "stole", "freeze": "froze", "wear": "wore",
                  "bear": "bore", "tear": "tore", "swear": "swore", "eat": "ate", "fall": "fell", "feel": "felt",
                  "keep": "kept", "leave": "left", "meet": "met", "pay": "paid", "send": "sent", "spend": "spent",
                  "stand": "stood", "understand": "understood", "get": "got", "shoot": "shot", "set": "set",
                  "put": "put", "cut": "cut", "hit": "hit", "let": "let", "shut": "shut", "read": "read",
                  "have": "had", "do": "did", "be": "was", "found": "founded", "design": "designed",
                  "seek": "sought", "fight": "fought", "catch": "caught", "strike": "struck", "shake": "shook",
                  "lay": "laid", "mean": "meant", "deal": "dealt", "lend": "lent", "bind": "bound", "sink": "sank",
                  "swim": "swam", "drink": "drank", "ring": "rang", "arise": "arose", "sit": "sat", "hang": "hung",
                  "dig": "dug", "stick": "stuck", "sweep": "swept", "sleep": "slept", "feed": "fed", "flee": "fled",
                  "hear": "heard", "forget": "forgot", "forgive": "forgave", "forbid": "forbade", "hide": "hid",
                  "bite": "bit", "light": "lit", "spread": "spread", "split": "split", "quit": "quit",
                  "broadcast": "broadcast", "cast": "cast", "cost": "cost", "hurt": "hurt", "bet": "bet"}
_DATE_PREPS = {"in", "on", "during", "at", "around", "by"}
_PLACE_PREPS = {"in", "at", "near", "on"}
_PLACE_ENTS = {"GPE", "LOC", "FAC"}
_AGENT_ENTS = {"PERSON", "ORG", "NORP", "GPE"}
_AMOUNTS = {"QUANTITY", "PERCENT", "MONEY", "CARDINAL"}
_DURATION_VERBS = {"last", "take", "span", "run"}
_TIME_UNITS = {"second", "minute", "hour", "day", "week", "month", "year", "decade", "century", "millennium"}
_NUM_WORDS = {"one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
              "dozen", "hundred", "hundreds", "thousand", "thousands", "million", "millions", "billion",
              "billions", "several", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"}
_TOKENISED = re.compile(r"\s[,.;:!?)%]|\(\s|\s'(s|re|ve|ll|d|m)\b|\sn't\b|``|''")


@dataclass(frozen=True)
class QA:
    """One generated question with its answer span.

    ``question`` is the standalone form; ``template`` holds ``{T}`` where the topic NP stands
    (``""`` when the question has no topic to refer back to); ``topic_role`` is ``subj``,
    ``obj`` or ``of`` (inside ``the N of {T}``), which decides the pronoun's case.
    """
    question: str
    qtype: str
    answer: str
    sentence: str
    template: str = ""
    topic: str = ""
    topic_kind: str = "SING"          # SING | PLUR | PERSON
    topic_role: str = "subj"
    verb: str = ""                    # the clause's verb lemma (frame of ellipsis)
    sent_index: int = 0
    score: float = 0.0
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    def render(self, topic_text: str | None = None) -> str:
        if not self.template or topic_text is None:
            return self.question
        return finish(self.template.replace("{T}", topic_text))


# -- small text helpers ----------------------------------------------------------------------
def finish(q: str) -> str:
    """Capitalised, detokenised, single-spaced, one trailing question mark, no trademark signs."""
    q = detokenize(re.sub(r"\s*[®™©]", "", q).replace(" ?", "?")).strip().rstrip(".?!,;: ")   # nobody types "®"
    q = re.sub(r",?\s+(?:though|however|thus|therefore|nevertheless|nonetheless|moreover|furthermore|in addition|"
               r"in contrast|by contrast|in turn|in fact|as well|in association|in conjunction|in accordance|"
               r"in relation|in comparison|in collaboration|in partnership|in cooperation)$", "", q, flags=re.IGNORECASE)
    if not q:               # (a connective left at the end says nothing: "Can nights be cool in summer though?")
        return q
    return q[0].upper() + q[1:] + "?"


def _text(tokens) -> str:
    out = ""
    for t in tokens:
        if t.is_space:
            continue
        out += t.text + (" " if t.whitespace_ else "")
    return detokenize(out)


# verb + object idioms whose object is no answer: "Yichud can take place anywhere" gives no "What can Yichud take?"
_IDIOMS = {("take", "place"), ("take", "part"), ("take", "care"), ("take", "effect"), ("take", "advantage"),
           ("take", "action"), ("pave", "way"), ("give", "rise"), ("make", "sense"), ("make", "use"),
           ("play", "role"), ("play", "part"), ("make", "way"), ("take", "note"), ("take", "account"),
           ("give", "birth"), ("take", "hold"), ("make", "progress"), ("lend", "weight"), ("carry", "weight"),
           ("pay", "attention"), ("shed", "light"), ("take", "shape"), ("take", "root")}


_PRODUCT_WORDS = {"cloud", "service", "services", "storage", "studio", "server", "api", "sdk", "database", "platform",
                  "functions", "assistant", "discovery", "kubernetes", "protect", "manager", "console", "cli", "app",
                  "engine", "system", "software", "model", "network"}


def _agent_org(toks) -> bool:
    """An organisation that acts like people ("Who acquired GitHub?" for Microsoft) rather than a product
    or a command the entity tagger also calls ORG ("IBM Cloud Object Storage", "PUT")."""
    if not isinstance(toks, str) and any(t.ent_type_ == "ORDINAL" for t in toks):
        return False      # "the first PUT"
    ws = [t.text for t in toks if t.ent_type_ == "ORG"] if not isinstance(toks, str) else toks.split()
    if not ws or any(w.lower() in _PRODUCT_WORDS for w in ws) or any(ch.isdigit() for w in ws for ch in w):
        return False
    return not (len(ws) == 1 and ws[0].isupper())


def _as_mine(text: str) -> str:
    """A manual's words to the reader as the reader's own question: "To define your own intents" ->
    "How do I define my own intents?"."""
    return re.sub(r"\b([Yy])our(self)?\b", lambda m: ("M" if m.group(1) == "Y" else "m") + ("yself" if m.group(2) else "y"),
                  text)


def _keep_case(tok) -> bool:
    return tok.pos_ == "PROPN" or tok.text == "I" or bool(tok.ent_type_ and tok.text[:1].isupper()
                                                             and tok.ent_iob_ == "B" and tok.i != tok.sent.start) \
        or (tok.text[:2].isupper() and len(tok.text) > 1)


def _lower_first(tokens: list) -> list[str]:
    """The phrase's words for use inside a question: a sentence-initial capital is dropped only
    from function words and from words the passage also writes in lower case."""
    words = [t.text for t in tokens if not t.is_space]
    t = tokens[0] if tokens else None
    ordinal = t is not None and t.ent_type_ == "ORDINAL" and t.i == t.sent.start and t.text.isalpha()   # "First ..."
    hyphenated = len(tokens) > 2 and tokens[1].tag_ == "HYPH" and not tokens[0].whitespace_ \
        and tokens[2].text[:1].isupper()          # "Five-Year Plans", "Anglo-Saxon": a name's capitals
    lowered = t is not None and t.pos_ == "PROPN" and t.i == t.sent.start and not t.ent_type_ \
        and (len(tokens) == 1 or tokens[1].pos_ != "PROPN") and t.text[1:].islower() \
        and t.lower_ in _case_vocab(t.doc)[0] and t.text not in _case_vocab(t.doc)[1]
    # a common noun the tagger called a name at a sentence start ("Marrow contains ..." where the text says "bone
    # marrow"): "What cells does marrow contain?", not "... does Marrow contain?"
    if tokens and words and (ordinal or lowered or not _keep_case(tokens[0])) and not _name_start(tokens) \
            and not hyphenated:
        if t.pos_ in ("DET", "PRON", "ADP", "ADV", "CCONJ", "SCONJ", "NUM", "PART") or \
                t.lower_ in _case_vocab(t.doc)[0] or ordinal or \
                ((t.pos_ == "ADJ" or t.tag_ in ("NN", "NNS")) and not t.ent_type_ and t.i == t.sent.start
                 and t.text not in _case_vocab(t.doc)[1]):
            # "Various expeditions failed ..." -> "Did various expeditions fail ...?" (names are PROPN or entities)
            words[0] = words[0].lower()
    return words


def _name_start(tokens: list) -> bool:
    """The phrase opens with a name whose first word is no noun ("One Piece"): a capitalised
    word the passage also writes with a capital inside a sentence, followed by a capitalised name word."""
    t = tokens[0]
    if len(tokens) > 1 and t.pos_ in ("NUM", "ADJ") and t.text[:1].isupper() and t.text[1:].islower() \
            and all(x.text[:1].isupper() and x.pos_ == "PROPN" and x.ent_type_ != "NORP" for x in tokens[1:]):
        return True         # a name all of whose words are capitalised ("One Piece", "Natural Language Understanding");
                            # not a count or a quality of people or things ("Three Japanese soldiers", "Many Americans")
    return len(tokens) > 1 and t.pos_ in ("NUM", "ADJ", "VERB") and t.text[:1].isupper() \
        and tokens[1].text[:1].isupper() and tokens[1].pos_ == "PROPN" and t.text in _case_vocab(t.doc)[1]


def _case_vocab(doc) -> tuple[set[str], set[str]]:
    """(words the passage writes in lower case, words it writes with a capital inside a sentence:
    "the Roman state", "ten seasons of Friends" - names, whose capital a sentence start does not
    explain), computed once per parsed passage."""
    key = id(doc)
    hit = _CASES.get(key)
    if hit is None or hit[0] is not doc:
        lower = {t.text for t in doc if t.text.islower()}
        upper = {t.text for t in doc if t.text[:1].isupper() and t.i != t.sent.start and not doc[t.i - 1].is_punct}
        hit = (doc, lower, upper)
        if len(_CASES) > 512:
            _CASES.clear()
        _CASES[key] = hit
    return hit[1], hit[2]


_CASES: dict[int, tuple] = {}


def np_tokens(head, max_words: int = 7, scoped: bool = True, restrict: bool = False) -> list:
    """The noun phrase of ``head`` without relative clauses, appositions or parentheticals;
    too long -> determiner + compounds/adjectives + head. Empty when what is dropped is the phrase's content:
    a rank's scope ("the first person (to walk on the Moon)"; kept with ``scoped=False``, for a definition's
    answer that its sentence follows) or a noun's complement clause ("a tendency (to see the worst)").
    ``restrict``: a common noun keeps the short phrase that says which one (:func:`_restrictive_pp`: "a tornado in
    the vicinity of Reform", "temperatures in July"); for a question's subject, which names what it asks about."""
    doc = head.doc
    if head.pos_ == "PROPN" and head.i + 2 < len(doc) and doc[head.i + 1].text == ":" and any(
            c.dep_ == "appos" and c.pos_ == "PROPN" and c.left_edge.i == head.i + 2 for c in head.children):
        return []           # a title and its subtitle ("Fairy Tail: Zeref Awakens"): the part before the colon is
                            # another work ("When was Fairy Tail released?" answered with the sequel's date)
    drop: set[int] = set()
    coord = [c for c in head.children if c.dep_ in ("cc", "conj") and c.i > head.i]
    keep_coord = any(c.dep_ == "conj" for c in coord) and \
        sum(len(list(c.subtree)) for c in coord) <= max(0, max_words - 2) and \
        not any(t.text in "()[];:\"—–" for c in coord for t in c.subtree)
    of_kept = {i for c in head.children if c.dep_ == "prep" for i in _of_core(c, head) | _name_tail(c, head)}
    which = _restrictive_pp(head) if restrict else set()
    if which and len(np_tokens(head, max_words, scoped)) + len(which) > max_words:
        which = set()       # the phrase with it would be cut short: without it, as before
    for c in head.children:
        if c.dep_ == "appos" and _name_part(c, head):
            continue
        if c.tag_ == "HYPH" and head.doc[c.i - 1].whitespace_ == "" and c.whitespace_ == "":
            continue        # the hyphen inside a word: "a powerful plug-in" (not "in")
        if keep_coord and c in coord:
            continue        # "between West Berlin and East Germany", "Wellington and Forsythia": both conjuncts
        if c.dep_ == "amod" and c.tag_ == "VBN" and any(x.dep_ in ("nsubj", "nsubjpass") for x in c.children):
            return []       # a participle with a subject of its own is a misparse: "a video game tie-in titled Captain
                            # America" read as "[in] titled Captain America" gave "Who announced titled Captain America?"
        if c.dep_ == "amod" and c.i > head.i:
            drop.update(t.i for t in c.subtree)     # "relationships similar (to ...)": a post-nominal adjective
            continue                                # needs its complement
        if c.dep_ in _SKIP_CHILD or c.dep_ not in _NP_KEEP and c.dep_ != "prep":
            drop.update(t.i for t in c.subtree)
        elif c.dep_ == "prep" and (c.lower_ != "of" or len(list(c.subtree)) > 4):
            drop.update(t.i for t in c.subtree if t.i not in of_kept and t.i not in which)
    toks = [t for t in head.subtree if t.i not in drop and not t.is_space]
    # cut at brackets or dashes
    if any(t.text in "()[]—–;:\"" for t in toks):
        toks = [t for t in head.subtree if t.i in _modifiers(head, ("det", "compound", "amod", "poss"))
                or t.i == head.i or t.i in of_kept]
        start = _contiguous(toks, head)[0].i
        if any(c.dep_ in ("compound", "amod", "poss", "nmod") and c.i < start for c in head.children):
            return []       # a bracket inside the name: "The Bachelor of Architecture (B. Arch.) degree" is no
                            # "degree" ("Is degree a professional degree?")
    toks = _contiguous(toks, head)
    if len(toks) > max_words:
        keep = {head.i} | _modifiers(head, ("det", "compound", "poss", "amod", "nummod")) | of_kept
        toks = _contiguous([t for t in head.subtree if t.i in keep], head)
        cut = {c.i for c in head.children if c.i < head.i} - {t.i for t in toks}
        if any(head.doc[i].dep_ == "nummod" or head.doc[i].ent_type_ in ("ORDINAL", "CARDINAL") for i in cut):
            return []       # a count or a rank cut from its noun: "the first three or four years" is no "the years"
        poss = next((head.doc[i] for i in cut if head.doc[i].dep_ == "poss"), None)
        if poss is not None:
            # a possessor cut from its noun leaves no determiner: "backend pool of worker nodes" of "the listeners'
            # backend pool of worker nodes"; the possessor's "the" stands in for it ("the Fox Box programming block"
            # of "the Fox network's Fox Box programming block")
            the = next((c for c in poss.children if c.dep_ == "det" and c.lower_ == "the"), None)
            if the is None or not toks:
                return []
            toks = [the] + toks
    if toks and toks[0].i > 0 and toks[0].doc[toks[0].i - 1].tag_ == "HYPH" \
            and toks[0].doc[toks[0].i - 1].whitespace_ == "":
        return []           # half of a hyphenated word: "winning 1972 TV movie" of "Bill Cosby's Emmy-winning 1972 TV
                            # movie"
    det = next((c for c in head.children if c.dep_ == "det" and c.i < head.i), None)
    if toks and det is not None and det.i < toks[0].i and (
            det.lower_ not in ("a", "an") or (head.tag_ not in ("NNS", "NNPS")
                                              and (det.lower_ == "an") == (toks[0].lower_[:1] in "aeiou"))):
        toks = [det] + toks     # "a planet-like natural satellite" from "a relatively large, terrestrial, ..."
                                # (not "an reputation" from "an iconic reputation", "a minutes" from "a few minutes")
    if toks and toks[0].lower_ == "the" and _article_of_a_longer_name(head, {t.i for t in toks}):
        toks = toks[1:]
    while toks and toks[-1].pos_ == "PUNCT":
        toks = toks[:-1]
    while toks and toks[0].pos_ == "PUNCT":
        toks = toks[1:]
    if _needs_of(head) and not any(t.lower_ == "of" and t.head.i == head.i for t in toks):
        return []           # "a series", "52.1%" without "of epidemics" / "of the workforce" say nothing
    kept = {t.i for t in toks}
    if head.lemma_.lower() in _SCALE_HEADS and any(c.dep_ == "prep" and c.i not in kept for c in head.children):
        return []           # a measure without what it measures: "a significantly higher rate (in eating disorders)"
    if any(t.i != head.i and (t.lemma_.lower() in _MEASURES | _OF_HEADS or t.lower_ in _QUANTIFIER_PRONOUNS) and any(
            c.dep_ == "prep" and c.lower_ == "of" and c.i not in kept for c in t.children) for t in toks):
        return []           # a measure without what it measures: "hundreds of kilograms (of these metals)"; a
                            # quantifier without its set: "the flower of any (of several trees)"
    ranked = any(c.dep_ in ("amod", "advmod") and (c.tag_ == "JJS" or c.ent_type_ == "ORDINAL"
                                                   or c.lower_ in ("first", "last", "only", "next"))
                 for c in head.children)
    if scoped and ranked and any(c.i not in kept and c.dep_ in ("acl", "relcl", "prep") for c in head.children):
        return []           # a rank needs its scope: "the first person (to walk on the Moon)", "the longest river
                            # (in Africa)", "the fourth state (to join the union)"
    if head.lemma_.lower() in _COMPLEMENT_HEADS and any(
            c.i not in kept and (c.dep_ in ("acl", "relcl") and any(x.lower_ in ("to", "that") for x in c.children)
                                 or c.dep_ == "prep" and any(x.tag_ == "VBG" for x in c.children)) for c in head.children):
        return []           # "a tendency (to see the worst)", "a habit (of having ...)", "the hope (that Italy could
                            # establish a colony)": the complement is the content
    return toks


def _article_of_a_longer_name(head, kept: set[int]) -> bool:
    """``head`` is a singular proper name whose "the" belongs to a longer phrase the parser split after it: "the Red Hat
    OpenShift on IBM Cloud console" read as "the [Red Hat OpenShift] [on IBM Cloud console]" - the phrase cut after the
    name would say "in the Red Hat OpenShift" where the text writes "Red Hat OpenShift" bare. The sign: a dropped
    preposition after the name whose object is a common noun led by proper-name compounds ("IBM Cloud console")."""
    if head.tag_ != "NNP":
        return False
    for c in head.children:
        if c.dep_ != "prep" or c.i < head.i or c.i in kept:
            continue
        obj = next((x for x in c.children if x.dep_ == "pobj"), None)
        if obj is not None and obj.tag_ == "NN" and obj.i > 0 and obj.doc[obj.i - 1].dep_ == "compound" \
                and obj.doc[obj.i - 1].pos_ == "PROPN" and obj.doc[obj.i - 1].head.i == obj.i \
                and not any(x.dep_ == "det" for x in obj.children):
            return True
    return False


# nouns whose content is their complement clause ("a tendency to ...", "the ability to ...", "a habit of ...ing")
_COMPLEMENT_HEADS = {"reason", "tendency", "habit", "ability", "inability", "capacity", "right", "chance", "need",
                     "decision",
                     "plan", "attempt", "effort", "desire", "way", "opportunity", "power", "freedom", "permission",
                     "authority", "intention", "wish", "willingness", "failure", "refusal", "obligation", "option",
                     "possibility", "reluctance", "tradition", "practice", "goal", "aim", "task", "job", "mission",
                     "hope", "belief", "expectation", "attempt", "effort", "bid", "plan", "intention", "order"}


# heads that say nothing without their "of" phrase ("a series of epidemics", "52.1% of the workforce")
_OF_HEADS = {"%", "percent", "number", "series", "lot", "couple", "majority", "minority", "part", "group", "set",
             "range", "variety", "kind", "type", "sort", "member", "members", "half", "rest", "total", "share",
             "portion", "amount", "one", "some", "most", "all", "many", "each", "none", "both", "bunch", "pair",
             "example", "examples", "instance", "instances",     # "many examples (of the arcus quadrifrons)"
             "average", "maximum", "minimum"}                    # "an average (of four to five years)"
# places in or on something, which say nothing without their "of" phrase either: "in the hands (of the Allies)", "at the
# end (of the war)" (as an object they are an answer: "What did the army reach?" - "the outskirts of Moscow")
_PLACE_OF_HEADS = {"hands", "side", "end", "top", "bottom", "front", "middle", "beginning", "edge", "center", "centre",
                   "wake", "eve", "outskirts", "foot"}
# heads that are a measure of what their phrase names, in whatever preposition: "a higher rate (in eating disorders)"
_SCALE_HEADS = {"rate", "level", "percentage", "proportion", "ratio", "incidence", "prevalence", "frequency", "risk"}


_MEASURES = {"kilogram", "gram", "tonne", "ton", "pound", "ounce", "litre", "liter", "gallon", "barrel", "metre",
             "meter", "kilometre", "kilometer", "mile", "foot", "inch", "acre", "hectare", "dozen", "hundred",
             "thousand", "million", "billion", "cup", "bottle", "piece", "unit", "dose"}


def _needs_of(head) -> bool:
    return head.lower_ in _OF_HEADS | _PLACE_OF_HEADS and any(c.dep_ == "prep" and c.lower_ == "of"
                                                              for c in head.children)


def _of_core(prep, head) -> set:
    """"of" and the core of the object of a head's "of" phrase (determiner, compounds, adjectives, head: "of
    epidemics" from "of epidemics, which ..."; "the use of the resources" from "the use of the resources and
    services that ..."), when they follow the head directly; empty otherwise. A head's "of" phrase is its
    argument: without it "the use", "a series" say nothing."""
    if prep.lower_ != "of":
        return set()
    pobj = next((x for x in prep.children if x.dep_ == "pobj"), None)
    if pobj is None:
        return set()
    core = [t for t in pobj.subtree if t.i == pobj.i or (t.head.i == pobj.i and t.dep_ in ("det", "compound", "amod"))]
    core = _contiguous(core, pobj)
    if not core or core[0].i != prep.i + 1 or len(core) > 4:
        return set()
    return {prep.i} | {t.i for t in core}


def _name_tail(prep, head) -> set:
    """The indexes of a proper name's own "of"/"for" phrase, every word of it a capitalised name word ("the American
    Society (for Reproductive Medicine)", "the Department of Health (and Human Services)"): cut there, the name is
    another one ("the American Society"). Empty otherwise."""
    if head.tag_ not in ("NNP", "NNPS") or prep.lower_ not in ("of", "for") or prep.i != head.i + 1:
        return set()
    sub = list(prep.subtree)[1:]
    if not sub or len(sub) > 5 or not all(t.tag_ in ("NNP", "NNPS") and t.text[:1].isupper()
                                          or t.lower_ in ("and", "of", "the", "&") for t in sub) \
            or sub[-1].tag_ not in ("NNP", "NNPS"):
        return set()
    return {prep.i} | {t.i for t in sub}


_RESTRICT_PREPS = {"in", "on", "at", "from", "with", "for", "between", "under", "within", "during", "near", "among",
                   "against", "about", "inside", "outside", "across", "over", "behind", "beyond", "without"}


def _restrictive_pp(head) -> set:
    """The indexes of the short prepositional phrase right after a common-noun head that says which one it is
    ("temperatures (in July)", "a tornado (in the vicinity of Reform)", "potential difficulties (with primary
    sources)", "the Indian economy (under the British Raj)"): without it the question asks of something else or of
    nothing ("Are the temperatures approximately 90 °F?", "Did a tornado damage two homes?"). Empty for a name
    (it says which one alone), a phrase of over five words, one with a clause, punctuation or a pronoun ("in it",
    "with their parents": the passage's referents), or an object that is no noun."""
    if head.pos_ != "NOUN" or any(c.pos_ == "PROPN" and c.dep_ == "compound" for c in head.children):
        return set()
    right = max([head.i] + [t.i for c in head.children if c.i < head.i or c.dep_ in ("compound", "amod")
                            and c.i > head.i for t in c.subtree])
    prep = next((c for c in head.children if c.dep_ == "prep" and c.i == right + 1), None)
    if prep is None or prep.lower_ not in _RESTRICT_PREPS:
        return set()
    sub = list(prep.subtree)
    pobj = next((x for x in prep.children if x.dep_ == "pobj"), None)
    if pobj is None or pobj.pos_ not in ("NOUN", "PROPN") or len(sub) > 6 or sub[-1].i - sub[0].i + 1 != len(sub) \
            or any(t.is_punct and t.text not in ("-", "'s", "’s") or t.pos_ in ("VERB", "AUX", "PRON", "SCONJ")
                   or t.lower_ in ("this", "that", "these", "those", "such") for t in sub):
        return set()
    return {t.i for t in sub}


def _name_part(appos, head) -> bool:
    """An "apposition" the parser found right after its head with no comma, bracket or dash between
    them is part of one name ("The Government of India Act 1935", "the company Microsoft"): dropping it
    would cut the name short ("What was the Government of India?")."""
    sub = list(appos.subtree)
    start = sub[0].i
    return appos.i > head.i and start > 0 and not head.doc[start - 1].is_punct and len(sub) <= 4 \
        and not any(t.is_punct for t in sub)


def _modifiers(head, deps: tuple[str, ...]) -> set[int]:
    """Token indexes of ``head``'s children of the dependency labels ``deps``, a compound with its own compounds
    ("the Fox Box programming block": "Box" with its "Fox"; a name is not cut in two), a possessor that starts
    a capitalised name with its whole phrase ("the Women's National Basketball Association": "Women" with "the"
    and "'s"; cut at the "'s", the name became another one, "National Basketball Association"). A possessor
    before a common noun may still go ("the Fox network's Fox Box programming block" -> "Fox Box programming
    block")."""
    out = set()
    doc = head.doc
    for c in head.children:
        if c.dep_ in deps:
            out.add(c.i)
            if c.dep_ == "compound":
                out.update(t.i for t in c.subtree if t.dep_ == "compound")
            elif c.dep_ == "poss" and c.i < head.i and all(
                    doc[i].text[:1].isupper() or doc[i].dep_ == "case" for i in range(c.i, head.i + 1)):
                out.update(t.i for t in c.subtree if not t.is_space)
    return out


def _stray_object(verb, obj) -> bool:
    """An object the parser hung on the verb across a comma or a conjunction ("It deals with Luffy and his team
    rescuing Sanji ..., and Big Mom's family": "family" is no object of "deals"): :func:`_vp` then gives no
    question of the clause ("What does it deal with Luffy?" would ask nothing the sentence says)."""
    return any(t.head.i == verb.i and (t.dep_ == "cc" or t.text in ",;") for t in verb.doc[verb.i + 1:obj.i])


def _contiguous(toks: list, head) -> list:
    """The contiguous run of ``toks`` around ``head`` (a phrase with a hole reads badly)."""
    idx = sorted(t.i for t in toks)
    if not idx:
        return []
    pos = idx.index(head.i) if head.i in idx else 0
    lo = hi = pos
    while lo > 0 and idx[lo - 1] == idx[lo] - 1:
        lo -= 1
    while hi + 1 < len(idx) and idx[hi + 1] == idx[hi] + 1:
        hi += 1
    doc = head.doc
    return [doc[i] for i in idx[lo:hi + 1]]


def _ent_span(tok) -> list:
    """The named-entity span containing ``tok`` (else its subtree)."""
    for e in tok.doc.ents:
        if e.start <= tok.i < e.end:
            return list(e)
    return [t for t in tok.subtree if not t.is_space]


def _ent_of(tok) -> str:
    return tok.ent_type_ or ""


def _kind(head) -> str:
    if head.ent_type_ == "PERSON" or _a_persons_surname(head):
        return "PERSON"
    agree = _agreement(head)
    if agree is not None:
        return agree       # the sentence's own verb says it: "Kubernetes provides ..." is one thing (it), and so is
                           # a title with "and" ("Romeo and Juliet is ...")
    if any(c.dep_ == "conj" for c in head.children):
        return "PLUR"
    if head.tag_ in ("NNS", "NNPS"):
        return "PLUR"
    t = head.text
    if head.tag_ == "NNP" and len(t) > 3 and t[:1].isupper() and t[1:].islower() and t.endswith("s") \
            and not t.endswith(("ss", "us", "is")) and not any(c.dep_ == "compound" for c in head.children) \
            and re.search(rf"\b{re.escape(t.lower())}\b", head.doc.text):
        return "PLUR"       # a capitalised plural the text also writes in lower case ("The Developers ...": they)
    return "SING"


def _a_persons_surname(head) -> bool:
    """A one-word name that the passage writes as the last word of a person's full name ("Roosevelt" after "Franklin
    D. Roosevelt"), whatever the tagger made of it alone (a place, an organisation): "he", never "it"."""
    if head.pos_ != "PROPN" or head.ent_type_ not in ("", "GPE", "ORG", "NORP") \
            or any(c.dep_ == "compound" for c in head.children):
        return False
    return any(e.label_ == "PERSON" and len(e) > 1 and e[-1].text == head.text for e in head.doc.ents)


def _agreement(head) -> str | None:
    """SING / PLUR as the finite verb of the clause ``head`` is the subject of agrees with it ("Kubernetes
    provides": SING although the tagger reads a plural noun; "The Panthers are": PLUR); None when ``head`` is
    no subject or its verb shows no number (a past tense, a modal)."""
    if head.dep_ not in ("nsubj", "nsubjpass"):
        return None
    verb = head.head
    finite = [c for c in verb.children if c.dep_ in ("aux", "auxpass") and c.i > head.i] or [verb]
    return {"VBZ": "SING", "VBP": "PLUR"}.get(finite[0].tag_) or {"was": "SING", "were": "PLUR"}.get(finite[0].lower_)


_PREFIXES = ("under", "over", "with", "out", "fore", "mis", "re", "up", "be")    # "undertake" -> "undertook"

# "by default", "by design": a manner, not an agent ("disabled by default" gives no "What disables ...?")
_BY_IDIOMS = {"default", "design", "means", "hand", "mistake", "chance", "accident", "far", "nature", "name", "law",
              "definition", "convention"}


def _verb_past(lemma: str) -> str:
    if lemma in IRREGULAR_PAST:
        return IRREGULAR_PAST[lemma]
    for pre in _PREFIXES:
        if lemma.startswith(pre) and lemma[len(pre):] in IRREGULAR_PAST and len(lemma) - len(pre) >= 2 \
                and lemma not in ("relay", "belay"):       # (regular verbs that only look prefixed)
            return pre + IRREGULAR_PAST[lemma[len(pre):]]
    if lemma.endswith("e"):
        return lemma + "d"
    if re.search(r"[^aeiou]y$", lemma):
        return lemma[:-1] + "ied"
    return lemma + "ed"


def _verb_3sg(lemma: str) -> str:
    if lemma == "have":
        return "has"
    if re.search(r"(s|sh|ch|x|z|o)$", lemma):
        return lemma + "es"
    if re.search(r"[^aeiou]y$", lemma):
        return lemma[:-1] + "ies"
    return lemma + "s"


# -- clause reading ---------------------------------------------------------------------------
@dataclass
class Clause:
    verb: object
    subj: object | None
    subj_toks: list
    auxes: list
    passive: bool
    comps: list           # [(child token, tokens)] in sentence order


# a manual's labels before a colon ("Optional: Prints ...", "Note: ..."): no subject of their sentence
_LABELS = {"optional", "required", "note", "notes", "important", "tip", "tips", "warning", "caution", "attention",
           "example", "examples", "default", "description", "details", "prerequisite", "prerequisites", "restriction",
           "restrictions", "limitation", "limitations", "result", "results", "output", "input"}


def _resolve_subject(subj, antecedents: dict) -> tuple[list, str] | None:
    """The subject's NP tokens (or the antecedent NP's text for a pronoun) and its kind."""
    low = subj.lower_
    if subj.pos_ in ("VERB", "AUX") and subj.tag_ in ("VBZ", "VBD", "VBP", "VB"):
        return None     # a finite verb parsed as the subject: "... exemplifies ..." gives no "Did exemplifies write
                        # ...?"
    if low in PRONOUNS:
        if low in ("he", "she"):
            ant = antecedents.get("PERSON")
            if "LAST" in antecedents and antecedents["LAST"] != ant:
                return None   # the previous sentence's subject was someone/something else: "he" is ambiguous
        elif low == "this":
            return None       # "This, according to critics, took out ...": an event or a claim, not the last subject
        elif low == "it":
            if subj.head.lemma_ in ("be", "take", "seem", "appear", "become") and \
                    any(c.dep_ in ("xcomp", "ccomp", "csubj") for c in subj.head.children):
                return None   # expletive "it": "It is normal to create and delete keys often."
            ant = antecedents.get("SING")
        elif low in ("they", "these"):
            ant = antecedents.get("PLUR")
            if ant and "LAST" in antecedents and (antecedents["LAST"] or "").lower() != ant.lower():
                return None   # the previous sentence's subject was something else: "At the town they meet ..." two
                              # sentences after "the inmates" is about Rick and his group
        else:
            ant = None
        return (ant, PERSONAL.get(low, "SING")) if ant else None
    if subj.ent_type_ in ("CARDINAL", "PERCENT", "QUANTITY") and subj.pos_ != "PROPN":
        return None     # an amount as the subject ("one-sixth of India's population lived ..."): its head says nothing
                        # alone ("Where did sixth live?"), and the amount is what the sentence states
    doc = subj.doc
    if subj.pos_ == "PROPN" and subj.i + 2 < len(doc) and doc[subj.i + 1].text in ("--", "-", "–", "—") \
            and doc[subj.i + 2].pos_ == "PROPN":
        return None     # half of a name joined by a dash: "The India -- Pakistan nuclear rivalry" is no "the India"
    toks = np_tokens(subj, restrict=True)
    if not toks or (len(toks) == 1 and toks[0].lower_ in _LABELS and toks[0].text[:1].isupper()):
        return None     # a label ("Optional: ...", "Note: ..."), not what the sentence is about: "What does Optional
                        # filter out?"
    if len(toks) > 1 and toks[0].ent_type_ == "DATE" and re.fullmatch(r"\d{4}", toks[0].text) \
            and toks[0].dep_ in ("nummod", "compound", "amod"):
        return None     # a year the parser hung on the subject where the sentence left out its comma: "In 1992
                        # Reserve Bank of India issued ..." gives no "What did 1992 Reserve Bank of India issue?"
    if subj.lower_ == "ones" or (len(toks) == 2 and toks[0].lower_ == "the" and subj.lemma_.lower() in _ANAPHORIC_HEADS):
        return None     # a noun that stands for one said before: "The principal ones include ...", "the result was
                        # ..." (of what, the sentence before says)

    name = (antecedents.get("TITLE") or "").lower().split()
    if len(toks) < len(name) and [t.lower_ for t in toks] == name[:len(toks)] \
            and detokenize(" ".join(t.text for t in subj.subtree)).lower().split() == name:
        return antecedents["TITLE"], "SING"     # the page's name the parser split ("Jack" + "in the Box"): asked
                                                # whole, never "Is Jack ...?"
    if any(c.dep_ == "conj" for c in subj.children) and not any(t.dep_ == "conj" for t in toks):
        return None     # "The FIBA Basketball World Cup and Men's Olympic ... are": half a subject says it wrong
    poss = [t for t in toks if t.dep_ == "poss" and t.lower_ in ("its", "their", "his", "her")]
    if poss:        # "its demolition" -> "the demolition of the Berlin Wall"
        ant = antecedents.get("PERSON" if poss[0].lower_ in ("his", "her") else
                              "PLUR" if poss[0].lower_ == "their" else "SING")
        if not ant or poss[0].i != toks[0].i:
            return None
        rest = [t.text for t in toks[1:]]
        return " ".join(["the", *rest, "of", ant]), _kind(subj)
    if any(t.lower_ in PRONOUNS and t.dep_ in ("poss", "det") and t.lower_ not in ("that",) for t in toks):
        return None
    if any(t.tag_ in ("WDT", "WP", "WP$") for t in toks):
        return None     # a relative clause's subject: "use of which" gave "Is use of which a specified fraction ...?"
    page = _page_description(toks, antecedents)
    if page:
        return page, "SING"      # "The film passed $1 billion" on the Incredibles 2 page: Incredibles 2 did
    if _points_back(toks):
        return None   # "this ephemeris second", "such donors": which one, the sentence before says
    if subj.pos_ == "ADJ" and (subj.tag_ in ("JJS", "JJR") or subj.lower_ in _ELLIPTIC_HEADS) \
            and not any(c.dep_ == "prep" and c.lower_ == "of" for c in subj.children):
        return None   # an adjective standing for a noun said before: "The latest called forth ...", "The first was ..."
                      # (a partitive says which: "most of Macedonia")
    if len(toks) == 1 and toks[0].lower_ in _QUANTIFIER_PRONOUNS:
        return None   # a bare quantifier: "Some hunted dodos only for their gizzards" (who, the sentence before says;
                      # no "Did some hunt dodos for their gizzards?"); "Most of Macedonia", "Some people" say who
    return toks, _kind(subj)


_QUANTIFIER_PRONOUNS = {"some", "many", "most", "few", "several", "others", "all", "both", "each", "none", "any",
                        "either", "neither", "one", "little", "much"}
_ANAPHORIC_HEADS = {"result", "outcome", "consequence", "aftermath", "remainder", "rest"}   # ("the latter": _points_back)


_ELLIPTIC_HEADS = {"first", "second", "third", "fourth", "fifth", "last", "former", "latter", "next", "previous",
                   "other", "same"}


def read_clause(sent) -> Clause | None:
    root = sent.root
    if root.pos_ not in ("VERB", "AUX"):
        return None
    if not root.text.isalpha() or (root.text[:1].isupper() and root.i != sent.start):
        return None     # a name or a label read as the verb: "giving this identity the name Org1 MSP Admin" gave
                        # "What did the name Org1?"
    if root.i >= 2 and root.doc[root.i - 1].text in ("-", "–") and not root.doc[root.i - 2].whitespace_:
        return None     # the last part of a hyphenated verb: "co-ordinates" gave "What does the Programme ordinate?"
    subjs = [c for c in root.children if c.dep_ in ("nsubj", "nsubjpass")]
    if len(subjs) > 1:
        return None     # two subjects of one verb: a misparse ("Two paintings ... depict peasants curling; Scotland
                        # and the Low Countries had strong links" gives no "What did two paintings have?")
    if any(c.dep_ == "ccomp" and c.i < root.i and c.lemma_ == "be"
           and all(x.dep_ in ("expl", "punct") for x in c.children) for c in root.children):
        return None     # a bare existential hung before the root: "There are two Friends themed cafes in Pakistan" read
                        # as "[There are] two Friends themed cafes" (no "Where did two Friends theme cafes?")
    subj = subjs[0] if subjs else None
    auxes = [c for c in root.children if c.dep_ in ("aux", "auxpass") and c.i < root.i]
    if any(a.tag_ == "TO" for a in auxes):
        return None     # an infinitive is no clause: "Virtual Network Functions in combination with ... to support a
                        # high availability" (no "What to Virtual Network Functions support?")
    passive = any(c.dep_ == "auxpass" for c in root.children)
    comps = []
    for c in root.children:
        if c is subj or c in auxes or c.dep_ in _SKIP_CHILD or c.is_space:
            continue
        if c.i < root.i and c.dep_ not in ("neg",):
            continue                # fronted modifiers ("During this period, ...") are context, not content
        if c.dep_ == "advmod" and (c.lower_ in _BAD_ADV or len(list(c.subtree)) > 1):
            continue
        if c.dep_ == "npadvmod" and c.ent_type_ != "DATE" and c.left_edge.i == root.i + 1 and root.pos_ == "VERB":
            return None             # "Turkey scrapped winter time, by ...": the object read as a modifier
        if c.dep_ in ("npadvmod", "nsubj", "nsubjpass", "dative") and c.ent_type_ != "DATE":
            continue
        comps.append(c)
    return Clause(verb=root, subj=subj, subj_toks=[], auxes=auxes, passive=passive, comps=comps)


def _comp_tokens(c, limit: int) -> list | None:
    """A complement's tokens (object NPs trimmed like subjects); None when too long."""
    if c.dep_ in ("dobj", "attr", "oprd"):
        toks = np_tokens(c, max_words=limit + 2)
        limit += 2
        kept = {t.i for t in toks}
        if c.pos_ == "ADJ" and any(x.dep_ == "prep" and x.i not in kept for x in c.children):
            return None         # "the next (to last state ...)": an adjective needs its complement
    elif c.dep_ in ("prep", "agent"):
        pobj = next((x for x in c.children if x.dep_ in ("pobj", "pcomp")), None)
        if pobj is None:
            return None
        if pobj.dep_ == "pobj" and _continues_after_bracket(pobj):
            return None         # the phrase goes on after a bracket: "to the opposing (usually defending) team"
        inner = np_tokens(pobj, max_words=limit - 1) if pobj.dep_ == "pobj" else [t for t in pobj.subtree]
        if not inner:
            return None         # the object said nothing without what was cut: no "... with?" from "with plans to ..."
        if c.lower_ in ("between", "among") and pobj.tag_ not in ("NNS", "NNPS") and \
                not any(t.dep_ == "conj" for t in inner):
            return None         # "between" needs two: "between West Berlin and East Germany", not "between West Berlin"
        if _half_said(c, inner):
            return None
        toks = [c] + inner
    else:
        toks = [t for t in c.subtree if not t.is_space]
        if any(t.dep_ == "conj" and t.pos_ in ("VERB", "AUX") and any(x.dep_.startswith("nsubj") for x in t.children)
               for t in toks):
            return None         # a clause of its own coordinated into the complement: "The dog was immediately popular
                                # and breeding continued" gives no "Was it immediately popular and breeding continued?"
    if not toks or len(toks) > limit or any(t.text in "()[];:\"" for t in toks):
        return None
    kept = {t.i for t in toks}
    if any(t.lower_ == "same" for t in toks) and any(t.lower_ == "as" and t.i not in kept for t in c.subtree):
        return None             # "the same version (as the master)": the same as what, the cut part says
    if any(x.dep_ in ("acl", "ccomp") and x.i not in kept and any(m.dep_ == "mark" and m.lower_ == "that"
                                                                  for m in x.children)
           for t in toks for x in t.children):
        return None             # a noun cut from the clause that says what it is: "employ the idea (that identity is
                                # fluid)"
    return toks


def _continues_after_bracket(tok) -> bool:
    """``tok`` is followed by a bracketed aside and then by a noun: the phrase the parser cut at the bracket goes on
    after it ("the opposing (usually defending) team")."""
    doc = tok.doc
    if tok.i + 1 >= len(doc) or doc[tok.i + 1].text != "(":
        return False
    close = next((t.i for t in doc[tok.i + 1:tok.i + 12] if t.text == ")"), None)
    return close is not None and close + 1 < len(doc) and doc[close + 1].pos_ in ("NOUN", "PROPN")


_RANGE_ENDS = {"to", "until", "till", "through", "down", "up"}
_BOUND_PREPS = {"with", "to", "for"}


def _half_said(prep, inner: list) -> bool:
    """The phrase ``prep`` + ``inner`` (its object as kept) says half of something: a range cut before its end
    ("from the cities of Albany (and Troy southward to Yonkers)", "declined from 419 million pounds (... down to 240
    million)"), a comparison cut before its standard ("from as far north (as Troy)"), a bare noun cut from its "of"
    phrase ("in service")."""
    kept = {t.i for t in inner}
    if prep.lower_ == "from":
        head = prep.head
        if any(t.lower_ in _RANGE_ENDS and t.dep_ in ("prep", "quantmod") and t.i > prep.i and t.i not in kept
               for t in head.subtree):
            return True
    pobj = next((x for x in prep.children if x.dep_ == "pobj"), None)
    if pobj is not None and pobj.i in kept and not any(x.dep_ in ("det", "poss") for x in pobj.children) \
            and any(x.dep_ == "prep" and x.i not in kept and (x.lower_ == "of" or x.lower_ in _BOUND_PREPS
                                                              and (pobj.tag_ == "NN" and prep.lower_ in ("in", "on")
                                                                   or pobj.tag_ == "NNS"))
                    for x in pobj.children):
        return True     # a bare noun without its "of" phrase: "in service (of Bulgaria's war ...)", or a bare singular
                        # noun without the phrase it is bound to: "in alliance (with France)", "in response (to ...)", a bare
                        # plural without its own: "from problems (with fecundity)" (not "for revenge
                        # (with a bag ...)")
    return any(t.lower_ == "as" and t.dep_ == "advmod" for t in inner) and \
        not any(t.lower_ in ("as", "than") and t.dep_ == "prep" for t in inner)


def _vp(clause: Clause, skip: set[int], limit: int = 12) -> list[str] | None:
    """The words after the verb: complements in sentence order, without the asked-for one."""
    out: list[str] = []
    if any(c.dep_ in ("ccomp", "csubj") and c.i > clause.verb.i for c in clause.verb.children):
        return None                 # "announced that ..." - the question would lose its object
    if any(sum(c.dep_ == d for c in clause.comps) > 1 for d in ("dobj", "oprd", "attr")):
        return None                 # two objects of one verb: a misparse ("not only restricted the number
                                    # ..., but also assigned slots" -> "What did X restrict the number?"; "was named
                                    # Sita, the Sanskrit word for furrow" -> "Was the child named Sita the Sanskrit word?")
    if any(c.dep_ == "dobj" and _stray_object(clause.verb, c) for c in clause.comps):
        return None                 # a misparsed object: "deals with Luffy ..., and Big Mom's family"
    if any(len({t.i for t in c.subtree}) != c.right_edge.i - c.left_edge.i + 1 for c in clause.comps):
        return None                 # a complement whose words interleave with another's is a misparse
    if any(t.dep_ == "conj" and (t.pos_ == "NUM") != (t.head.pos_ == "NUM") for c in clause.comps for t in c.subtree):
        return None                 # so is a number coordinated with a word: "reaches its best value at 1 and worst
                                    # value at 0" read as "at (1 and worst) value"
    kept: set[int] = set()
    for c in sorted(clause.comps, key=lambda x: x.i):
        if c.i in skip:
            continue
        if c.dep_ in ("neg", "prt"):
            out.append(c.text)
            continue
        if c.dep_ == "prep" and c.lower_ in ("than", "as", "like", "unlike", "despite", "including"):
            return None             # comparisons and asides do not survive losing their context
        if c.dep_ == "prep" and any(x.dep_ == "pobj" and x.lower_ in ("example", "instance") for x in c.children):
            continue                # "for example" introduces what the passage shows next: no part of the question
        if c.dep_ == "prep" and c.i > 0 and c.doc[c.i - 1].text in ("--", "—", "–", "-", "("):
            continue                # an aside between dashes: "takes out the Heart of the Ocean -- in her possession
                                    # all along --" (no "Who takes ... out in her possession all along?")
        toks = _comp_tokens(c, 6)
        if toks is not None and (_points_back(toks) or any(t.lower_ in _OBJ_PRONOUNS and t.dep_ in ("dobj", "pobj", "dative")
                                                           for t in toks) or _others_its(toks, clause.subj)):
            toks = None             # "this song", "such donors", "to cast him": points into the passage, unknown
                                    # to the asker
        if toks is None:
            if c.dep_ == "prep" and any(x.dep_ == "pobj" and x.lower_ in _PLACE_OF_HEADS for x in c.children):
                return None         # "left the decisions in the hands (of his economic experts)": the place is the
                                    # point, no "Did Stalin leave most economic wartime management decisions?"
            if c.dep_ in ("dobj", "attr", "acomp", "xcomp", "oprd") or (c.dep_ == "prep" and c.i == clause.verb.i + 1):
                return None        # an essential complement we cannot shorten ("accounted for about 52.1% of ...")
            continue
        out.extend(t.text for t in toks)
        kept |= {t.i for t in toks}
        if len(out) > limit:
            return None
    if _half_a_range(clause, kept):
        return None
    return out


def _half_a_range(clause: Clause, kept: set[int]) -> bool:
    """One end of a "from X to Y" range of the verb kept without the other (``kept``: the indexes of the words the
    question keeps): "drops 2,690 feet from source to mouth" gives no "How many feet does the Columbia River drop to
    mouth?", "change the retention period from indefinite to finite retention" no "... change from indefinite?"."""
    v = clause.verb
    for t in v.children:
        other = {"from": "to", "to": "from"}.get(t.lower_)
        if t.dep_ != "prep" or not other or t.i not in kept:
            continue
        ends = [x for x in v.subtree if x.lower_ == other and x.i not in kept
                and (x.head.i == v.i or x.head.head.i == v.i and x.dep_ == "aux")]
        if ends:
            return True
    return False


def _others_its(toks, subj) -> bool:
    """An "its" of a plural subject ("Leaders ... have blamed colonial rule in its aftermath"): it is something else
    the passage named, unknown to the asker."""
    plural = subj is not None and (subj.tag_ == "NNS" and subj.text not in _case_vocab(subj.doc)[1]
                                   or any(c.dep_ == "conj" for c in subj.children))
    # (a name the passage capitalises inside a sentence may be one thing: "Friends received acclaim throughout its
    # run")
    return plural and any(t.lower_ == "its" and t.dep_ == "poss" for t in toks)


def _verb_group(clause: Clause, invert: bool, subj_words: list[str]) -> list[str] | None:
    """Subject and verb group in question word order: ``was <subj> built``, ``did <subj> build``."""
    v = clause.verb
    auxes = [a for a in clause.auxes]
    if auxes:
        first, rest = auxes[0], auxes[1:]
        body = subj_words + [a.text for a in rest] + [v.text]
        return [first.lower_] + body if invert else subj_words + [first.lower_] + [a.text for a in rest] + [v.text]
    if v.lemma_ == "be" or v.pos_ == "AUX":
        return [v.lower_] + subj_words if invert else subj_words + [v.lower_]
    if not invert:
        return subj_words + [v.text]
    if v.tag_ == "VBD":
        return ["did"] + subj_words + [v.lemma_]
    if v.tag_ == "VBZ":
        return ["does"] + subj_words + [v.lemma_]
    if v.tag_ in ("VBP", "VB"):
        return ["do"] + subj_words + [v.lemma_]
    return None


def _topic_from_subject(subj_words: list[str], subj_kind: str) -> tuple[str, str]:
    return " ".join(subj_words), subj_kind


def _mk(clause, sent, qtype, wh, answer_toks, skip, subj_words, subj_kind, idx, invert=True, score=1.0):
    vp = _vp(clause, skip)
    if vp is None:
        return None
    vg = _verb_group(clause, invert, ["{T}"])
    if vg is None:
        return None
    template = " ".join([wh] + vg + vp)
    topic = " ".join(subj_words)
    q = finish(template.replace("{T}", topic))
    ans = _text(answer_toks) if not isinstance(answer_toks, str) else answer_toks
    if not ans or _pointing(ans):
        return None
    return QA(question=q, qtype=qtype, answer=ans, sentence=_text(sent), template=template, topic=topic,
              topic_kind=subj_kind, topic_role="subj", verb=clause.verb.lemma_, sent_index=idx, score=score)


_DEMONSTRATIVE = {"this", "these", "those", "such"}
_OBJ_PRONOUNS = {"him", "her", "them", "it", "us", "me"}
_POINTING = {"this", "that", "these", "those", "such", "it", "they", "them", "him", "her"}


def _points_back(toks) -> bool:
    """A phrase with a demonstrative or "such" ("this song", "such donors", "of these regions"): which one,
    the passage's previous sentence says."""
    return any(t.lower_ in _DEMONSTRATIVE and t.dep_ in ("det", "amod", "predet") for t in toks) \
        or any(t.lower_ in ("latter", "former") for t in toks)      # "the latter": of two things just named


def _pointing(answer: str) -> bool:
    """An answer that only points back into the passage ("This song.", "Such donors.", "It."): it says
    nothing without the sentence before it."""
    w = answer.split()
    return bool(w) and w[0].lower() in _POINTING


_NEG_WORDS = {"not", "n't", "n’t", "never"}
_NOTHING = {"nothing", "none", "nobody", "nowhere"}


def _no_object(clause):
    """The complement that carries the clause's negation ("no founder", "nothing", "with no effect"), or None: a
    wh-question on such a clause inverts its meaning ("What did the religion have?" answered "no founder")."""
    for c in clause.comps:
        head = c if c.dep_ != "prep" else next((x for x in c.children if x.dep_ == "pobj"), None)
        if head is None or head.dep_ not in ("dobj", "attr", "oprd", "pobj"):
            continue
        if head.lower_ in _NOTHING or any(x.dep_ == "det" and x.lower_ == "no" for x in head.children):
            return head
    return None
_MODALS = {"can", "could", "will", "would", "shall", "should", "may", "might", "must"}


def _how_many_object(clause, sent, obj, num, obj_words: list[str], subj_words: list[str], subj_kind: str,
                     idx: int) -> QA | None:
    """"How many <obj_words> <verb group> <rest>?" of a counted object ``obj`` whose count is ``num``; None when the
    clause's other complements cannot be kept."""
    vp_rest = _vp(clause, {obj.i})
    vg = _verb_group(clause, True, ["{T}"])
    if vp_rest is None or vg is None:
        return None
    tmpl = " ".join(["How many"] + obj_words + vg + vp_rest)
    return QA(question=finish(tmpl.replace("{T}", " ".join(subj_words))), qtype="how_many",
              answer=_text([t for t in num.subtree]) + " " + obj.text, sentence=_text(sent), template=tmpl,
              topic=" ".join(subj_words), topic_kind=subj_kind, verb=clause.verb.lemma_, sent_index=idx, score=1.3)


def _amount_of(tok, head) -> bool:
    """``tok`` (part of an amount) says how much ``head`` is: it hangs from it through numbers and "of" only ("$6
    million", "a daily payment of $6"), not through a modifier ("a 55-cent Big Mac promotion")."""
    while tok.i != head.i:
        if tok.dep_ not in ("nummod", "quantmod", "pobj", "nmod", "compound") and not (tok.dep_ == "prep"
                                                                                      and tok.lower_ == "of"):
            return False
        if tok.head.i == tok.i or tok.dep_ == "compound" and tok.head.ent_type_ != "MONEY":
            return False    # (a compound inside the amount: "6" of "$6 million"; not the amount as a modifier)
        tok = tok.head
    return True


_EMPTY_OBJECTS = {"result", "results", "fact", "thing", "things", "way", "ways", "matter", "something", "stuff",
                  "most", "least"}     # ("has generated the most -- and the most varied -- adaptations")


def _yesno(clause, sent, subj_words, subj_kind, idx) -> QA | None:
    """The clause asked as a yes/no question about its subject, the way people check a fact:
    "IBM Cloudant replicates data across zones." -> "Does IBM Cloudant replicate data across
    zones?" (answer ``Yes``); a negated clause is asked without its negation and answered ``No``
    ("The bridge was never completed." -> "Was the bridge completed?"). None when the clause has no
    complement to ask about or its verb group cannot be inverted."""
    neg = any(c.dep_ == "neg" for c in clause.comps)
    vp = _vp(clause, set(), limit=10)
    if vp is None:
        return None
    vp = [w for w in vp if w.lower() not in _NEG_WORDS]
    if _no_object(clause) is not None:
        if neg or [w.lower() for w in vp].count("no") != 1:
            return None
        neg = True          # "The religion had no founder." -> "Did the religion have any founder?" (No)
        vp = ["any" if w.lower() == "no" else w for w in vp]
    if not 2 <= len(vp) <= 9 or vp[-1].lower() in _EMPTY_OBJECTS:
        return None         # (a noun that says nothing alone: "Do potential difficulties have the result (that ...)?")
    attr = next((c for c in clause.comps if c.dep_ == "attr"), None)
    if clause.verb.lemma_ == "be" and attr is not None and subj_words[0].lower() in ("a", "an") \
            and any(c.dep_ == "det" and c.lower_ == "the" for c in attr.children):
        return None         # a specificational copula: "A subject of research is the formation of the Moon" says what
                            # the subject is; no "Is a subject of research the formation of the Moon?"
    vg = _verb_group(clause, True, ["{T}"])
    if vg is None or vg[0] == "{T}":
        return None
    template = " ".join([vg[0][:1].upper() + vg[0][1:]] + vg[1:] + vp)
    topic = " ".join(subj_words)
    return QA(question=finish(template.replace("{T}", topic)), qtype="yesno", answer="No" if neg else "Yes",
              sentence=_text(sent), template=template, topic=topic, topic_kind=subj_kind, topic_role="subj",
              verb=clause.verb.lemma_, sent_index=idx, score=YESNO_SCORE)


YESNO_SCORE = 1.0      # ranked with the wh-questions; how often one may be asked: DiscourseShares.yesno


def sentence_ok(sent) -> bool:
    """Prose, not a table row, a list fragment or a heading."""
    toks = [t for t in sent if not t.is_space and not t.is_punct]
    if len(toks) < 5 or len(toks) > 60 or sent.text.rstrip().endswith(("?", ":")):
        return False
    alpha = sum(t.is_alpha for t in toks) / len(toks)
    sym = sum(t.text in "$₹€£|=/\\{}<>#*_" for t in sent)
    if infobox(sent.text):
        return False        # an infobox flattened into text: "Specialty Hematology Symptoms Attacks of pain, ..."
    words = [t for t in toks if t.is_alpha]
    caps = sum(t.text[:1].isupper() for t in words)
    if len(words) >= 10 and caps >= 0.7 * len(words):
        return False        # a run of titles or names: "Auntie's Skirts The Land of Counterpane The Land of Nod My
                            # Shadow ..." gave "Where is the Lamplighter My Bed a Boat?"
    if not sent.text.rstrip().endswith((".", "!", ")", '"', "'")) and words and caps >= 0.6 * len(words):
        return False        # a heading or a link's label: "Red Hat OpenShift on IBM Cloud version 4.10 CIS Kubernetes
                            # Benchmark" gave "Who version 4.10 CIS Kubernetes Benchmark?"
    return alpha >= 0.75 and sym <= 2 and sent.text.strip()[:1].isupper()


def infobox(text: str) -> bool:
    """A Wikipedia infobox flattened into a "sentence": two or more of its labels ("Capital Mediolanum ...
    Languages Latin ... Government Autocracy")."""
    return len(set(_INFOBOX.findall(text))) >= 2 or len(_CAPTION.findall(text)) >= 2


# a gallery's captions run into one "sentence", each ending in its year: "Marble Falls City Hall, 2011 Marble Falls
# Public Library, 2011 The Uptown Theater in downtown Marble Falls, 2011 ..."
_CAPTION = re.compile(r",\s+(?:1[5-9]|20)\d\d\s+(?:The\s+)?[A-Z][a-z]")


# the labels of a Wikipedia infobox, as the page's flattened text writes them (capitalised, mid-sentence)
_INFOBOX = re.compile(r"\b(?:Synonyms|Specialty|Symptoms|Complications|Usual onset|Duration|Causes|Risk factors|"
                      r"Diagnostic method|Differential diagnosis|Prevention|Treatment|Medication|Prognosis|Frequency|"
                      r"Deaths|Born|Died|Occupation|Years active|Spouse\(?s?\)?|Genre|Genres|Released|Recorded|Length|"
                      r"Label|Producer|Directed by|Produced by|Written by|Screenplay by|Starring|Music by|Edited by|"
                      r"Cinematography|Running time|Release date|Distributed by|Budget|Box office|Headquarters|"
                      r"Key people|Area served|Founder|Founded|Website|Original network|Original release|No\. of "
                      r"episodes|No\. of seasons|Preceded by|Followed by|Capital|Official languages|Demonym|"
                      r"Government|Population|Currency|Time zone|Country|Language|Created by|Original work|Owner|Films? ?\( ?s|"
                      r"Films and television|Short film|Theatrical presentations|Plays? ?\( ?s|Original music|"
                      r"Theme park attractions|Official website|Video games? ?\( ?s|Television series)\b")


def _imperative_misread(sent, clause) -> bool:
    """An instruction whose first word the parser read as (part of) the subject: "Toggle custom attributes to
    Enabled." ("toggle custom" as the subject of "attributes"). The sentence is parsed again after "You": when its
    first word then becomes the verb and the old verb is no verb any more ("attributes" an object), it was an
    instruction ("Slack integrations require a title" stays a statement: "require" stays a verb). Checked only for a
    bare capitalised first word inside the subject that names no entity and has no article, possessive or
    prepositional phrase of its own ("Support for Python 2 ended ..." is not checked)."""
    w0 = next((t for t in sent if not t.is_space), None)
    if w0 is None or w0.i == clause.verb.i or not w0.text[:1].isupper() or w0.ent_type_ \
            or w0.pos_ in ("DET", "PRON", "NUM") or w0.i not in {t.i for t in clause.subj.subtree} \
            or any(c.dep_ in ("prep", "det", "poss") for c in w0.children):
        return False
    text = sent.doc[w0.i:sent.end].text
    again = parse("You " + text[:1].lower() + text[1:])
    verb = clause.verb.i - w0.i + 1          # the old verb's place in the new parse
    return len(again) > verb and again[1].dep_ == "ROOT" and again[1].tag_ in ("VB", "VBP") \
        and again[verb].text == clause.verb.text and again[verb].pos_ not in ("VERB", "AUX")


# verbs whose object does what their "to" clause says ("enabled men to have children", "urged MPs to monitor ...")
_OBJECT_CONTROL = {"enable", "allow", "permit", "ask", "urge", "force", "hire", "tell", "encourage", "persuade",
                   "invite", "order", "cause", "lead", "want", "expect", "compel", "oblige", "teach", "instruct",
                   "advise", "remind", "warn", "appoint", "elect", "convince", "inspire", "prompt", "motivate", "drive",
                   "get", "request", "beg", "challenge", "authorize", "authorise", "forbid", "recruit", "train"}


# verbs whose "to" complement is the task itself, not a purpose: "Try again to X", "Remember to X", "Continue to X"
_TASK_AS_COMPLEMENT = {"try", "retry", "attempt", "remember", "forget", "continue", "begin", "start", "choose",
                       "decide", "need", "want", "wait", "plan", "hesitate", "fail", "learn", "prefer", "like", "expect"}


def questions_from_sentence(sent, idx: int, antecedents: dict, title: str = "") -> list[QA]:
    """Every question the clause of ``sent`` supports (see the module docstring)."""
    out: list[QA] = []
    if not sentence_ok(sent):
        return out
    clause = read_clause(sent)
    if clause is None:
        return out
    v = clause.verb
    # "To X, do Y." instructions (manuals) -> "How do I X?"
    to_cl = next((c for c in v.children if c.dep_ in ("advcl", "xcomp") and any(
        m.lower_ == "to" and m.dep_ == "aux" for m in c.children)), None)
    if to_cl is not None and clause.subj is None and to_cl.dep_ == "xcomp" and v.lemma_.lower() in _TASK_AS_COMPLEMENT:
        return out      # "Try again to import the skill" says to do the task, not how: no "How do I import ...?"
                        # (with a subject the clause is a statement: "The service continues to support legacy keys")
    if to_cl is not None and any(x.like_num for x in to_cl.rights) and to_cl.i + 1 < len(sent.doc) \
            and sent.doc[to_cl.i + 1].like_num:
        return out      # a numbered label misread as a verb: "go to step 3" gives no "How do I step 3?"
    if to_cl is not None and clause.subj is None and v.tag_ == "VB" and to_cl.tag_ == "VB" and to_cl.lemma_ != "be":
        inside, depth = set(), 0
        for t in to_cl.subtree:         # a bracketed aside goes with its brackets: "a JSON Web Token (JWT)"
            depth += t.text == "("
            if depth:
                inside.add(t.i)
            depth -= t.text == ")" and depth > 0
        # (only the infinitive's own "to": "To customize the cluster to your needs" keeps its second one)
        purpose = [t for t in to_cl.subtree if not t.is_space and not (t.lower_ == "to" and t.head.i == to_cl.i
                                                                       and t.dep_ == "aux") and not t.is_punct
                   and t.i not in inside]
        # (a noun phrase the passage writes with "the" is no task: "promote the annotations to ground truth" with
        # "the ground truth" elsewhere gives no "How do I ground truth?")
        if 2 <= len(purpose) <= 10 and not any(t.lower_ in PRONOUNS for t in purpose) \
                and not re.search(rf"\bthe {re.escape(_text(purpose).lower())}\b", sent.doc.text.lower()):
            if to_cl.i < v.i:       # "To X, do Y." -> the answer is what follows the purpose
                rest = [t for t in sent if t.i > max(x.i for x in to_cl.subtree) and not t.is_space]
            else:                   # "Do Y to X." -> the answer is the instruction before it
                rest = [t for t in sent if t.i < min(x.i for x in to_cl.subtree) and not t.is_space]
            answer = _text([t for t in rest if not (t.is_punct and t.i == rest[0].i)])
            if len(re.findall(r"[^\W_]+", answer)) >= 2 and not _LAYOUT.search(answer):
                # (no answer "Use" from "Use ( ) to enclose ...", nor "Use the following methods": the steps are
                # elsewhere on the page)
                out.append(QA(question=finish("How do I " + _as_mine(_text(purpose))), qtype="how", answer=answer,
                              sentence=_text(sent), verb=to_cl.lemma_, sent_index=idx, score=1.1))
        return out
    if clause.subj is None:
        return out
    if v.tag_ == "VB" and not clause.auxes:
        return out      # a bare verb with a "subject" is an instruction misparsed: "In the confirmation that displays,
                        # click Activate dialog" gives no "Do displays click Activate dialog?"
    res = _resolve_subject(clause.subj, antecedents)
    if res is None or _imperative_misread(sent, clause):      # (after the cheaper checks: it parses again)
        return out
    subj_toks_or_text, subj_kind = res
    if isinstance(subj_toks_or_text, str):
        subj_words = subj_toks_or_text.split()
        subj_is_pron = True
    else:
        subj_words = _lower_first(subj_toks_or_text)
        subj_is_pron = False
    if not subj_words or len(subj_words) > 7:
        return out
    first = clause.subj.left_edge
    if not subj_is_pron and first.i > 0 and not sent.doc[first.i - 1].whitespace_ \
            and (sent.doc[first.i - 1].is_alpha or sent.doc[first.i - 1].text == "_"):
        return out      # a piece of a word split by the tokenizer: "d" of "_id" ("Does d sort the primary index?")
    if subj_words[0].lower() in ("no", "none", "neither"):
        return out      # the negation sits in the subject: "No special characters are parsed by the API" gives no
                        # "Are no special characters parsed ...?" or "Who parses no special characters?"
    subj_ent = "" if subj_is_pron else _ent_of(clause.subj)
    subj_low = clause.subj.lower_
    # "you can X" (manuals) -> "Can I X?" yes/no
    if subj_low == "you" and clause.auxes and clause.auxes[0].lower_ in ("can", "cannot", "ca"):
        vp = _vp(clause, set())
        if vp is not None and 2 <= len(vp) <= 10:
            neg = " not" if clause.auxes[0].lower_ in ("cannot",) or any(c.dep_ == "neg" for c in v.children) else ""
            q = finish(f"Can I {v.lemma_} " + " ".join(w for w in vp if w.lower() != "not"))
            out.append(QA(question=q, qtype="yesno", answer=("No" if neg else "Yes"), sentence=_text(sent),
                          verb=v.lemma_, sent_index=idx, score=0.9))
        return out
    if subj_low in PRONOUNS and subj_low not in PERSONAL:
        return out
    yn = _yesno(clause, sent, subj_words, subj_kind, idx)
    if yn is not None:
        out.append(yn)
    if subj_ent in ("DATE", "TIME"):
        return out      # a time as the doer: "The following spring brought a 55-cent promotion", "The 1990s saw ..."
                        # give no "How much did the following spring bring?" or "What did the 1990s see?"
    if any(c.dep_ == "neg" for c in clause.comps) or _no_object(clause) is not None:
        # a negated clause asked with a wh-word reads wrong or inverts its meaning ("What does the move
        # action add not twice?", "Who owns the Royal Collection?" from "The Queen does not own it");
        # it is asked as a yes/no question only ("Does the Queen own the Royal Collection personally?" - No)
        return out
    # definitional: "X is/was a Y"
    attr = next((c for c in v.children if c.dep_ == "attr"), None)
    if v.lemma_ == "be" and attr is not None and attr.i > v.i and not clause.auxes and attr.pos_ in ("NOUN", "PROPN"):
        det = next((c for c in attr.children if c.dep_ == "det"), None)
        # a time is no subject to define ("What was the second half of the 20th century?" from "... was the
        # golden age of virus discovery")
        if det is not None and det.lower_ in ("a", "an", "the") and subj_ent not in ("DATE", "TIME") \
                and (subj_ent or clause.subj.pos_ == "PROPN" or subj_is_pron):
            wh = "Who" if subj_kind == "PERSON" else "What"
            tense = v.lower_ if v.lower_ in ("is", "was", "are", "were") else "is"
            tmpl = f"{wh} {tense} {{T}}"
            ans = np_tokens(attr, max_words=12, scoped=False)   # the answer's sentence follows it
            if ans:
                out.append(QA(question=finish(tmpl.replace("{T}", " ".join(subj_words))), qtype="define",
                              answer=_text(ans), sentence=_text(sent), template=tmpl, topic=" ".join(subj_words),
                              topic_kind=subj_kind, verb="be", sent_index=idx, score=1.0))
    for c in clause.comps:
        # when / where: a preposition whose object is a date or a place
        if c.dep_ == "prep" and c.lower_ in _DATE_PREPS | _PLACE_PREPS:
            pobj = next((x for x in c.children if x.dep_ == "pobj"), None)
            if pobj is None:
                continue
            ent = pobj.ent_type_
            same = [x for x in clause.comps if x is not c and x.dep_ == "prep" and any(
                y.dep_ == "pobj" and (y.ent_type_ == ent or ent in _PLACE_ENTS and y.ent_type_ in _PLACE_ENTS)
                for y in x.children)]
            if same:
                continue            # "in France ... in the Iberian Peninsula": which one is asked?
            if ent == "DATE" and c.lower_ in _DATE_PREPS and re.search(r"\d{3,4}|century|January|February|March|"
                                                                        r"April|May|June|July|August|September|"
                                                                        r"October|November|December", _text(pobj.subtree)):
                qa = _mk(clause, sent, "when", "When", _ent_span(pobj), {c.i}, subj_words, subj_kind, idx, score=1.3)
                if qa:
                    out.append(qa)
            elif ent in _PLACE_ENTS and c.lower_ in _PLACE_PREPS:
                qa = _mk(clause, sent, "where", "Where", _ent_span(pobj), {c.i}, subj_words, subj_kind, idx, score=1.2)
                if qa:
                    out.append(qa)
        elif c.ent_type_ == "DATE" and c.dep_ == "npadvmod" and re.search(r"\d{3,4}", _text(c.subtree)):
            qa = _mk(clause, sent, "when", "When", list(c.subtree), {c.i}, subj_words, subj_kind, idx, score=1.2)
            if qa:
                out.append(qa)
        # passive agent: "built by East Germany" -> "Who built the Berlin Wall?"
        if c.dep_ == "agent" and clause.passive:
            pobj = next((x for x in c.children if x.dep_ == "pobj"), None)
            if pobj is not None and v.tag_ == "VBN" and not (pobj.lower_ in _BY_IDIOMS and not list(pobj.children)):
                first = clause.auxes[0].lower_ if clause.auxes else ""
                if first in _MODALS:        # "can be used by X" -> "What can use ...", not "What used ..."
                    verb = f"{first} {v.lemma_}"
                else:
                    verb = _verb_3sg(v.lemma_) if first in ("is", "are") else _verb_past(v.lemma_)
                wh = "Who" if pobj.ent_type_ in _AGENT_ENTS or is_people(pobj) else "What"
                vp = _vp(clause, {c.i})
                if vp is not None and not _pointing(_text(pobj.subtree)) and "by" not in (w.lower() for w in vp):
                    # (a second "by" phrase is the means, not the agent: "What triggered the patient by atelectasis")
                    tmpl = " ".join([wh, verb, "{T}"] + vp)
                    out.append(QA(question=finish(tmpl.replace("{T}", " ".join(subj_words))), qtype="who" if wh == "Who" else "what",
                                  answer=_text(np_tokens(pobj, 8)) if pobj.ent_type_ else _text(pobj.subtree),
                                  sentence=_text(sent), template=tmpl, topic=" ".join(subj_words), topic_kind=subj_kind,
                                  topic_role="obj", verb=v.lemma_, sent_index=idx, score=1.25 if wh == "Who" else 0.8))
        # why: "because ..." / "due to ..."
        if (c.dep_ == "advcl" and any(m.lower_ in ("because",) for m in c.children if m.dep_ == "mark")) or \
                (c.dep_ == "prep" and c.lower_ in ("because", "due") and c.i > v.i):
            cause = [t for t in c.subtree if not t.is_space]
            if 2 <= len(cause) <= 20:
                qa = _mk(clause, sent, "why", "Why", cause, {c.i}, subj_words, subj_kind, idx, score=1.1)
                if qa:
                    out.append(qa)
        # how: "by digging tunnels"
        if c.dep_ == "prep" and c.lower_ == "by" and not clause.passive:
            pc = next((x for x in c.children if x.dep_ == "pcomp" and x.tag_ == "VBG"), None)
            if pc is not None:
                means = [t for t in c.subtree if not t.is_space]
                if len(means) <= 14:
                    qa = _mk(clause, sent, "how", "How", means, {c.i}, subj_words, subj_kind, idx, score=1.0)
                    if qa:
                        out.append(qa)
        # how many / how much in the object: "built 302 watchtowers" -> "How many watchtowers did X build?"
        if c.dep_ == "dobj":
            num = next((x for x in c.children if x.dep_ == "nummod" and (x.like_num or x.lower_ in _NUM_WORDS)), None)
            if num is not None and c.tag_ == "NNS" and c.ent_type_ in ("", "CARDINAL") \
                    and not any(x.lower_ in ("each", "apiece") for x in c.children):
                # ("will contain several hundred documents each": a count per thing, no "How many documents each ...?")
                obj_toks = [t for t in np_tokens(c, 6) if t.i != num.i and t.dep_ not in ("det", "quantmod")
                            and not (t.head.i == num.i)]
                # (not when a word before the count says which ones: "the last two results" gives no "How many
                # last results ...?"; and the counted noun itself is there: no "How many did the government arrest?")
                if not any(t.i < num.i for t in obj_toks) and any(t.i == c.i for t in obj_toks):
                    qa = _how_many_object(clause, sent, c, num, [t.text for t in obj_toks], subj_words, subj_kind, idx)
                    if qa:
                        out.append(qa)
            if num is not None and c.tag_ == "NNS" and c.ent_type_ == "QUANTITY" and v.lemma_ not in _DURATION_VERBS \
                    and not any(x.tag_ in ("RBR", "JJR") for x in v.children) \
                    and not any(x.dep_ in ("amod", "compound") for x in c.children):
                # a measure: "flows 419 miles into Delaware Bay" -> "How many miles does the river flow into ...?" (not
                # a measure of a comparison: "can reach 780 kilometres higher")
                qa = _how_many_object(clause, sent, c, num, [c.lower_], subj_words, subj_kind, idx)
                if qa:
                    out.append(qa)
            if c.ent_type_ == "MONEY" or any(x.ent_type_ == "MONEY" and _amount_of(x, c) for x in c.subtree):
                # (an amount that is the object, not one that describes it: "a 55-cent Big Mac promotion")
                money = [t for t in c.subtree if t.ent_type_ == "MONEY"]
                cur = money[0].doc[money[0].i - 1] if money and money[0].i > 0 else None
                if cur is not None and cur.text in "$€£¥₹" and cur.ent_type_ != "MONEY":
                    money = [cur, *money]           # "$6", not "6"
                # an amount of money says its currency: the tagger's MONEY on "The Walking Dead #1" is an issue number
                qa = _mk(clause, sent, "how_much", "How much", money, {c.i}, subj_words, subj_kind, idx, score=1.3) \
                    if _CURRENCY.search(" ".join(t.text for t in money)) else None
                if qa:
                    out.append(qa)
            # object "what/who" questions: any object NP of a named or determined subject
            if not clause.passive and c.pos_ in ("NOUN", "PROPN") and (v.lemma_, c.lemma_.lower()) not in _IDIOMS \
                    and c.lower_ not in _OF_HEADS and c.ent_type_ not in _AMOUNTS and (     # "returned to Paris a
                    # number of times": an amount, no object; nor is a measure ("What does the river flow into Delaware
                    # Bay?" - "419 miles")
                    subj_ent or subj_is_pron or clause.subj.pos_ == "PROPN"
                    or any(d.dep_ == "det" and d.lower_ in ("the", "a", "an") for d in clause.subj.children)
                    or clause.subj.tag_ in ("NNS", "NNPS")) \
                    and not (v.lemma_.lower() in _OBJECT_CONTROL
                             and any(x.dep_ in ("xcomp", "ccomp") and x.i > c.i for x in v.children)):
                # (not the doer of a "to" clause after it: "has enabled gay men ... to have children" gave "What has it
                # enabled to have children?"; "uses an index to select" is a purpose: "What does it use to select?")
                wh = "Who" if c.ent_type_ == "PERSON" and c.text[:1].isupper() and c.pos_ == "PROPN" else "What"
                # (a capitalised common noun the tagger calls a person is a label: "The status shows Migrating" is
                # no "Who does the status show?")
                qtype = "who" if wh == "Who" else "what"
                if (v.lemma_ in _DURATION_VERBS or v.lemma_ in ("spend", "wait", "serve", "stay", "live", "work")
                        and any(x.dep_ == "nummod" for x in c.children)) \
                        and (c.ent_type_ in ("DATE", "TIME") or c.lemma_ in _TIME_UNITS):
                    wh, qtype = "How long", "how"       # "lasted a thousand years": no "What did it last?"; "spent seven
                                                        # months on the project": no "What did Feinman spend ...?"
                elif c.ent_type_ in ("DATE", "TIME"):
                    continue                            # a time is no thing: "What did the festival celebrate ...?"
                elif _what_kind(v, c):
                    # "What does the 1 seed have?" asks nothing: "What advantage does the 1 seed have throughout
                    # the playoffs?" (an acronym keeps its capitals: "What TCO does the plan offer?")
                    wh = f"What {c.text if _keep_case(c) else c.lower_}"
                # a light verb's bare "What ... have/use/get?" says little: ranked below the sentence's other questions
                light = wh == "What" and v.lemma_ in _LIGHT_VERBS
                qa = _mk(clause, sent, qtype, wh, np_tokens(c, 8), {c.i}, subj_words, subj_kind, idx,
                         score=0.6 if light else 0.9)
                if qa:
                    out.append(qa)
    # how many in the subject: "about 5,000 people escaped" -> "How many people escaped over the wall?"
    num = next((x for x in clause.subj.children if x.dep_ == "nummod"), None) if not subj_is_pron else None
    if num is not None and clause.subj.tag_ == "NNS" and num.i < clause.subj.i:
        # (a number after its noun is a label, not a count: "Versions 4.11 and later include ...")
        vp = _vp(clause, set())
        if vp is not None:
            aux = [a.text for a in clause.auxes]
            noun = clause.subj.text if clause.subj.i != sent.start or _keep_case(clause.subj) else clause.subj.lower_
            q = finish(" ".join(["How many", noun] + aux + [v.text] + vp))
            out.append(QA(question=q, qtype="how_many", answer=_text(num.subtree) + " " + noun,
                          sentence=_text(sent), verb=v.lemma_, sent_index=idx, score=1.2))
    # subject who: "Bill Gates founded Microsoft" -> "Who founded Microsoft?" (the object is the topic)
    if subj_ent in ("PERSON", "ORG") and not clause.passive and not subj_is_pron and v.lemma_ != "be" \
            and clause.subj.text[:1].isupper():
        # (a lower-case word the tagger calls a person is none: "Each dialog node has a unique ID" gave "Who has a
        # unique ID?")
        dobj = next((c for c in clause.comps if c.dep_ == "dobj"), None)
        if dobj is not None:
            obj_toks = np_tokens(dobj, 6)
            rest = _vp(clause, {dobj.i})
            if obj_toks and rest is not None and (dobj.ent_type_ or dobj.pos_ == "PROPN"):
                aux = [a.text for a in clause.auxes]
                wh = "Who" if subj_ent == "PERSON" or _agent_org(subj_toks_or_text) else "What"
                tmpl = " ".join([wh] + aux + [v.text, "{T}"] + rest)
                topic = " ".join(_lower_first(obj_toks))
                out.append(QA(question=finish(tmpl.replace("{T}", topic)), qtype="who", answer=_text(subj_toks_or_text),
                              sentence=_text(sent), template=tmpl, topic=topic, topic_kind=_kind(dobj),
                              topic_role="obj", verb=v.lemma_, sent_index=idx, score=1.15))
    return out


# verbs that say little of their object: "What does X have/use/receive?" needs the object's kind to ask anything
_LIGHT_VERBS = frozenset({"have", "use", "receive", "get", "see", "find", "take", "make", "give", "show", "hold",
                          "gain", "earn", "offer", "provide", "require", "need", "include", "contain", "employ"})

# adjectives that praise or size a thing, not say which kind it is: "a powerful plug-in" is no "What plug-in ...?"
_EVALUATIVE = frozenset("""powerful good great important new major key main large small big strong special unique wide
simple easy robust flexible rich useful popular critical best better excellent huge vast broad common typical basic
essential significant notable famous well-known successful effective efficient advanced modern complex predictable
reliable consistent affordable cheap expensive fast secure scalable interesting attractive""".split())

# of those, the ones whose object's kind is asked ("take ownership", "make appearances", "see a drop" are idioms)
_KIND_VERBS = _LIGHT_VERBS - {"take", "make", "give", "get", "see", "find", "show"}


def _what_kind(verb, obj) -> bool:
    """Whether an object question of a light verb asks for the object's kind ("What advantage does the 1 seed have?",
    "What cameras do photo booths use?"): a common noun that says what it is, modified by words that are the answer
    ("home-field advantage", "video or digital cameras"); not a count (the how-many question asks that), a vague
    noun ("What features ...?") or a bare noun whose answer would be itself ("took office": no "What office ...?")."""
    if verb.lemma_ not in _KIND_VERBS or obj.pos_ != "NOUN" or obj.ent_type_ or not obj.lower_.isalpha() \
            or obj.lower_ in _VAGUE_HEADS or obj.lemma_.lower() in _VAGUE_HEADS \
            or obj.lower_ in ("part", "parts", "number", "lot", "lots", "one", "ones", "use", "time", "times", "place",
                              "amount", "variety", "range", "set", "series", "group", "couple", "bit", "kind",
                              "plenty", "majority", "half", "rest", "deal", "total", "share", "portion"):
        return False
    answer = np_tokens(obj, 8)      # the words the answer says beyond the noun the question now names
    if any(x.dep_ in ("nummod", "conj") for x in obj.children) or any(x.like_num for x in answer) \
            or (obj.i > 0 and not obj.doc[obj.i - 1].whitespace_):
        return False        # a count ("a crew of two", "242 plants"): "How many"; two things ("a seat or bench"); the
                            # end of a hyphenated word ("plug-in" is no "What in ...?")
    return any(x.i != obj.i and x.dep_ in ("amod", "compound", "nmod", "prep", "pobj", "acl", "relcl", "conj")
               and x.pos_ not in ("PRON", "DET", "PUNCT") and x.lower_ not in _DEGREE | _EVALUATIVE
               and x.tag_ not in ("JJR", "JJS") for x in answer)


# words that say how much of a thing, not which: "low confidence" is asked "How much ...?", not "What confidence ...?"
_DEGREE = frozenset({"low", "high", "great", "little", "much", "more", "less", "full", "some", "many", "few", "greater",
                     "higher", "lower", "significant", "considerable", "enough", "sufficient", "additional", "extra",
                     "further", "other", "same", "such", "certain", "various", "several", "multiple", "numerous",
                     "different", "fewer"})


def _antecedent_update(sent, antecedents: dict) -> None:
    """Remember the sentence's subject NP (and any person) for pronouns in later sentences, and
    the subject itself as ``LAST`` (None for two subjects): a later "he"/"she" is resolved only
    when that subject is the remembered person."""
    root = sent.root
    subjs = [c for c in root.children if c.dep_ in ("nsubj", "nsubjpass")]
    subj = subjs[0] if subjs else None
    if subj is not None and subj.lower_ not in PRONOUNS:
        toks = np_tokens(subj)
        antecedents["LAST"] = None if len(subjs) > 1 else " ".join(t.text for t in toks)
        page = _page_description(toks, antecedents)
        if page:
            antecedents["SING"] = page      # a later "it" after "The film ..." is the page's subject too
            toks = []
        if _points_back(toks):
            toks = []       # "... of these regions": no antecedent to name for a later "they"
        if any(t.dep_ == "poss" and t.lower_ in PRONOUNS for t in toks):
            toks = []       # "its rotation period" names nothing without what "its" is: no antecedent for a later "it"
        if toks and len(toks) <= 6:
            kind = _kind(subj)
            if kind == "PERSON" and any(t.dep_ in ("cc", "conj") for t in toks):
                kind = "PLUR"       # "Romeo and Juliet": two people, or a title; never a later "he"
            antecedents[kind] = " ".join(_lower_first(toks))
            if kind == "PERSON":
                antecedents["PERSON"] = " ".join(t.text for t in toks)
    for e in sent.ents:
        if e.label_ == "PERSON" and len(e) >= 2:
            antecedents.setdefault("PERSON", e.text)


def page_subject(text: str, title: str, sents: list | None = None) -> tuple[str, frozenset[str]] | None:
    """(the page's subject as its text names it, the nouns that say what kind of thing it is) for a page about a
    named thing whose text defines it ("Incredibles 2 is a 2018 American computer-animated superhero film ..." ->
    ("Incredibles 2", {"film"}); "The Hudson River is a 315-mile river ..." -> ("the Hudson River", {"river"})); the
    title's disambiguation adds its kind ("Romeo and Juliet (1968 film)": "film"). None for a page about a common
    thing, a list, or one whose first sentences do not define its subject. A passage writes "The film passed $1
    billion ..." for its subject; a question cut from it must name it (:func:`_page_description`). ``sents``: the
    passage's :func:`~agents.synth.offline.nlp.sentence_spans` when the caller has them (parsed once)."""
    name = page_name(title)
    if not name or len(name.split()) > 6 or re.match(r"(?:wikipedia|list|lists|history|index|outline|timeline)\b",
                                                     name, re.IGNORECASE):
        return None
    ws = name.split()
    if not (any(t.pos_ == "PROPN" for t in parse(detokenize(name))) or any(w[:1].isupper() or w[:1].isdigit() for w in ws[1:])
            or re.search(rf"[a-z,;]\s+{re.escape(ws[0])}\b", text)):
        return None         # a page about a common thing ("Guinea pig"), not a named one
    kinds = set()
    dis = re.search(r"\(([^()]*)\)\s*$", title or "")
    if dis and re.fullmatch(r"[a-z]+", (dis.group(1).split() or [""])[-1]):
        kinds.add(dis.group(1).split()[-1])          # "(1968 film)", "(song)"; not "(The Walking Dead)"
    key = re.sub(r"^the\s+", "", name.lower())
    said = ""
    for sent in (sents if sents is not None else sentence_spans(text))[:2]:
        root = sent.root
        subj = next((c for c in root.children if c.dep_ == "nsubj"), None)
        attr = next((c for c in root.children if c.dep_ == "attr"), None)
        if subj is None or root.lemma_ != "be" or attr is None or attr.pos_ != "NOUN" or attr.tag_ != "NN" \
                or attr.lower_ in _NO_KIND:
            continue        # "X is the name of ...", "X is part of ...": no kind of thing a later "the name" is
        words = [t for t in subj.subtree if not t.is_punct or t.text in ("-", "'", "&")]
        if words and words[-1].tag_ == "NNPS":
            return None     # "The Kansas City Chiefs": "the team is" would become "Is the Kansas City Chiefs"
        stext = detokenize(" ".join(t.text for t in words))
        low = re.sub(r"^the\s+", "", stext.lower())
        if low == key or key.startswith(low + ","):
            # "The Hudson River" -> "the Hudson River"; a title's own "The" where the text writes it so mid-sentence
            keep = name.startswith("The ") and re.search(rf"[a-z,;]\s+{re.escape(stext)}\b", text)
            said = "the " + stext[4:] if stext.startswith("The ") and not keep else stext
            kinds.add(attr.lower_)
            break
    if not kinds:
        head = _title_kind(name, text)
        if head:
            kinds.add(head)
    if not kinds and not dis:
        before_comma = name.split(",")[0].strip()     # "Dubuque, Iowa": the text's "the city" is Dubuque
        kinds = set(_listed_kinds(before_comma, text, sents))
        if kinds:
            name = before_comma
    if not kinds:
        return None
    if not said and not dis:
        from agents.synth.offline.discourse import _as_phrase
        said = _as_phrase(name, text, "")     # "the Amazon River", "Operation Barbarossa", "Huntington's disease"
    return said or as_written(name, text), frozenset(kinds)


def _title_kind(name: str, text: str) -> str | None:
    """The kind of thing a named page's title says it is, by its own common-noun head ("Amazon River" -> "river",
    "Berlin Wall" -> "wall", "Huntington's disease" -> "disease", "Operation Barbarossa" -> "operation"), when the text
    writes that noun in lower case and names no other thing of that kind ("the Napo River": "the river" would be
    ambiguous). None otherwise (a one-word name, a head the text never writes in lower case: "North America")."""
    ws = name.split()
    if len(ws) < 2 or len(ws) > 5 or re.search(r"\b(?:of|in|and|for|on)\b", name, re.IGNORECASE):
        return None
    head = ws[0] if _HEAD_FIRST.match(name) else ws[-1]
    key = head.lower()
    if not key.isalpha() or len(key) < 3 or key in _NO_KIND or not re.search(rf"\b[Tt]he {key}\b", text):
        return None
    if parse(f"the {key}")[1].pos_ != "NOUN":
        return None
    cap = r"(?!The\b)[A-Z][\w'’-]*"         # a capitalised word of a name (not a sentence's "The")
    others = {m.group(0) for m in re.finditer(rf"(?:{cap}[ \t]+)+{re.escape(head)}\b" if head is ws[-1]
                                               else rf"\b{re.escape(head)}(?:[ \t]+{cap})+", text)}
    if any(o != re.sub(r"^The\s+", "", name) for o in others):
        return None
    return key


# the common nouns an encyclopedia page's text calls its own subject by ("The company serves 750,000 customers" on the
# page "Chipotle Mexican Grill", "the state" on "Michigan"), with the entity labels a name of that kind does not carry
# (a company is no place, a state no company)
_PLACE_NOT = frozenset({"PERSON", "ORG", "NORP", "WORK_OF_ART", "EVENT", "PRODUCT"})
_ORG_NOT = frozenset({"GPE", "LOC", "PERSON", "NORP", "EVENT"})
_WORK_NOT = frozenset({"GPE", "LOC", "NORP", "EVENT"})
_EVENT_NOT = frozenset({"GPE", "LOC", "PERSON", "NORP", "ORG"})
_THING_NOT = frozenset({"PERSON", "NORP"})
_LISTED_KINDS = {
    **dict.fromkeys(("state", "city", "country", "town", "village", "nation", "province", "county", "island",
                     "river", "lake"), _PLACE_NOT),
    **dict.fromkeys(("company", "corporation", "firm", "chain", "brand", "band", "team", "club", "party",
                     "organization", "organisation", "agency", "network", "league", "university", "college"),
                    _ORG_NOT),
    **dict.fromkeys(("series", "show", "film", "movie", "album", "song", "single", "novel", "book", "franchise",
                     "sitcom", "musical", "opera", "episode", "poem", "magazine", "newspaper"), _WORK_NOT),
    **dict.fromkeys(("battle", "war", "festival", "tournament", "championship", "election", "treaty"), _EVENT_NOT),
    **dict.fromkeys(("trophy", "award", "prize", "bridge", "stadium", "temple", "museum", "palace", "castle", "tower",
                     "canal", "dam", "airport", "disease", "language", "dynasty", "empire", "kingdom"), _THING_NOT),
    "character": frozenset({"GPE", "LOC", "NORP", "ORG", "EVENT"}),
}


_LISTED_THE = re.compile(rf"\b[Tt]he ({'|'.join(_LISTED_KINDS)})\b")


def _listed_kinds(name: str, text: str, sents: list | None) -> frozenset[str]:
    """The kinds of ``_LISTED_KINDS`` that a named page's passage calls its subject by when it does not define it
    (a passage from the middle of the page: "The company serves ..." on "Chipotle Mexican Grill"): each noun the text
    writes as "the <kind>", where it names no other thing of the kind ("the Conn Smythe Trophy" beside "the trophy")
    and the name's most frequent entity label in the passage fits the kind (no "the company" for a country's page, nor
    for a person's: the small tagger's "person" counts only where the text says "he" or "she"). A one-word name must be
    written with its capital inside the sentences ("Football" on its page is a common noun)."""
    from agents.synth.offline.discourse import _names_with_head, _written_as_a_name, norm_np
    said = set(_LISTED_THE.findall(text))
    if not said or (len(name.split()) == 1 and not _written_as_a_name(name, text)):
        return frozenset()
    key = norm_np(name)
    labels = Counter(e.label_ for s in (sents if sents is not None else sentence_spans(text)) for e in s.ents
                     if norm_np(e.text) == key)
    label = labels.most_common(1)[0][0] if labels else ""
    if label == "PERSON" and not re.search(r"\b(?:he|she|his|her|him)\b", text, re.IGNORECASE):
        label = ""      # "Chipotle Mexican Grill" read as a person on a page that speaks of no one
    return frozenset(k for k in said if label not in _LISTED_KINDS[k]
                     and all(n == key or key.endswith(" " + n) for n in _names_with_head(k, text)))


# titles whose kind comes first ("Operation Barbarossa", "Treaty of ...": "the operation", "the treaty")
_HEAD_FIRST = re.compile(r"^(?:operation|battle|siege|invasion|hurricane|typhoon|cyclone|treaty|act) ", re.IGNORECASE)


_CURRENCY = re.compile(r"[$€£¥₹]|\b(?:[A-Z]{2,3}\$|dollars?|euros?|pounds?|sterling|yen|yuan|renminbi|rupees?|cents?|pence|"
                       r"francs?|marks?|lira|lire|pesos?|rubles?|roubles?|won|krona|kronor|krone|guineas?|shillings?|"
                       r"USD|EUR|GBP|JPY|INR|CNY|CHF)\b", re.IGNORECASE)

_NO_KIND = {"name", "term", "word", "part", "one", "member", "example", "type", "kind", "form", "result", "home",
            "site", "seat", "birthplace", "base", "destination", "subject", "title", "enforcement", "center",
            "centre", "collection", "list", "set", "number"}


def _page_description(toks: list, antecedents: dict) -> str | None:
    """The page's subject (:func:`page_subject`) when the noun phrase ``toks`` is "the" + a noun that says what kind
    of thing it is ("the film" on the Incredibles 2 page), else None."""
    page = antecedents.get("PAGE")
    if not page or len(toks) != 2 or toks[0].lower_ != "the" or toks[1].lower_ not in page[1]:
        return None
    return page[0]


@lru_cache(maxsize=4096)
def passage_questions(text: str, title: str = "") -> tuple[QA, ...]:
    """All well-formed candidates of one passage, in sentence order (cached by content)."""
    out: list[QA] = []
    antecedents: dict = {}
    if title and len(title.split()) <= 5 and not title.lower().startswith(("wikipedia:", "list of")):
        tdoc = parse(detokenize(title))
        antecedents["SING"] = detokenize(title) if any(t.pos_ == "PROPN" for t in tdoc) else "the " + title.lower()
    sents = sentence_spans(text)
    page = page_subject(text, title, sents)
    if page:
        antecedents["PAGE"] = page
    if title:
        antecedents["TITLE"] = page_name(detokenize(title))
    for i, sent in enumerate(sents):
        for qa in questions_from_sentence(sent, i, dict(antecedents), title):
            mine = _as_mine(qa.question)
            if mine != qa.question:
                # a manual's words to the reader, asked as the reader's own: "Does my assistant take an additional
                # step?" (not "Does your assistant ...")
                qa = replace(qa, question=mine, template=_as_mine(qa.template), topic=_as_mine(qa.topic))
            if well_formed(qa.question) is None and not points_at_the_page(qa.question) and not cut_short(qa.answer) \
                    and not vague_answer(qa) \
                    and not (qa.qtype == "yesno" and cut_short(qa.question.rstrip("?"))) \
                    and not points_into_the_passage(qa.question) and not _WRITERS_WE.search(qa.question):
                out.append(qa)
        _antecedent_update(sent, antecedents)
    out.extend(heading_questions(text, len(out), title))
    he, she = _pronoun_counts(text, normalise=False)
    whole = "she" if she > he else "he" if he else "they"       # the passage's majority, where the sentence says nothing
    near = {}
    for qa in out:
        if qa.topic_kind == "PERSON" and qa.sent_index not in near:
            # where the pronouns of the question's own sentence and the next one disagree with the passage's majority,
            # the gender is unsure: "they" ("Juliet later compares Romeo and death. Right before her suicide, she ..."
            # in a passage mostly about Romeo: not "Does he compare ...?"; "she" might be another person's too)
            window = " ".join(x.text for x in sents[qa.sent_index:qa.sent_index + 2]) if qa.sent_index < len(sents) \
                else ""
            g = _gender(window, mixed="")
            near[qa.sent_index] = whole if not g or g == whole else "they"
    return tuple(qa if qa.topic_kind != "PERSON" else replace(qa, extra={"gender": near.get(qa.sent_index, "they")})
                 for qa in out)


def _gender(text: str, mixed: str = "") -> str:
    """"he" or "she" when ``text`` uses only that gender's pronouns, else ``mixed`` (both or none)."""
    he, she = _pronoun_counts(text)
    return mixed if bool(he) == bool(she) else "he" if he else "she"


def _pronoun_counts(text: str, normalise: bool = True) -> tuple[int, int]:
    """(he/his/him, she/her) word counts of ``text``; ``normalise``: punctuation counts as a word break ("her." too)."""
    low = f" {re.sub(r'[^a-z]+', ' ', text.lower()) if normalise else text.lower()} "
    return (low.count(" he ") + low.count(" his ") + low.count(" him "), low.count(" she ") + low.count(" her "))


# nouns that name no thing of their own: what they are is in the words after them ("the result (that history is
# taught ...)", "factors (including ...)", "the fact (that ...)")
_VAGUE_HEADS = {"result", "results", "factor", "factors", "fact", "thing", "things", "method", "methods", "way",
                "ways", "aspect", "aspects", "element", "elements", "feature", "features", "issue", "issues", "matter",
                "means", "something", "stuff", "details", "information", "kind", "kinds", "type", "types", "question",
                "questions", "item", "items", "option", "options", "step", "steps"}


def vague_answer(qa: QA) -> bool:
    """A what/who question whose answer is one such noun ("What do potential difficulties with primary sources
    have?" -> "the result"; "What does Kelly Kapoor flaunt?" -> "the fact"): the asker learns nothing from it, and
    the sentence's content is left out. A count keeps it ("How many types ...?" -> "two types")."""
    if qa.qtype not in ("what", "who"):
        return False
    ws = [w for w in qa.answer.strip().rstrip(".").lower().split()
          if w not in ("the", "a", "an", "some", "several", "many", "various", "other", "certain", "different")]
    return len(ws) == 1 and ws[0] in _VAGUE_HEADS


# the writer's "we" (a company's "our data centers", a quoted speaker's "our show"): the asker is not them
_WRITERS_WE = re.compile(r"\b(?:we|our|ours|us|ourselves)\b", re.IGNORECASE)


def points_into_the_passage(question: str) -> bool:
    """A demonstrative determiner ("resources of that type", "this option"): which one, only the passage's
    previous sentence says; the asker does not know it."""
    return any(t.lower_ in ("this", "that", "these", "those") and t.dep_ == "det"
               # or one standing for the things themselves: "Did people connect these together?"
               or t.lower_ in ("these", "those") and t.dep_ in ("dobj", "pobj", "nsubj", "nsubjpass", "attr")
               for t in parse(question))


def cut_short(answer: str) -> bool:
    """An answer span cut inside its phrase: it ends in a preposition, a determiner, a conjunction, "to", or a
    gerund after a preposition ("A habit of having", "A tendency to"): what it says is in the words it lost."""
    doc = parse(answer.strip().rstrip(".,;:"))
    if len(doc) < 2:
        return False
    last = doc[-1]
    if last.pos_ == "ADV" and last.lower_ in ("somewhere", "between", "around", "about", "roughly", "mainly",
                                               "mostly", "especially", "particularly", "only", "even", "such"):
        return True         # "A taste somewhere (between beef and pork)"
    return last.pos_ in ("ADP", "DET", "CCONJ", "SCONJ", "PART") or last.lower_ == "to" \
        or (last.tag_ == "VBG" and doc[-2].pos_ == "ADP")


_COLUMN_HEADS = {"description", "descriptions", "details", "notes", "value", "values", "type", "default", "example",
                 "examples", "status", "link", "links", "comments", "purpose", "required"}


# the tagger's British lemmas of American verbs ("Installing" -> "instal"): a manual's reader asks "How do I install"
_US_LEMMA = {"instal": "install", "enrol": "enroll", "fulfil": "fulfill", "distil": "distill", "instil": "instill"}


# the last word of a heading that is about its topic, not a task to do ("Pricing FAQs", "Networking overview")
_ABOUT_HEADS = {"faq", "faqs", "overview", "overviews", "basics", "concepts", "terminology", "glossary",
                "considerations", "limitations", "limits", "tips", "notes", "reference", "introduction", "summary",
                "essentials", "fundamentals", "questions", "matrix", "comparison", "highlights"}


def _gerund_base(tok) -> str:
    """The base form of a gerund the tagger may have taken for a noun ("managing" -> "manage")."""
    lemma = tok.lemma_.lower() if tok.tag_ == "VBG" and tok.lemma_.lower() != tok.lower_ \
        else parse(f"I am {tok.lower_} it")[2].lemma_.lower()
    return _US_LEMMA.get(lemma, lemma)


def heading_questions(text: str, start: int = 0, title: str = "") -> list[QA]:
    """Task headings of manuals ("Updating CDN configuration details") asked the way users ask
    them ("How do I update CDN configuration details?"); the answer is the first sentence of
    the section under the heading. The page's own ``title`` is no task heading ("Eating disorder")."""
    from agents.synth.offline.nlp import clean_passage
    lines = clean_passage(text).split("\n")
    out: list[QA] = []
    for i, line in enumerate(lines[:-1]):
        w = line.split()
        if not 2 <= len(w) <= 8 or line.endswith((".", ":", "?", "!")) or not w[0].endswith("ing") \
                or not w[0][:1].isupper():
            continue
        if title and " ".join(w).lower() == " ".join(title.split()).lower():
            continue        # the page's title names its subject, not a task: "Eating disorder" gives no "How do I eat ...?"
        doc = parse(line)
        head = doc[0]
        if head.tag_ != "VBG" or head.lemma_.lower() == head.lower_:
            continue
        if any(t.is_punct and t.text not in "-/" for t in doc) or any(t.lower_ in PRONOUNS for t in doc):
            continue
        if any(t.tag_ in ("VBZ", "VBD", "VBP", "MD") for t in doc[1:]):
            continue        # a sentence, not a task: "Creating contextual entities is easier"
        if w[-1].lower().strip("()") in _ABOUT_HEADS:
            continue        # a section about the topic, not a task: "Pricing FAQs" is no "How do I price FAQs?"
        if any(a.islower() and b.lower() in _COLUMN_HEADS and b[:1].isupper() for a, b in zip(w, w[1:])):
            continue        # a table's header row: "Provisioning instructions Description" is two columns
        # a task coordinated with the first one is asked in the same form: "Viewing and downloading your invoice" ->
        # "How do I view and download my invoice?" (not "view and downloading")
        bases = {t.i: _gerund_base(t) for t in doc[2:] if t.lower_.endswith("ing") and doc[t.i - 1].lower_ in ("and", "or")
                 and all(x.lower_ in ("and", "or", ",") or x.lower_.endswith("ing") for x in doc[1:t.i])}
        rest = detokenize(" ".join(bases[tok.i] if tok.i in bases else
                                   tok.text if (tok.pos_ == "PROPN" or tok.text[1:2].isupper() or tok.text == "I")
                                   else tok.lower_ for tok in doc[1:]))
        rest = _as_mine(rest)
        verb = _gerund_base(head)
        q = finish(f"How do I {verb} {rest}")
        nxt = next((ln for ln in lines[i + 1:] if len(ln.split()) >= 4), "")
        if not nxt or well_formed(q) is not None:
            continue
        first = task_answer(lines[i + 1:], verb) or re.split(r"(?<=[.!?])\s+", nxt)[0]
        out.append(QA(question=q, qtype="how", answer=first, sentence=first, verb=verb, sent_index=start + i, score=1.2))
    out.extend(faq_questions(lines, start + len(out)))
    out.extend(np_heading_questions(lines, start + len(out)))
    return out


def _uses_verb(sentence: str, verb: str) -> bool:
    """``sentence`` uses the task's verb in any inflection or its noun ("generates", "generation" for "generate")."""
    stem = verb[:-1] if verb.endswith("e") and len(verb) > 3 else verb
    return re.search(rf"\b{re.escape(stem)}", sentence, re.IGNORECASE) is not None


_REFERENCE = re.compile(r"^(?:for (?:more|further|detailed) |see |refer to |learn more|go to the documentation)",
                        re.IGNORECASE)


def _imperative(sentence: str) -> bool:
    """The sentence's main verb is an imperative with no subject ("On your server, implement a function ...",
    "Complete the following steps:"); a pointer elsewhere ("For more information, see ...") is none."""
    if _REFERENCE.match(sentence.strip()):
        return False
    return any(t.dep_ == "ROOT" and t.tag_ == "VB" and t.lower_ not in ("see", "refer")
               and not any(c.dep_ in ("nsubj", "nsubjpass", "aux", "mark") for c in t.children)
               for t in parse(sentence[:600]))


def _instructs(sentence: str) -> bool:
    """An instruction: an imperative (:func:`_imperative`) or what the reader can or must do ("You can configure
    ...", "you must create a key pair")."""
    return _imperative(sentence) or (re.search(r"\byou (?:can|must|should|need to|have to|may)\b", sentence,
                                               re.IGNORECASE) is not None and not _REFERENCE.match(sentence.strip()))


def does_task(sentence: str, verb: str) -> bool:
    """``sentence`` says how to do the task ``verb`` names: it uses the verb (:func:`_uses_verb`) or it instructs
    (:func:`_instructs`)."""
    return _uses_verb(sentence, verb) or _instructs(sentence)


def task_answer(section: list[str], verb: str, limit: int = 5) -> str:
    """The sentence of a task's section (the lines under its heading, up to the next heading) that answers how to do
    it: the first one when it uses the task's verb, says what the reader can do ("You can ...") or instructs;
    else the first one that both uses the verb and instructs, else the first that instructs (:func:`_instructs`),
    else the first. "Generating a JWT" is answered "On your server, implement a function that generates and returns
    a JSON Web Token ...", not by the section's first sentence, which says what the JWT is for."""
    sents: list[str] = []
    for ln in section:
        w = ln.split()
        if sents and 1 <= len(w) <= 8 and not ln.rstrip().endswith((".", ":", "!", "?", ")")):
            break           # the next heading
        if len(w) >= 4:
            sents.extend(x for x in re.split(r"(?<=[.!?])\s+", ln.strip()) if len(x.split()) >= 4)
        if len(sents) >= limit:
            break
    sents = sents[:limit]
    if not sents:
        return ""
    first = sents[0]
    if _uses_verb(first, verb) or re.match(r"you (?:can|may)\b", first, re.IGNORECASE) or _imperative(first):
        return first
    return next((x for x in sents if _uses_verb(x, verb) and _instructs(x)), None) \
        or next((x for x in sents if _instructs(x)), first)


_GENERIC_HEADINGS = re.compile(r"^(what[’']?s happening|why it[’']?s happening|how to fix it|before you begin|"
                               r"about this task|procedure|results?|next steps?|prerequisites?|examples?|overview|"
                               r"introduction|summary|note|notes|tip|important|see also|related|learn more|"
                               r"options|parameters|syntax|description|usage|steps?|output|input|table \d+.*)$",
                               re.IGNORECASE)


def _prose(line: str) -> bool:
    return len(line.split()) >= 5 and line.rstrip().endswith((".", "!", ":", ")")) and not line.rstrip().endswith("?")


def _section(lines: list[str], i: int, sub: str | None = None) -> str:
    """The first prose sentence of the section that starts after line ``i`` (of its ``sub``
    sub-section when it has one, e.g. "Why it's happening"), stopping at the next question heading."""
    j = i + 1
    if sub:
        for k in range(i + 1, min(len(lines), i + 12)):
            if lines[k].endswith("?") and k > i + 1:
                break
            if re.match(sub, lines[k], re.IGNORECASE):
                j = k + 1
                break
    for ln in lines[j:j + 8]:
        if ln.endswith("?"):
            return ""
        if _prose(ln):
            return re.split(r"(?<=[.!?])\s+", ln)[0]
    return ""


def faq_questions(lines: list[str], start: int = 0) -> list[QA]:
    """Question headings of FAQ and troubleshooting pages ("Why was my credit card declined?")
    asked as they stand; the answer is the first sentence of the section under the heading (under
    its "Why it's happening" / "How to fix it" sub-heading for why / how questions), kept only
    when it holds the asked-for slot."""
    from agents.synth.offline.answer_types import fills_slot, question_type
    out: list[QA] = []
    for i, line in enumerate(lines[:-1]):
        if not line.endswith("?") or not 4 <= len(line.split()) <= 16 or _GENERIC_HEADINGS.match(line.rstrip("?")):
            continue
        q = finish(line)
        if well_formed(q) is not None:
            continue
        qtype = question_type(q)
        sub = {"why": r"^why it[’']?s happening", "how": r"^how to fix it"}.get(qtype)
        ans = _section(lines, i, sub)
        if not ans or not fills_slot(qtype, ans):
            continue
        out.append(QA(question=q, qtype=qtype, answer=ans, sentence=ans, sent_index=start + i, score=1.1))
    return out


def as_written(phrase: str, text: str) -> str:
    """A heading's phrase as the text writes it inside its sentences: a first word capitalised only by the
    heading's sentence case in lower case when the text writes it so ("Default Spark configuration" ->
    "default Spark configuration"), and "the" before it when the text writes "the <phrase>" as a phrase of its
    own ("the Cross River gorilla", "the Great Wall of China"; not "the North Carolina" from "the North Carolina
    General Assembly": :func:`agents.synth.offline.discourse._with_article`)."""
    from agents.synth.offline.discourse import _with_article
    ws = phrase.split()
    if not ws or ws[0].lower() in ("the", "a", "an"):
        return phrase
    rest = (r"\s+" + r"\s+".join(map(re.escape, ws[1:]))) if len(ws) > 1 else ""
    if len(ws) > 1 and ws[0][:1].isupper() and not ws[0][1:2].isupper() \
            and re.search(rf"[a-z,;]\s+(?:the\s+)?{re.escape(ws[0].lower())}{rest}s?\b", text) \
            and not re.search(rf"[a-z,;]\s+(?:the\s+)?{re.escape(ws[0])}{rest}s?\b", text):
        ws[0] = ws[0].lower()
    phrase = " ".join(ws)
    if _with_article(list(re.finditer(rf"\b{re.escape(ws[0])}{rest}s?\b", text, re.IGNORECASE)), text):
        return "the " + phrase
    return phrase


_DEMONYM = re.compile(r"(?:an|ese|ish|ic|ec|ch|i)$")      # American, Chinese, English, Arabic, Aztec, French, Thai


def _opens_with(heading: str, sentence: str) -> bool:
    """The heading's phrase (or its head's last word, "transfers" for "Multipart transfers") among the first eight
    words of the sentence under it: the sentence is about it, not about something it mentions in passing."""
    first = [w.strip(".,;:()\"'").lower() for w in detokenize(sentence).split()[:8]]
    ws = [w.lower() for w in detokenize(heading).split()]
    return any(first[k:k + len(ws)] == ws for k in range(len(first))) or (
        ws[-1] in first and any(w in first for w in ws[:-1]))


def np_heading_questions(lines: list[str], start: int = 0) -> list[QA]:
    """Noun-phrase headings ("Multipart transfers") asked as definitions ("What are multipart
    transfers?") when the first sentence under the heading talks about the heading's head noun;
    that sentence is the answer. The heading is the question's topic (a follow-up may refer
    back to it)."""
    out: list[QA] = []
    body = "\n".join(lines)
    for i, line in enumerate(lines[:-1]):
        w = line.split()
        if not 2 <= len(w) <= 5 or line.endswith((".", ":", "?", "!", ",", ";")) or _GENERIC_HEADINGS.match(line):
            continue
        doc = parse(line)
        root = [t for t in doc if t.head == t]
        if len(root) != 1 or root[0].pos_ not in ("NOUN", "PROPN") or any(t.pos_ in ("VERB", "AUX", "PRON")
                                                                           for t in doc):
            continue
        if any(t.is_punct and t.text not in "-/&" for t in doc) or any(t.like_num for t in doc) \
                or any(t.tag_ == "VBG" or t.lower_.endswith("ing") for t in doc[:1]):
            continue          # "Accessing Container Registry" is a task heading, not a thing
        head = root[0]
        ans = _section(lines, i)
        if not ans or head.lemma_.lower() not in {t.lemma_.lower() for t in parse(ans)}:
            continue
        if not _opens_with(line, ans):
            continue          # the section is not about it: "Hot air balloon" over "In the United States, a pilot of a hot
                              # air balloon must have ..." is no answer to "What is a hot air balloon?"
        # a name keeps its capital, a demonym or language too ("American popular music", "English contract law",
        # "West African", "Western Roman Empire"; not the "New" of "New Helpful links tab", which the tagger calls one)
        named = [False] * len(doc)
        for t in reversed(doc):         # right to left: "West African" is named because "African" is
            named[t.i] = t.pos_ == "PROPN" or (t.ent_type_ in ("NORP", "LANGUAGE") and (
                _DEMONYM.search(t.lower_) is not None or (t.i + 1 < len(doc) and named[t.i + 1])))
        phrase = detokenize(" ".join(t.text if (n or t.text[1:2].isupper()) else t.lower_ for t, n in zip(doc, named)))
        plural = head.tag_ in ("NNS", "NNPS")
        be = "are" if plural else "is"
        phrase = as_written(phrase, body)
        topic = phrase if any(named) or phrase.startswith("the ") \
            else f"the {phrase}" if not plural else phrase
        q = finish(f"What {be} {phrase}")
        if well_formed(q) is not None:
            continue
        out.append(QA(question=q, qtype="define", answer=ans, sentence=ans, template=f"What {be} {{T}}?",
                      topic=topic, topic_role="subj", topic_kind="PLUR" if plural else "SING",
                      sent_index=start + i, score=1.0))
    return out


# -- well-formedness --------------------------------------------------------------------------
_EITHER_NUMBER = {"data", "media", "news", "series", "species", "means", "headquarters", "physics", "economics",
                  "mathematics", "politics", "staff", "police", "crew", "team", "family", "government", "public"}


_NEG_STEMS = {"do", "does", "did", "is", "are", "was", "were", "has", "have", "had", "ca", "wo", "could", "should",
              "would", "must", "need", "might", "ai", "dare", "sha", "may", "ought"}


_LAYOUT = re.compile(r"\b(?:the (?:following|below|above|preceding) (?!(?:spring|summer|autumn|fall|winter|"
                     r"year|years|day|days|week|weeks|month|months|season|seasons|morning|night|decade|century|game|"
                     r"match|election)\b)\w+|this (?:section|topic|page|document|tutorial|table|figure|diagram|example|"
                     r"procedure|guide|article)|the (?:table|diagram|figure|screenshot|image) below)\b", re.IGNORECASE)


def points_at_the_page(question: str) -> bool:
    """The question points at the document's layout, which a person asking an assistant does not
    see: "What does the following table contain?", "Do the below sections provide ...?", "What does
    this section describe?" (a following year or season is time, not layout)."""
    return _LAYOUT.search(question) is not None


def _unpaired_single_quote(q: str) -> bool:
    """A single quote that opens a quotation with none to close it, or closes one never opened (a closing one after
    an "s" may be a plural's possessive: "the players' union"): "Is highlight' parameter a boolean?" (from "New
    support for 'highlight' parameter")."""
    opening = len(re.findall(r"(?<!\w)'(?=\w)", q))
    closing = re.findall(r"(?<=\w)'(?!\w)", q)
    after_s = len(re.findall(r"(?<=s)'(?!\w)", q))
    return len(closing) - after_s > opening or opening > len(closing)


def well_formed(question: str, followup: bool = False) -> str | None:
    """``None`` when ``question`` is a well-formed English question, else the reason.

    Surface: capitalised, ends with one ``?``, no tokenised spacing, balanced brackets and
    quotes, no repeated word, no markdown; 5-16 words (``followup``: a question as asked in a
    conversation, which may lean on the history with a pronoun or ellipsis: 2-16).
    Parser: the question parses as an interrogative (wh-word or auxiliary first, or an
    elliptical ``And ...?``/``What about ...?`` follow-up), has a verb (or is elliptical), uses
    no subject pronoun as an object (or the reverse), agrees in number after do-support
    ("What do Knowledge Studio choose?" is rejected), has no stray capitalised function word and
    does not end in a determiner, a conjunction or a dangling preposition of a non-wh question.
    """
    q = question.strip()
    if not q.endswith("?") or q.endswith("??") or q.count("?") != 1:
        return "does not end with exactly one question mark"
    if not q[:1].isupper():
        return "does not start with a capital letter"
    if _TOKENISED.search(q) or "  " in q or re.search(r"[#*_`|<>{}]|\]\(|https?:", q):
        return "tokenised spacing or markup"
    if re.search(r"[\u0590-\u08ff\u0900-\u0dff\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]", q):
        return "words in another script"        # "What did names for the wall include s 土 龙, Tǔlóng?"
    for a, b in ("()", "[]"):
        if q.count(a) != q.count(b):
            return "unbalanced brackets"
    if q.count('"') % 2 or _unpaired_single_quote(q):
        return "unbalanced quotes"
    words = q[:-1].split()
    lo = 2 if followup else 5
    if not lo <= len(words) <= 16:
        return f"{len(words)} words (needs {lo}-16)"
    low = [w.lower().strip(",") for w in words]
    if any(a == b for a, b in zip(low, low[1:])):
        return "a repeated word"
    bad_neg = next((w for w in low if re.fullmatch(r"[a-z]+n[’']t\W*", w) and
                    re.sub(r"n[’']t\W*$", "", w) not in _NEG_STEMS), None)
    if bad_neg:
        return f"a negation glued to a non-auxiliary ({bad_neg!r})"
    if re.search(r"\b(\w+(?: \w+)+) \1\b", " ".join(low)):
        return "a repeated phrase"
    modals = [w for w in low if w in _MODALS]
    if len(modals) > len(set(modals)):
        return "a modal twice"          # "What can user applications can change ...?"
    doc = parse(q)
    toks = [t for t in doc if not t.is_punct]
    first = toks[0].lower_ if toks else ""
    is_ellipsis = first == "and" or (first == "what" and len(toks) > 1 and toks[1].lower_ == "about")
    if followup and is_ellipsis:
        if not any(t.pos_ in ("NOUN", "PROPN", "PRON", "NUM") or t.ent_type_ for t in toks[1:]):
            return "an elliptical follow-up without a noun phrase"
    else:
        if first not in WH_WORDS and first not in AUX_FIRST:
            return f"not an interrogative (starts with {first!r})"
        if not any(t.pos_ in ("VERB", "AUX") for t in toks):
            return "no verb"
    for t in toks[1:]:
        if t.text[:1].isupper() and t.pos_ in ("DET", "ADP", "CCONJ", "SCONJ", "AUX", "VERB", "ADV", "ADJ") \
                and t.text not in ("I",) and not t.ent_type_:
            return f"stray capitalised {t.text!r} inside the question"
    for t in toks:
        if t.lower_ in ("they", "he", "she", "we", "i") and t.dep_ in ("dobj", "pobj", "dative"):
            return f"a subject pronoun {t.text!r} used as an object"
        if t.lower_ in ("them", "him", "us", "me") and t.dep_ in ("nsubj", "nsubjpass"):
            return f"an object pronoun {t.text!r} used as a subject"
    if re.match(r"^(?:what|when|where|why|how|which|who)\s+(?:they|it|he|she|we|I|you)\s+\w+", q, re.IGNORECASE) \
            and not re.match(r"^how (?:many|much)\b", q, re.IGNORECASE):
        return "a wh-question without its auxiliary"
    if re.search(r"\b(?:does|is|was|has) (?:they|we|you|I)\b|\b(?:do|are|were|have) (?:it|he|she)\b", q, re.IGNORECASE):
        return "a pronoun that does not agree with its auxiliary"          # "Does they ...?", "Is they ...?"
    if first in ("who", "what") and len(toks) > 1 and toks[0].dep_ == "nsubj" and toks[1].tag_ == "VBP" \
            and toks[1].pos_ == "VERB":
        return f"a subject {first!r} with a plural verb ({toks[1].text!r})"      # "Who version 4.10 CIS ...?"
    comma = next((t for t in doc if t.text == ","), None)
    if first in AUX_FIRST and comma is not None and comma.i <= 4 and doc[comma.i - 1].tag_ in ("VBG", "RB"):
        return "an aside before the subject"        # "Are broadly speaking, offensive and defensive linemen ...?"
    pron_noun = next((t for t in toks[:-1] if t.lower_ in ("they", "he", "she", "we")
                      and doc[t.i + 1].pos_ in ("NOUN", "PROPN")), None)
    if toks[0].lower_ in ("is", "was", "are", "were") and len(toks) > 2 and toks[-1].pos_ == "PRON" \
            and toks[-1].lower_ in ("it", "they", "them", "him", "her") and toks[-2].pos_ != "ADP" \
            and not any(t.pos_ == "VERB" for t in toks):
        return f"a pronoun as the predicate ({toks[-1].text!r})"      # "Was Vespasian it?"
    if re.match(r"^(?:\w+ )?(?i:do|does|did|can|could|should|will|would|must|may|might) (?:I|you|we)\b", q) \
            and any(t.lower_ in ("itself", "themselves", "himself", "herself") and doc[t.i - 1].pos_ in ("VERB", "ADP")
                    for t in toks[1:]):
        # "How do I improve itself?" (an emphatic one after a noun is fine: "Can I protect the cluster itself?")
        return "a reflexive pronoun that does not agree with its subject"
    if first == "when" and toks[1].dep_ == "ROOT" and toks[1].lemma_ == "be" and not any(t.pos_ == "VERB" for t in toks):
        subj = next((c for c in toks[1].children if c.dep_ == "nsubj"), None)
        if subj is not None and all(c.dep_ in ("advmod", "nsubj", "punct") for c in toks[1].children) \
                and toks[-1].ent_type_ == "PERSON" and (toks[-1].i == subj.i or any(
                    c.dep_ == "appos" and c.i == toks[-1].i for c in subj.children)):
            return "a time asked of a person"       # "When was the real-life murderer Ed Gein?" (nothing said of him)
    if re.search(r"\bpav(?:e|es|ed|ing) the way\b(?! for\b| to\b)", q, re.IGNORECASE):
        return "a complement cut off ('pave the way' without what it leads to)"
    in_np = next((t for t in toks[1:] if t.lower_ in ("they", "he", "she", "it", "them")
                  and doc[t.i - 1].pos_ in ("NOUN", "PROPN", "ADJ", "NUM")), None)
    if in_np is not None:     # "Do domain they specify a list of IP addresses?" (a phrase half replaced)
        return f"a pronoun inside a noun phrase ({doc[in_np.i - 1].text!r} {in_np.text!r})"
    if pron_noun is not None:
        return f"a pronoun used as a modifier ({pron_noun.text!r} {doc[pron_noun.i + 1].text!r})"   # "they resolvers"
    if toks[0].lower_ in ("do", "does", "did") and len(toks) > 1 and toks[1].tag_ == "VB" and toks[1].dep_ == "ROOT" \
            and not any(t.dep_ in ("nsubj", "nsubjpass") for t in toks) \
            and not any(c.dep_ == "ccomp" for c in toks[1].children) and not any(t.tag_ == "VB" for t in toks[2:]):
        return "no subject after do-support"          # an instruction asked as a fact: "Does toggle it to Enabled?"
    m = re.match(r"^(?:\w+ )?(?:do|does|did) (?:I|you|we|they|it|he|she) (\w+)", q)
    if m and (m.group(1).lower().endswith("ing") or m.group(1).lower() in ("be", "been", "is", "are", "was", "were")):
        return f"no base-form verb after do-support ({m.group(1)!r})"
    # the verbs that take do-support, with where their first "do" stands
    supported: dict[int, int] = {}
    for a in toks:
        if a.lower_ in ("do", "does", "did") and a.dep_ == "aux":
            supported.setdefault(a.head.i, a.i)
    for t in toks:
        if t.dep_ == "conj" and (t.tag_ in ("VBZ", "VBD") and supported.get(t.head.i, t.i) < t.i
                                 or t.tag_ == "NNS" and t.i + 1 < len(doc) and doc[t.i + 1].dep_ == "prt"
                                 and supported.get(doc[t.i + 1].head.i, t.i) < t.i):
            # a second verb left finite after do-support: "Did the company buy the factory and sold it?", "Does Tex
            # reunite with his daughter and teams up with a team?" (a verb the parser read as a noun: it takes "up")
            return f"a finite verb conjoined after do-support ({t.text!r})"
        # do-support agreement: "What do Knowledge Studio choose?", "How does the users log in?"
        if t.lower_ in ("do", "does", "did") and t.dep_ == "aux" and t.head.tag_ == "VBZ" and t.head.i > t.i:
            return f"no base-form verb after do-support ({t.head.text!r})"     # "What do they resolvers support?"
        if t.lower_ in ("do", "does") and t.dep_ == "aux":
            subj = next((c for c in t.head.children if c.dep_ in ("nsubj", "nsubjpass")), None)
            if subj is None or subj.lower_ in ("i", "you", "we", "they", "it", "he", "she", "who", "what", "which"):
                continue
            if subj.tag_ in ("NN", "NNP") and t.lower_ == "do" and not any(c.dep_ == "cc" for c in subj.children):
                return f"subject-verb agreement ({t.text!r} with {subj.text!r})"
            if subj.tag_ in ("NNS", "NNPS") and t.lower_ == "does" and subj.pos_ != "PROPN":
                return f"subject-verb agreement ({t.text!r} with {subj.text!r})"
        # be-auxiliary agreement: "What were the growing commerce contributing?", "Where is the rivers?"
        if t.lower_ in ("is", "are", "was", "were") and t.i == 1:
            verb = t.head if t.dep_ in ("aux", "auxpass") else t
            subj = next((c for c in verb.children if c.dep_ in ("nsubj", "nsubjpass")), None)
            if subj is None or subj.pos_ in ("PRON", "PROPN") or any(c.dep_ == "cc" for c in subj.children) \
                    or subj.lower_ in _EITHER_NUMBER:
                continue
            if subj.tag_ == "NN" and t.lower_ in ("are", "were") or subj.tag_ == "NNS" and t.lower_ in ("is", "was"):
                return f"subject-verb agreement ({t.text!r} with {subj.text!r})"
    if toks and toks[0].lower_ in ("are", "were") and toks[0].dep_ == "ROOT" \
            and not any(c.dep_ in ("nsubj", "nsubjpass", "expl") for c in toks[0].children):
        # a yes/no copula the parser read with two predicates: the first one is its subject ("Are the future
        # therapeutic potential of experiments a valuable tool?")
        subj = next((c for c in toks[0].children if c.dep_ == "attr"), None)
        if subj is not None and subj.tag_ == "NN" and not any(c.dep_ in ("cc", "conj") for c in subj.children):
            return f"subject-verb agreement ({toks[0].text!r} with {subj.text!r})"
    if re.search(r"\b(?:me|us)\b", request_body(q) or q, re.IGNORECASE) \
            and not re.search(r"\b(?:I|we)\b", q):       # (a request to the assistant is no quoted speech)
        return "a first-person object without a first-person subject (quoted speech)"
    if re.match(r"^\w+'(?:ve|re|ll|d)\b", q):
        return "a contracted auxiliary after the wh-word"                   # "What've people got ...?"
    if re.search(r"\b(?:in order|so as|a way|the ability|an attempt|an effort|on behalf|in the time|in front|in terms"
                 r"|in spite|such as|instead)\?$", q, re.IGNORECASE):
        return "a complement cut off (ends in 'in order', 'a way', ...)"     # "Does he sacrifice himself in order?"
    last = toks[-1]
    if last.pos_ in ("DET", "CCONJ", "SCONJ", "PART") or last.lower_ in ("the", "a", "an", "and", "or", "of"):
        return f"ends in {last.text!r}"
    if last.pos_ == "ADP" and (first not in WH_WORDS or first in ("when", "where", "why", "how")
                               and not (len(toks) > 1 and toks[1].lower_ in ("many", "much", "long", "often"))
                               and not (first == "where" and last.lower_ in ("from", "to"))):
        return f"dangling preposition {last.text!r}"     # "When did they account for?" (what/who may strand one)
    if len(list(doc.sents)) > 1 and not any(t.text == "," for t in doc):
        return "more than one sentence"
    return None
