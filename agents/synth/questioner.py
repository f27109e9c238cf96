"""The questioner: writes the next user question, answerable by exactly one of the shown passages
(or, on a planned unanswerable turn, by none of them).

Inputs: ``passages`` [{doc_id, title, text}], ``history`` [(role, text)],
``previous_questions`` [str], ``feedback`` (verifier / uniqueness reason of a rejected
attempt, or None), ``attempt`` (int: the earlier attempts of this turn whose candidate was rejected;
one with nothing to ask, :class:`NothingToAsk`, does not count, so the next selection's best
candidate is asked first), ``standalone`` (bool: first question after a topic
switch or turn 1: no pronouns to earlier turns), ``unanswerable`` (bool), ``used_gold``
[doc_id]. Output: :class:`QuestionOut`.

Graph-side rule (:func:`candidate`): the answer's ``doc_index`` must name one of the shown
passages, which becomes the turn's gold passage; otherwise the attempt is rejected with that
reason as feedback. The offline questioner's :class:`NothingToAsk` (nothing left to ask of the
shown passages) rejects the attempt the same way, so the next attempt selects other passages of
the cluster; every other failed call ends the turn.
"""
from __future__ import annotations

import math
from typing import Callable

from pydantic import BaseModel, Field

from agents.quoting import DATA_RULE, quote_block
from agents.synth.prompt_parts import fmt_history, fmt_passages
from agents.synth import gate
from agents.synth.offline.errors import NothingToAsk, NoThread
from agents.synth.text import words
from agents.synth.state import (ConvState, GraphContext, ok_turns, passage, previous_questions, segment_ok_turns,
                                visible_history)
from agents.synth.step import SynthStep


class QuestionOut(BaseModel):
    doc_index: int = Field(..., ge=0, description="1-based number of the passage that answers; 0 = none (unanswerable)")
    question: str = Field(..., min_length=3)
    standalone_question: str = Field(..., min_length=3, description="the question rewritten to be self-contained")
    other_doc_indexes: list[int] = Field(default_factory=list, description=(
        "a comparison question that needs two passages: the 1-based number of the other one"))


class Questioner(SynthStep, name="questioner", kind="generation", prompt_version="questioner-v4",
                 output_model=QuestionOut, expected_output_tokens=80):
    """Writes the next user question (see module docstring)."""

    def build_messages(self, x: dict) -> list[dict]:
        sys_msg = ("You write questions for a conversational search benchmark. You play a curious person "
                   "talking to an assistant. Reply with JSON only. " + DATA_RULE)
        rules = [
            "Write ONE natural question that exactly one of the numbered passages answers directly.",
            "It must sound like a real person, must not mention passages, documents or sources.",
            'Reply as JSON: {"doc_index": <number of the passage>, "question": "...", '
            '"standalone_question": "<the same question, fully self-contained>"}.',
            "Only for a question that compares two things, each described by its own passage, add "
            '"other_doc_indexes": [<number of the second passage>].',
        ]
        if x.get("unanswerable"):
            rules = ["Write ONE natural, on-topic question that NONE of the passages answers (the information "
                     "is absent from all of them), as a real person would ask it.",
                     'Reply as JSON: {"doc_index": 0, "question": "...", "standalone_question": "..."}.']
        if x.get("previous_questions"):
            rules.append("Explore a different topic, aspect or fact from EVERY earlier question; prefer a passage "
                         "not used before. Do not repeat or paraphrase these earlier questions:\n"
                         + "\n".join(quote_block("question", q, inline=True) for q in x["previous_questions"]))
        if x.get("standalone"):
            rules.append("The question must be fully self-contained: no pronouns or ellipsis pointing at earlier turns.")
        elif x.get("history"):
            rules.append("The question may use pronouns or ellipsis that refer to the conversation so far.")
        if x.get("feedback"):
            rules.append(f"Your previous attempt was rejected: {quote_block('feedback', x['feedback'], inline=True)} "
                         "Write a better one.")
        user = ""
        if x.get("history") and not x.get("standalone"):
            user += "Conversation so far:\n" + fmt_history(x["history"]) + "\n\n"
        user += "Passages:\n" + fmt_passages(x["passages"]) + "\n\n" + "\n".join(rules)
        return [{"role": "system", "content": sys_msg}, {"role": "user", "content": user}]

    def offline(self, x: dict) -> QuestionOut:
        """Concepts -> intents -> forms -> discourse over the shown passages, ranked; see
        :mod:`agents.synth.offline.questioning`."""
        from agents.synth.offline.questioning import ask   # costly: spaCy and MiniLM load on first use
        doc_index, question, standalone, others = ask(x)
        return QuestionOut(doc_index=doc_index, question=question, standalone_question=standalone,
                           other_doc_indexes=others)


