"""Stage 5, checks: the offline answerer, verifier and uniqueness judge.

* :func:`answer` - the offer's sentence with its supporting context (the next sentence, or the list a lead-in
  announces), after "Yes."/"No." for a yes/no form; a question that is not one of the passage's offers is answered
  by its best-supported sentence.
* :func:`verify` - the ``checks`` rules, each a reason or None: the passage offers what is asked, the answer names
  the concept, question and answer fit (MiniLM cosine at least ``MIN_FIT``), every answer sentence is the passage's.
* :func:`also_answers` - the uniqueness judge: another passage answers when one of its sentences offers the same
  intent about the same concept and fits the reference answer (``ALSO_FIT``); with no reference answer (an
  unanswerable question), the intent about the concept alone. The same test, run over the corpus search's hits,
  finds the extra positives of an answerable question and shows that no passage answers an unanswerable one.
"""
from __future__ import annotations

import re
from functools import lru_cache

from agents.synth.offline.concepts import same
from agents.synth.offline.discourse import offer_of
from agents.synth.offline.forms import is_yesno, parse
from agents.synth.offline.intents import Offer, passage_offers
from agents.synth.offline.lexicon import lexicon, rule, rules
from agents.synth.offline.nlp import clean_passage, detokenize, main_root, sentence_spans
from agents.synth.offline.semantic import best_similarity
from agents.synth.text import content_words, jaccard_words, overlap, sentences, words

MIN_FIT = 0.3       # MiniLM cosine of the standalone question and the answer's first sentence
ALSO_FIT = 0.7      # MiniLM cosine of another passage's sentence and the reference answer's sentences
LIST_ITEMS = 6      # list items a lead-in ("follow these steps:") brings into an answer


def passage_sentences(text: str) -> list[str]:
    """The passage's sentences as the parser splits them (each line on its own)."""
    return [s.text for s in sentence_spans(text)]


def _a_sentence(s: str) -> bool:
    return s.rstrip().endswith((".", "!", "?", ":", ";", ")", '"', "”"))


def supporting_context(sents: list[str], idx: int) -> str:
    """Sentence ``idx`` and the next one when it is a sentence; a lead-in ending in ":" brings its list (up to
    ``LIST_ITEMS`` items), so no answer stops at what it announces."""
    out = [sents[idx]]
    j = idx + 1
    if not out[-1].rstrip().endswith(":") and j < len(sents) and _a_sentence(sents[j]):
        out.append(sents[j])
        j += 1
    items = 0
    while out[-1].rstrip().endswith(":") and j < len(sents) and items < LIST_ITEMS and _a_sentence(sents[j]):
        out.append(sents[j])
        j += 1
        items += 1
    return " ".join(out)


def answers_read(history: list) -> str:
    """The words of the answers of a conversation's ``history`` ([role, text] pairs), one answer per line: what
    the user has read (:func:`already_read`)."""
    return "\n".join(" " + " ".join(words(text)) + " " for role, text in history or [] if role == "assistant")


def already_read(text: str, read: str) -> bool:
    """``text`` (after a "Yes."/"No.") is one of the answers in ``read`` (:func:`answers_read`), or part of one."""
    body = " ".join(words(text.removeprefix("Yes. ").removeprefix("No. ")))
    return bool(body) and f" {body} " in read


def _says_more(concept, span) -> bool:
    """The sentence says more of ``concept``: it names it, or its subject is the pronoun for it ("It was rebuilt in
    1990." after "The bridge opened in 1937.")."""
    if concept.head in words(span.text):
        return True
    pronoun = ("he", "she") if concept.person else ("they",) if concept.plural else ("it",)
    return any(t.dep_ in ("nsubj", "nsubjpass") and t.lower_ in pronoun for t in main_root(span).children)


def answer(question: str, standalone: str, passage: dict, read: str = "") -> str:
    """The offline answer of ``standalone`` (as ``question`` was asked) from ``passage``. An overview ("Can you tell
    me more about it?") whose sentence the user has read (``read``: :func:`answers_read`) is answered by the next
    sentence that says more of its concept (:func:`_says_more`): what the passage says of it that the conversation
    has not."""
    text = passage["text"]
    sents = passage_sentences(text)
    if not sents:
        return detokenize(text)
    offer = offer_of(standalone or question, text)
    if offer is None:
        idx = max(range(len(sents)), key=lambda i: (overlap(standalone or question, sents[i]), -i))
        return supporting_context(sents, idx)
    if offer.intent == "overview" and read and already_read(supporting_context(sents, offer.sent_index), read):
        spans = sentence_spans(text)
        new = next((i for i in range(offer.sent_index + 1, len(sents)) if len(words(sents[i])) >= 5
                    and _says_more(offer.concept, spans[i]) and not already_read(sents[i], read)), None)
        if new is not None:     # (its pronoun names the concept: the question just did)
            return supporting_context(sents, new)
    body = supporting_context(sents, offer.sent_index)
    if offer.sent_index and offer.concept.head not in " ".join(words(sents[offer.sent_index])):
        body = f"{sents[offer.sent_index - 1]} {body}"      # "It was opened in 1937." says what "it" is before it
    if is_yesno(standalone, offer) or is_yesno(question, offer):
        return ("No. " if offer.negated else "Yes. ") + body
    return body


