"""The offline answerer and verifier checks.

Answer: the span that answers the (standalone) question, then its supporting context:
``"<span>. <the span's sentence> <the next sentence>"``. The span comes from the questioner's
own parse when the question is one the generator makes from this passage; otherwise from the
best-supported sentence, as its first entity of the asked-for type.

Verifier checks (:func:`check`): the answer's span is in the gold passage; its type fits the
question type (a date for *when*, a number for *how many*, a person for *who* ...); every
number or year the question names is in the supporting context (a question about 1970 is
not answered by a sentence about 1933); the question and the supporting sentence fit by
MiniLM similarity; every sentence of the answer is supported by the passage; a definition question's
support names what it asks about with a defining verb (:func:`_defines`).

A comparison question over two passages (:mod:`agents.synth.offline.compare`) is answered by
each thing's definition from its own passage with its supporting sentences
(:func:`compare_answer`), and checked part by part against its own passage
(:func:`check_compare`).
"""
from __future__ import annotations

import re

from agents.synth.offline.answer_types import answer_span, fills_slot, question_type, request_body
from agents.synth.offline.matching import norm, span_in, states, support, yes_no
from agents.synth.offline.nlp import clean_passage, detokenize, parse
from agents.synth.offline.qgen import does_task, infobox, passage_questions
from agents.synth.text import jaccard_words, sentences

MIN_FIT = 0.3          # MiniLM cosine of question and supporting sentence


def _key(q: str) -> str:
    return " ".join(norm(q).split())


def answer(question: str, standalone: str, passage: dict) -> str:
    text = passage["text"]
    sents = sentences(clean_passage(text))
    if not sents:
        return detokenize(text)
    key = _key(standalone or question)
    about = _request_subject(standalone or question)
    if about:       # a request: what the passage says about it, from the first sentence that names it
        named = re.compile(rf"(?<!\w){re.escape(about)}(?!\w)")
        names = [i for i, s in enumerate(sents) if named.search(norm(s))]
        # a sentence about it (naming it among its first words) before one that mentions it in passing
        first = next((i for i in names if named.search(" ".join(norm(sents[i]).split()[:6]))),
                     names[0] if names else None)
        if first is not None:
            return " ".join(sents[first: first + 2])
    cands = passage_questions(text, passage.get("title") or "")
    qa = next((c for c in cands if _key(c.question) == key), None) or \
        next((c for c in cands if key.startswith((_key(c.question) + " in ", _key(c.question) + " for "))),
             None)   # asked in a context
    if qa is not None:
        span, sentence = qa.answer, qa.sentence
    else:
        qtype = question_type(standalone or question)
        scored = sorted(range(len(sents)), key=lambda i: (-support(standalone or question, sents[i]), i))
        best = next((i for i in scored[:3] if fills_slot(qtype, sents[i])), scored[0])
        sentence = sents[best]
        span = answer_span(sentence + " x. y.", qtype) if qtype in ("when", "how_many", "how_much", "who",
                                                                     "where") else ""
    idx = next((i for i, s in enumerate(sents) if _key(s) == _key(sentence)), None)
    if idx is None:
        idx = max(range(len(sents)), key=lambda i: jaccard_words(sents[i], sentence))
    context = supporting_context(sents, idx)
    span = span.strip().rstrip(".,;: ")     # no "every 90 days,."
    if span and _key(span) != _key(sentence):
        return f"{span[0].upper() + span[1:]}. {context}"
    return context


LIST_ITEMS = 6          # list items a lead-in ("To rename a skill, follow these steps:") brings into an answer


def _a_sentence(s: str) -> bool:
    """Ends like a sentence or a list item: not a heading ("Renaming a skill") left after the answer."""
    return s.rstrip().endswith((".", "!", "?", ":", ";", ")", '"', "”"))


def supporting_context(sents: list[str], idx: int) -> str:
    """The answer's supporting context: sentence ``idx`` and the next one, the next one only when it is a
    sentence (a heading after it belongs to the next section: no "... a skill. Renaming a skill"); a
    sentence that leads into a list ("follow these steps:") brings the list (up to ``LIST_ITEMS`` items that
    end like sentences), so no answer ends at a colon without what it announces."""
    out = [sents[idx]]
    j = idx + 1
    if not out[-1].rstrip().endswith(":") and j < len(sents) and _a_sentence(sents[j]):
        out.append(sents[j])
        j += 1
    if out[-1].rstrip().endswith(":"):
        items = 0
        while j < len(sents) and items < LIST_ITEMS and _a_sentence(sents[j]) and not sents[j].rstrip().endswith(":"):
            out.append(sents[j])
            j += 1
            items += 1
    return " ".join(out)