def inputs(ctx: GraphContext, state: ConvState) -> dict:
    """The questioner's inputs for the current turn and attempt."""
    turn = state["turn"]
    shown = [passage(ctx, c) for c in state["shown"]]
    return {"passages": shown, "history": visible_history(state),
            "previous_questions": previous_questions(state), "feedback": state.get("feedback"),
            "attempt": state.get("attempt", 0) - state.get("empty_attempts", 0) - state.get("thread_looks", 0),
            # an attempt past max_attempts (the earlier ones had nothing to ask: ``empty_attempts_extra``)
            "extra_attempt": state.get("attempt", 0) - state.get("thread_looks", 0) >= ctx.cfg.max_attempts,
            "thread_looks": state.get("thread_looks", 0),
            "standalone": turn == 1 or turn == state.get("switch_turn"),
            "unanswerable": is_unanswerable_turn(state),
            "used_gold": [g for t in ok_turns(state) for g in t["gold_doc_ids"][:1]],
            # offline discourse (the prompt does not use these): the segment's accepted turns
            # since the last switch, every earlier standalone question, the follow-up form shares
            "segment": segment_turns(ctx, state), "previous_standalone": [t["standalone_question"] for t in ok_turns(state)],
            "offline": ctx.cfg.offline.model_dump(),
            "rare": rare_words(ctx, shown), "gate": gate_probe(ctx, state),
            "need": history_need(ctx)}


def gate_probe(ctx: GraphContext, state: ConvState) -> Callable[[str, str, str, str], list[tuple[str, str]]]:
    """``probe(question, standalone, answer, gold_id)``: the quality gate's failures for a candidate turn, so the
    offline questioner asks only what the gate will pass (one gate, run before the question is asked and after the
    verifier; :mod:`agents.synth.gate`)."""
    def probe(question: str, standalone: str, answer: str, gold: str) -> list[tuple[str, str]]:
        cand = {"question": question, "standalone_question": standalone, "gold": gold, "unanswerable": False}
        return gate.evaluate(gate.gate_input(ctx, {**state, "cand": cand, "answer": answer}), ctx.cfg.gate)
    return probe


NEED_K = 10     # the corpus search's depth for the offline questioner's history need


def history_need(ctx: GraphContext) -> "HistoryNeed | None":
    """The offline questioner's :class:`HistoryNeed` on its whole-corpus search (``ctx.need_search``, set when the
    questioner runs offline: :func:`agents.synth.run.need_searcher`), its hits kept in ``ctx.need_hits``; None when off
    (no search, or ``offline.history_need_weight`` 0)."""
    search = getattr(ctx, "need_search", None)
    if search is None or ctx.cfg.offline.history_need_weight <= 0:
        return None
    return HistoryNeed(search, ctx.cfg.offline.history_need_weight, ctx.need_hits)