@rule("checks")
def offered(x: dict, offer: Offer | None) -> str | None:
    """The gold passage offers what the question asks: "How much does the annual fee cost?" of a passage that
    never gives a price is refused."""
    if offer is not None:
        return None
    q = x["standalone_question"]
    if overlap(q, x["passage"]["text"]) >= 0.6:
        return None
    return "the passage does not offer what the question asks (no sentence about its concept with its intent)"


@rule("checks")
def names_concept(x: dict, offer: Offer | None) -> str | None:
    """The answer names the concept asked about: "The late fee is $25." does not answer "How much does the annual fee
    cost?"."""
    if offer is None:
        return None
    concept = set(words(offer.concept.text))
    said = set(words(x["answer"]))
    if concept and len(concept & said) * 2 >= len(concept):
        return None
    if offer.concept.head in {w.rstrip("s") for w in said} | said:
        return None
    spans = sentence_spans(x["answer"])
    if offer.intent == "overview" and spans and _says_more(offer.concept, spans[0]):
        return None         # "It was rebuilt in 1990." tells more of the bridge the question names
    return f"the answer does not name {offer.concept.text!r}"


@rule("checks")
def fits(x: dict, offer: Offer | None) -> str | None:
    """Question and answer mean the same thing (MiniLM cosine of the standalone question and the answer's first
    sentences at least ``MIN_FIT``): "Where did guinea pigs originate?" fits "They originated in the Andes."."""
    body = re.sub(r"^(?:Yes|No)\. ", "", x["answer"])
    fit = best_similarity(x["standalone_question"], (sentences(body) or [body])[:2])
    return None if fit >= MIN_FIT else f"question and answer do not fit (MiniLM cosine {fit:.2f})"


@rule("checks")
def faithful(x: dict, offer: Offer | None) -> str | None:
    """Every answer sentence is a sentence of the passage (content-word Jaccard at least 0.8): "It is painted pink
    by penguins." is not."""
    body = re.sub(r"^(?:Yes|No)\. ", "", x["answer"])
    psents = passage_sentences(x["passage"]["text"]) or sentences(clean_passage(x["passage"]["text"]))
    flat = " ".join(" ".join(psents).split())
    # (an answer sentence is the passage's as written, whichever splitter cut it; else its words must be)
    worst = min((1.0 if " ".join(a.split()) in flat else max((jaccard_words(a, p) for p in psents), default=0.0)
                 for a in sentences(body) or [body]), default=0.0)
    return None if worst >= 0.8 else f"an answer sentence is not supported by the passage (support {worst:.2f})"


def verify(x: dict) -> tuple[bool, bool, list[str]]:
    """(answerable, faithful, reasons) of ``x`` {question, standalone_question, answer, passage}."""
    offer = offer_of(x["standalone_question"], x["passage"]["text"])
    reasons = {r.__name__: why for r in rules("checks") if (why := r(x, offer))}
    answerable = not any(k in reasons for k in ("offered", "names_concept", "fits"))
    return answerable, "faithful" not in reasons, list(reasons.values())


@lru_cache(maxsize=64)
def template_words(intent: str) -> frozenset[str]:
    """The words the intent's templates bring (the rest of a question names its concept)."""
    i = lexicon().intents[intent]
    return frozenset(w for t in (*i.full, *i.pronoun, *i.ellipsis) for w in words(t)) | {"it", "they", "them"}


def read_question(question: str) -> str | None:
    """The intent of a question made from the templates; None for any other question."""
    found = parse(question)
    return found[0][0] if found else None


def also_answers(question: str, ref_answer: str, candidate: str) -> tuple[bool, str]:
    """(answers, reason): does the passage ``candidate`` answer ``question`` (see the module docstring)? A
    candidate's offer is about the question's concept when every word of its concept is in the question."""
    intent = read_question(question)
    if intent is None:
        s = overlap(question, candidate)
        return (s >= 0.8, f"{s:.2f} of the question's terms in the passage (not a template question)")
    asked = set(words(question))
    own = asked - template_words(intent)
    if own and not own & set(words(candidate)):
        return False, "the passage names nothing the question asks about"     # (no parse needed)
    hits = [o for o in passage_offers(candidate) if o.intent == intent and intent != "overview"
            and set(words(o.concept.text)) <= asked]
    if not hits:
        return False, f"no sentence offers {intent} about the question's concept"
    if not ref_answer:
        return True, f"a sentence offers {intent} about {hits[0].concept.text!r}"
    ref = re.sub(r"^(?:Yes|No)\. ", "", ref_answer)
    refs = (sentences(ref) or [ref])[:3]
    best = max(best_similarity(o.sentence, refs) for o in hits)
    if best >= ALSO_FIT:
        return True, f"a sentence offers {intent} about {hits[0].concept.text!r} and fits the answer (MiniLM {best:.2f})"
    return False, f"a sentence offers {intent} about its concept but says something else (MiniLM {best:.2f})"


def offers_about(intent: str, concept, text: str) -> bool:
    """The passage offers ``intent`` about ``concept`` (an unanswerable question must find none)."""
    return any(o.intent == intent and same(o.concept, concept) for o in passage_offers(text))