def _request_subject(question: str) -> str:
    """The subject of a request "What can you tell me about X in C?" (normalised; the context "in C", or "for C"
    when X has an "in", dropped), "" for any other question."""
    rest = request_body(question).rstrip("?")
    if not rest:
        return ""
    head, sep, _ = rest.rpartition(" for ")
    x = head if sep and " in " in head else rest.rpartition(" in ")[0] or rest
    return norm(re.sub(r"^(?:the|a|an) ", "", x.strip(), flags=re.IGNORECASE))


def check(x: dict) -> dict:
    """The verifier's findings for ``x`` (question, standalone_question, answer, passage):
    {span_in_passage, type_fits, constraints_met, fit, supported, reasons}."""
    q = x.get("standalone_question") or x["question"]
    qtype = question_type(q)
    passage = detokenize(clean_passage(x["passage"]["text"]))
    ans = detokenize(x["answer"])
    span = answer_span(ans, qtype)
    asents = sentences(ans) or [ans]
    context = " ".join(asents[1:]) if len(asents) > 1 and span == asents[0].rstrip(".") else ans
    if _request_subject(q):
        context = ans       # a request's answer has no leading span: all of it is what the passage says
    reasons = []
    yn = yes_no(span) if qtype == "yesno" else None
    if yn:
        # a yes/no answer: its supporting sentence states the clause asked about, with the answer's polarity
        span_ok = states(q, asents[1] if len(asents) > 1 else context, yn)[0]
        if not span_ok:
            reasons.append(f"the supporting sentence does not state what the question asks with the answer {span!r}")
    else:
        span_ok = span_in(span, passage)
        if not span_ok:
            reasons.append(f"the answer span {span[:50]!r} is not in the passage")
    type_ok = fills_slot(qtype, span, context) or (qtype in ("what", "define", "how", "yesno") and bool(span))
    if not type_ok:
        reasons.append(f"the answer {span[:50]!r} is not a {qtype.replace('_', ' ')} answer")
    if qtype == "define" and type_ok and not _defines(q, asents[:3]):      # (a short defining sentence reads as a span)
        type_ok = False
        reasons.append("the answer does not define what the question asks about")
    task = re.match(r"how (?:do|can|should) i (\w+)", q.strip(), re.IGNORECASE)
    if task and type_ok and not any(does_task(a, task.group(1).lower()) for a in asents[:LIST_ITEMS + 2]):
        type_ok = False       # "How do I generate a JWT?" answered with what the JWT is for
        reasons.append(f"the answer does not say how to {task.group(1).lower()}: it neither uses the verb nor "
                       f"instructs")
    wanted = set(re.findall(r"\b\d[\d,.]*\d\b|\b\d\b", q))
    missing = {w for w in wanted if not span_in(w, context)}
    if missing:
        reasons.append(f"the answer does not mention {', '.join(sorted(missing))} named in the question")
    from agents.synth.offline.semantic import best_similarity
    # (a request's content is its subject: "What can you tell me about" only dilutes the similarity)
    fit = best_similarity(request_body(q) or q, (sentences(context) or [context])[:3])
    if fit < MIN_FIT:
        reasons.append(f"question and answer do not fit (MiniLM cosine {fit:.2f})")
    psents = sentences(clean_passage(x["passage"]["text"]))       # line breaks end sentences there too
    support_min = min((max((jaccard_words(a, p) for p in psents), default=0.0) for a in asents[1:] or asents),
                      default=0.0)
    supported = support_min >= 0.8
    if not supported:
        reasons.append(f"an answer sentence is not supported by the passage (support {support_min:.2f})")
    if any(infobox(a) for a in asents):
        supported = False
        reasons.append("an answer sentence is a flattened infobox, not prose")
    return {"span_ok": span_ok, "type_ok": type_ok, "constraints_ok": not missing, "fit": fit,
            "fit_ok": fit >= MIN_FIT, "supported": supported, "reasons": reasons, "qtype": qtype, "span": span}


