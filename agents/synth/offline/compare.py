"""Comparison questions across two passages of the cluster.

Two shown passages that define two *comparable* things ("VPC security groups" and "the cluster
security group"; "the Snake River" and "the Portneuf River") give the question people ask when
they meet both: ``What is the difference between X and Y?``. Its gold is both passages (the
first defines X, the second Y); the answer is each definition with its supporting sentence,
each checked against its own passage by the verifier (:func:`parts`).

Comparable: the two topics differ, neither contains the other, neither is a person, and they
share their head noun, not a generic one ("VPC security groups" / "the cluster security group";
"a functional ID" / "a federated ID"; sharing any word paired "prices for IBM Cloud resources" with
"queue manager resources"), or their definitions have the same head noun that is not a generic one ("a
major river" / "the largest river"), and they are not two names of one thing (close names defined
alike: "the Second World War" / "World War II"). (Measured on the MTRAG Cloud clusters: close defining
sentences by MiniLM alone paired unrelated things, "speech to text" / "IBM Cloud Pak for Data".)

Inside a segment only the segment's focus is compared (a comparison of two other things would
change the subject); the follow-up leans on the history like people's do: "How is it different
from Y?" ("How are they different from Y?"); the standalone form names both.
"""
from __future__ import annotations

import re

from agents.synth.offline.nlp import detokenize, parse
from agents.synth.offline.qgen import QA, finish, passage_questions, well_formed

_GENERIC_HEADS = {"way", "set", "part", "type", "kind", "list", "number", "thing", "one", "example", "term",
                  "name", "feature", "option", "method", "process", "tool", "service", "system", "group"}
_GENERIC_TOPIC_HEADS = {"thing", "one", "way", "part", "type", "kind", "resource", "information", "data", "detail",
                        "option", "setting", "step", "example", "result", "item", "feature", "use", "number"}
OPENING = "What is the difference between "
_ASK = re.compile(r"^What is the difference between (?P<x>.+?) and (?P<y>.+)\?$")


def _bare(topic: str) -> str:
    return re.sub(r"^(the|a|an)\s+", "", topic.strip(), flags=re.IGNORECASE).lower()


def _head(np_text: str) -> str:
    doc = parse(np_text)
    roots = [t for t in doc if t.head == t]
    return roots[0].lemma_.lower() if roots and roots[0].pos_ in ("NOUN", "PROPN") else ""


def definitions(passage: dict) -> list[QA]:
    """The passage's definitional candidates about a thing (not a person) with a topic."""
    return [qa for qa in passage_questions(passage["text"], passage.get("title") or "")
            if qa.qtype == "define" and qa.topic and qa.topic_kind != "PERSON" and qa.answer]


def comparable(a: QA, b: QA) -> bool:
    """See the module docstring."""
    ta, tb = _bare(a.topic), _bare(b.topic)
    if not ta or not tb or ta == tb or ta in tb or tb in ta:
        return False
    th, ha = _head(a.topic), _head(a.answer)
    # "VPC security groups" / "the cluster security group"; "a major river" / "the largest river"
    same_kind = (bool(th) and th not in _GENERIC_TOPIC_HEADS and th == _head(b.topic)) or \
        (bool(ha) and ha not in _GENERIC_HEADS and ha == _head(b.answer))
    return same_kind and not _same_thing(a, b)          # (the MiniLM check only for the few pairs left)


_LEAD = 400       # a passage's opening, where an encyclopedia names a thing's other names


def _lowered(text: str) -> str:
    return detokenize(text).lower()


def _named_in(topic: str, lowered: str) -> bool:
    """``topic`` (without its article) is a phrase of ``lowered`` (text through :func:`_lowered`)."""
    t = _bare(detokenize(topic))
    return bool(t) and re.search(r"(?<![\w-])" + re.escape(t) + r"(?![\w-])", lowered) is not None


def _same_thing(a: QA, b: QA) -> bool:
    """Two names of one thing ("the Second World War" / "World War II"): one definition's sentence
    names the other ("World War II, also known as the Second World War, was ..."), or close names
    (MiniLM cosine >= 0.85) defined alike (>= 0.7). :func:`candidates` also skips a pair whose
    passage opening names the other thing."""
    if _named_in(b.topic, _lowered(a.sentence)) or _named_in(a.topic, _lowered(b.sentence)):
        return True
    from agents.synth.offline.semantic import similarity
    return similarity(a.topic, b.topic) >= 0.85 and similarity(a.answer, b.answer) >= 0.7


def question(x_topic: str, y_topic: str) -> str:
    return finish(f"{OPENING}{x_topic} and {y_topic}")


def candidates(passages: list[dict]) -> list[tuple[int, int, QA]]:
    """``(i, j, qa)``: a comparison question whose gold is passages ``i`` (defines X) and ``j``
    (defines Y); ``qa.question`` is the standalone form, ``qa.extra`` holds both definitions."""
    defs = [(i, qa) for i, p in enumerate(passages) for qa in definitions(p)]
    leads = [_lowered(p["text"][:_LEAD]) for p in passages]     # once per passage, not per pair
    out: list[tuple[int, int, QA]] = []
    seen: set[tuple[str, str]] = set()
    for k, (i, a) in enumerate(defs):
        for j, b in defs[k + 1:]:
            if i == j or passages[i]["doc_id"] == passages[j]["doc_id"]:
                continue
            key = (_bare(a.topic), _bare(b.topic))
            if key in seen or _named_in(b.topic, leads[i]) or _named_in(a.topic, leads[j]) or not comparable(a, b):
                continue          # (a passage whose opening names the other thing: two names of one thing)
            seen.add(key)
            for (xi, x), (yi, y) in (((i, a), (j, b)), ((j, b), (i, a))):     # either may be the focus
                q = question(_lower_article(x.topic), _lower_article(y.topic))
                if well_formed(q) is not None:
                    continue
                out.append((xi, yi, QA(question=q, qtype="compare", answer=x.answer, sentence=x.sentence,
                                       topic=x.topic, topic_kind=x.topic_kind,
                                       sent_index=min(x.sent_index, y.sent_index), score=1.3, extra={"x": x, "y": y})))
    return out


def _lower_article(topic: str) -> str:
    return re.sub(r"^(The|A|An)\b", lambda m: m.group(1).lower(), topic.strip())


def follow_up(qa: QA) -> str | None:
    """The comparison asked about the segment's focus X: "How is it different from Y?"."""
    y: QA = qa.extra["y"]
    subj, be = ("they", "are") if qa.topic_kind == "PLUR" else ("it", "is")
    q = finish(f"How {be} {subj} different from {_lower_article(y.topic)}")
    return q if well_formed(q, followup=True) is None else None


def parts(standalone: str, passages: list[dict]) -> list[tuple[QA, dict]] | None:
    """For a comparison question over ``passages`` (X's passage first, then Y's): each topic's
    definitional candidate with its passage, or None when the question is not a comparison or a
    passage does not define its topic."""
    m = _ASK.match(standalone.strip())
    if m is None or len(passages) != 2:
        return None
    out = []
    for topic, p in zip((m.group("x"), m.group("y")), passages):
        qa = next((d for d in definitions(p) if _bare(d.topic) == _bare(topic)), None)
        if qa is None:
            return None
        out.append((qa, p))
    return out
