"""The offline questioner: concepts -> intents -> forms -> discourse, ranked.

Every offer of the shown passages (:func:`~agents.synth.offline.intents.passage_offers`) is asked the way the
conversation allows (:func:`~agents.synth.offline.discourse.ask`) and ranked by the weights of
:class:`~agents.synth.config.OfflineConfig` (its table in ``docs/experiments/offline-realism.md`` gives the measured
reason for each default): the intent's prior, the concept's salience in its passage, a concept its passage names in
its lead (:func:`~agents.synth.offline.concepts.in_lead`), a passage not used before, and on
a follow-up the segment's thread (the same concept), a form that leans on the conversation and the history need (the
corpus search finds the passage through the rewrite, not through the words asked: ``x["need"]``), minus a cost for
each rare word the conversation has not said. An (intent, concept) pair the segment asked is not asked again, nor a
question whose rewrite repeats an earlier one.

A follow-up with nothing that leans on the conversation first looks at other passages
(:class:`~agents.synth.offline.errors.NoThread`, up to ``THREAD_LOOKS`` a turn) and asks in full only after that;
with no candidate at all the attempt fails with :class:`~agents.synth.offline.errors.NothingToAsk` and the next
attempt is shown other passages. From the ``attempt``-th best candidate down (a rejected attempt moves down the
list), the first that passes the checks stage is asked (:func:`_verifiable`): a conversation keeps its turns instead
of losing them to verifier rejections.

An unanswerable turn asks, about the segment's concept (or the shown passages' most salient one), an intent that no
shown passage offers about it, first those one offers about another concept (a question such pages answer: a price
beside a pricing page, an example beside an encyclopedia's examples) and those the concept can have (a river is not
priced while another intent is left); the uniqueness check then searches the whole corpus for a passage that does, and
sends the question back when one is found.
"""
from __future__ import annotations

from agents.synth.config import OfflineConfig
from agents.synth.offline.concepts import Concept, in_lead, top, weights
from agents.synth.offline.discourse import Segment, Shares, ask as ask_form, read
from agents.synth.offline.errors import THREAD_LOOKS, NothingToAsk, NoThread
from agents.synth.offline.forms import render
from agents.synth.offline.intents import Offer, passage_offers, people_ok
from agents.synth.offline.lexicon import lexicon
from agents.synth.offline.checks import already_read, answer, answers_read, offers_about, verify
from agents.synth.prompt_parts import seed_int
from agents.synth.text import jaccard_words, words

RARE_IDF = 4.0          # a word above this idf is one a person would not type unless the conversation said it
NEED_HEAD = 6           # candidates at the head of the ranking whose history need is searched
PRECHECK = 8            # candidates from the attempt-th down that are checked before one is asked
UNANSWERABLE_INTENTS = ("cost", "limit", "requirement", "risk", "duration", "advice", "example", "purpose")


def _unit(*parts) -> float:
    return seed_int(*parts) / float(1 << 32)


def _weights(x: dict) -> dict:
    return OfflineConfig(**(x.get("offline") or {})).model_dump()


def _rare_cost(x: dict, w: dict):
    rare = x.get("rare") or {}
    said = set(words(" ".join(t.get("question", "") + " " + t.get("answer", "") for t in x.get("segment") or [])))

    def cost(question: str, known: set[str] = frozenset()) -> float:
        return w["rare_word_weight"] * sum(max(0.0, rare.get(q, 0.0) - RARE_IDF) for q in set(words(question))
                                           if q not in said and q not in known)
    return cost


def _candidates(x: dict, seg: Segment | None, w: dict) -> list[tuple]:
    passages = x["passages"]
    shares = Shares.of(w)
    earlier = list(x.get("previous_standalone") or []) + list(x.get("previous_questions") or [])
    used = set(x.get("used_gold") or [])
    rare_cost = _rare_cost(x, w)
    last_text = (x.get("segment") or [{}])[-1].get("gold_text", "") if seg else ""
    out = []
    texts = [p["text"] for p in passages]
    for i, p in enumerate(passages):
        sal = weights(p["text"], p.get("title") or "", x.get("rare") or {}, texts[:i] + texts[i + 1:])
        top_w = max(sal.values(), default=1.0) or 1.0
        for o in passage_offers(p["text"]):
            if seg is not None and (o.intent, o.concept.key) in seg.asked:
                continue
            u = _unit("form", p["doc_id"], o.sent_index, o.intent, len(earlier))
            variant = seed_int("variant", p["doc_id"], o.intent, o.concept.key) % 4
            asked = ask_form(o, seg, shares, u, variant, p["text"])
            if asked is None or any(jaccard_words(asked.standalone, e) >= 0.6 for e in earlier):
                continue
            intent = lexicon().intents[o.intent]
            s = w["intent_weight"] * intent.weight + w["salience_weight"] * sal.get(o.concept.key, 0.0) / top_w
            if w["lead_weight"] and in_lead(o.concept, p["text"], p.get("title") or ""):
                s += w["lead_weight"]
            if p["doc_id"] not in used:
                s += w["unused_passage_weight"]
            elif seg is not None and p["text"] == last_text:
                s += w["same_passage_weight"]
            if seg is not None and seg.turns:
                if seg.on_thread(o.concept):
                    s += w["thread_weight"]
                if asked.leans:
                    s += w["leans_weight"]
            s -= rare_cost(asked.question, set() if seg and seg.turns else set(words(o.concept.text)))
            s -= 0.02 * o.sent_index
            out.append([round(s, 6), i, o, asked, 0.0])      # (the history need, searched for the head only)
    out.sort(key=lambda r: (-r[0], r[1], r[2].sent_index, r[3].question))
    return out