# (a copula, not a passive: "The Panthers are supported in both Carolinas" says nothing of what they are)
_DEFINING = re.compile(r"\b(?:(?:is|are|was|were)(?!\s+(?:\w+ly\s+)?(?!used\b)\w+ed\b)|refers? to|means?|stands? for|"
                       r"describes?|provides?|offers?|lets?|enables?|allows?|helps?|consists? of|includes?)\b",
                       re.IGNORECASE)


def _defines(question: str, sents: list[str]) -> bool:
    """A "What is X?" answer says what X is: a supporting sentence names X (half its content words or more)
    with a defining verb ("X is a managed Kubernetes offering", "X provides ..."); a sentence that only
    mentions X in passing ("For more information about how to set up Y in X, see ...") does not."""
    topic = re.sub(r"^(?:what|who) (?:is|are|was|were) (?:an? |the )?", "", question.strip().lower()).rstrip("?")
    head = (re.findall(r"[^\W_]+", topic) or [""])[-1]
    # the defining verb follows the thing named (up to 8 words on, past an apposition): "X, a Y, is ..." defines
    # X; "Mike Pope won all four of his Super Bowl rings as the coach ... was" does not define "Super Bowl ring"
    near = re.compile(rf"\b{re.escape(head)}(?:e?s)?\b(?:\W+\w+){{0,8}}?\W+{_DEFINING.pattern}", re.IGNORECASE)
    return any(support(topic, s) >= 0.5 and near.search(_QUOTED.sub(" ", s))
               and not re.match(r"^(?:for more|see|if|to)\b", s.lower()) for s in sents)


# a quotation inside a sentence: what someone said of X defines X for them, not for the reader ("saying that
# 'when it comes to professional teams, the Carolina Panthers are the team that South Carolina calls their own'")
_QUOTED = re.compile(r'"[^"]*"|“[^”]*”|``.*?\'\'')


def answerable(question: str, passage_text: str) -> bool:
    """Most of the question's content words are in the passage (the entity and the predicate)."""
    return support(question, clean_passage(passage_text)) >= 0.5 and bool(parse(question))


def compare_answer(standalone: str, passages: list[dict]) -> str:
    """Each compared thing's definition with its supporting context, in the question's order."""
    from agents.synth.offline.compare import parts
    ps = parts(standalone, passages)
    if ps is None:
        raise ValueError(f"not a comparison of these {len(passages)} passages: {standalone!r}")
    return " ".join(_context(answer(qa.question, qa.question, p)) for qa, p in ps)


def _context(part: str) -> str:
    """An answer without its leading span ("A major river. The Snake River is ..." -> "The Snake River is ...")."""
    sents = sentences(part)
    return " ".join(sents[1:]) if len(sents) > 1 else part


def check_compare(x: dict) -> dict:
    """The verifier's findings for a comparison (``passage`` + ``also``): each part's definition
    is checked against its own passage as a one-passage answer (:func:`check`), and the answer
    holds each part's supporting sentences, nothing else."""
    from agents.synth.offline.compare import parts
    q = x.get("standalone_question") or x["question"]
    ps = parts(q, [x["passage"], *x.get("also", [])])
    if ps is None:
        return {"span_ok": False, "type_ok": False, "constraints_ok": True, "fit": 0.0, "fit_ok": False,
                "supported": False, "qtype": "compare", "span": "",
                "reasons": ["the question is not a comparison of what the gold passages define"]}
    ans = norm(x["answer"])
    left = ans                      # what the parts' supporting sentences do not cover
    reasons: list[str] = []
    found = {"span_ok": True, "type_ok": True, "constraints_ok": True, "fit_ok": True, "supported": True}
    fit = 1.0
    for qa, p in ps:
        part = answer(qa.question, qa.question, p)
        c = check({"question": qa.question, "standalone_question": qa.question, "answer": part, "passage": p})
        for k in found:
            found[k] = found[k] and c[k]
        fit = min(fit, c["fit"])
        reasons += [f"{qa.topic}: {r}" for r in c["reasons"]]
        support = norm(_context(part))
        if support not in ans:
            found["supported"] = False
            reasons.append(f"the answer leaves out what its passage says about {qa.topic}")
        left = left.replace(support, " ")
    if len(left.split()) > 3:
        found["supported"] = False
        reasons.append("the answer says more than the two passages' definitions")
    return {**found, "fit": fit, "reasons": reasons, "qtype": "compare", "span": ""}