class HistoryNeed:
    """``need(gold_id, asked, standalone)``: the ranking points a follow-up gains for needing the conversation to be
    found: ``weight`` x (g(standalone) - g(asked)), g = 1 / log2(1 + rank) of the gold passage in the corpus search's
    top ``NEED_K`` (0 below it); 0 for a follow-up asked in full. The hits are kept per query in ``cache`` (a retry
    renders the same candidates again). Each query is searched alone: its hits do not depend on what else was
    searched, so the ranking is the same whatever the conversations in flight (a batched dense encoding may round
    differently)."""

    def __init__(self, search: Callable[[str, int], list[str]], weight: float, cache: dict[str, tuple[str, ...]]):
        self.search, self.weight, self.cache = search, weight, cache

    def gain(self, gold: str, query: str) -> float:
        if query not in self.cache:
            if len(self.cache) > 50_000:
                self.cache.clear()
            self.cache[query] = tuple(self.search(query, NEED_K))
        hits = self.cache[query]
        return 1.0 / math.log2(2 + hits.index(gold)) if gold in hits else 0.0

    def __call__(self, gold: str, asked: str, standalone: str) -> float:
        return 0.0 if asked == standalone else self.weight * (self.gain(gold, standalone) - self.gain(gold, asked))


def rare_words(ctx: GraphContext, shown: list[dict]) -> dict[str, float]:
    """The shown passages' words that are rare in the corpus, with their idf (empty unless the
    offline questioner is used: :func:`agents.synth.turn.word_idf`)."""
    idf = getattr(ctx, "idf", None)
    if not idf:
        return {}
    return {w: idf[w] for p in shown for w in set(words(f"{p['title']} {p['text']}")) if w in idf}


def segment_turns(ctx: GraphContext, state: ConvState) -> list[dict]:
    """The accepted turns of the current segment (since turn 1 or the hard topic switch), with
    the title of each turn's gold passage ("" for none)."""
    return [{"question": t["question"], "standalone_question": t["standalone_question"], "answer": t["answer"],
             "title": (ctx.corpus.get(t["gold_doc_ids"][0], {}).get("title") or "") if t["gold_doc_ids"] else "",
             "gold_text": (ctx.corpus.get(t["gold_doc_ids"][0], {}).get("text") or "") if t["gold_doc_ids"] else ""}
            for t in segment_ok_turns(state)]


def is_unanswerable_turn(state: ConvState) -> bool:
    return state["turn"] in (state.get("unanswerable_turns") or [])


def candidate(out: QuestionOut, shown: list[str], unanswerable: bool) -> dict:
    """The state update for a questioner answer: the turn's candidate, or a rejection (the
    ``doc_index`` or an ``other_doc_indexes`` entry names no shown passage, or repeats it) with the
    reason as feedback for the next attempt. A comparison's other passages become ``also_gold``."""
    also: list[str] = []
    if unanswerable:
        gold = None
    elif not 1 <= out.doc_index <= len(shown):
        return {"cand": None, "feedback": f"doc_index {out.doc_index} is not one of the shown passages"}
    else:
        gold = shown[out.doc_index - 1]
        for k in out.other_doc_indexes:
            if not 1 <= k <= len(shown) or shown[k - 1] == gold or shown[k - 1] in also:
                return {"cand": None, "feedback": f"other_doc_indexes {out.other_doc_indexes} must name other "
                                                  "shown passages than doc_index, once each"}
            also.append(shown[k - 1])
    q = out.question.strip()
    cand = {"question": q, "standalone_question": out.standalone_question.strip() or q,
            "gold": gold, "unanswerable": unanswerable}
    if also:
        cand["also_gold"] = also
    return {"cand": cand}


STEP = Questioner()
# the offline questioner's selection misses (:func:`node`): error class -> the state counter it adds to
_SELECTION_MISSES = {NoThread.__name__: "thread_looks", NothingToAsk.__name__: "empty_attempts"}


async def node(ctx: GraphContext, state: ConvState) -> dict:
    def selection_miss(res) -> dict | None:
        """Nothing to ask, or nothing that leans on the conversation: other passages next attempt, counted apart."""
        counter = _SELECTION_MISSES.get(res.failure.error_class) if res.failure.kind == "offline_error" else None
        return {"cand": None, "feedback": res.failure.message, counter: state.get(counter, 0) + 1} if counter else None
    return await STEP.turn_update(ctx, state, inputs(ctx, state), "q",
                                  lambda out: candidate(out, state["shown"], is_unanswerable_turn(state)),
                                  selection_miss)