def _with_need(cands: list, x: dict, passages: list[dict]) -> list:
    need = x.get("need")
    if need is None:
        return cands
    for r in cands[:NEED_HEAD]:
        if r[3].leans:
            r[4] = need(passages[r[1]]["doc_id"], r[3].question, r[3].standalone)
            r[0] = round(r[0] + r[4], 6)
    return sorted(cands, key=lambda r: (-r[0], r[1], r[2].sent_index, r[3].question))


def ask(x: dict) -> tuple[int, str, str, list[int]]:
    """(1-based doc index (0 = none), question as asked, standalone question, further passages (always empty))."""
    w = _weights(x)
    if x.get("unanswerable"):
        return (*_unanswerable(x, w), [])
    seg = None if x.get("standalone") else read(list(x.get("segment") or []))
    passages = x["passages"]
    cands = _with_need(_candidates(x, seg, w), x, passages)
    follow_up = seg is not None and seg.turns > 0
    if follow_up and x.get("extra_attempt"):
        # an extra attempt (the first ones had nothing to ask) takes only a follow-up the search needs the
        # conversation to find
        cands = [r for r in cands if r[3].leans and (x.get("need") is None or r[4] > 0)]
    if follow_up and not any(r[3].leans for r in cands[:NEED_HEAD]) and x.get("thread_looks", 0) < THREAD_LOOKS:
        raise NoThread(f"no follow-up in the shown passages leans on the conversation (look "
                       f"{x.get('thread_looks', 0) + 1} of {THREAD_LOOKS})")
    k = x.get("attempt", 0)
    earlier = [" ".join(words(q)) for q in x.get("previous_questions") or []]
    said = answers_read(x.get("history") or [])
    for _, i, _, asked, _ in cands[k:k + PRECHECK]:
        if _verifiable(asked, passages[i], earlier, x.get("gate"), said):
            return i + 1, asked.question, asked.standalone, []
    raise NothingToAsk(f"no question left in the shown passages that its passage answers ({len(cands)} candidates, "
                       f"attempt {k + 1})")


def _verifiable(asked, passage: dict, earlier: list[str], gate=None, said: str = "") -> bool:
    """The candidate passes the checks stage and the quality gate (``gate``: the graph's probe, when given) before
    it is asked: its answer is found, fits and names its concept, it is not an answer the user has read in this
    conversation (``said``: :func:`~agents.synth.offline.checks.answers_read`; "What is the bridge?" answered by the
    words of the turn before tells nothing more), and the question as asked is not an earlier question's text ("How
    much does it cost?" twice in a conversation is a repeat even about two things). The answerer, the verifier and
    the gate then judge the same answer with the same rules."""
    if " ".join(words(asked.question)) in earlier:
        return False
    a = answer(asked.question, asked.standalone, passage, said)
    if already_read(a, said):
        return False
    answerable, faithful, _ = verify({"question": asked.question, "standalone_question": asked.standalone, "answer": a,
                                      "passage": passage})
    return answerable and faithful and not (gate and gate(asked.question, asked.standalone, a, passage["doc_id"]))


def _unanswerable(x: dict, w: dict) -> tuple[int, str, str]:
    """An intent no shown passage offers about the segment's concept, asked the way the conversation allows."""
    passages = x["passages"]
    seg = None if x.get("standalone") else read(list(x.get("segment") or []))
    concept: Concept | None = seg.focus if seg is not None else None
    if concept is None:
        tops = [top(p["text"], p.get("title") or "", x.get("rare") or {}) for p in passages]
        concept = next((c for c in tops if c is not None), None)
    if concept is None:
        raise NothingToAsk("no concept in the shown passages to ask an unanswerable question about")
    earlier = list(x.get("previous_standalone") or []) + list(x.get("previous_questions") or [])
    start = seed_int("unanswerable", concept.key, len(earlier), x.get("attempt", 0))
    shares = Shares.of(w)
    in_genre = {o.intent for p in passages for o in passage_offers(p["text"])}
    n = len(UNANSWERABLE_INTENTS)
    rotated = sorted((UNANSWERABLE_INTENTS[(start + k) % n] for k in range(n)), key=lambda i: i not in in_genre)
    fits = [i for i in rotated if people_ok(lexicon().intents[i], concept)]
    for intent in fits + [i for i in rotated if i not in fits]:    # (a river is priced only when nothing else is left)
        if any(offers_about(intent, concept, p["text"]) for p in passages):
            continue
        offer = Offer(intent, concept, 0, "")
        if render(offer, "full") is None:
            continue
        asked = ask_form(offer, seg, shares, _unit("u-form", concept.key, intent, len(earlier)))
        if asked is None or any(jaccard_words(asked.standalone, e) >= 0.6 for e in earlier):
            continue
        return 0, asked.question, asked.standalone
    raise NothingToAsk(f"every intent about {concept.text!r} is offered by a shown passage")
