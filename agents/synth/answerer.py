"""The answerer: a detailed, complete answer from the visible history and only the gold passage
(both gold passages for a comparison question).

Inputs: ``history`` [(role, text)], ``question``, ``passage`` {doc_id, title, text},
``also`` (a comparison's further gold passages; absent otherwise), ``min_chars`` (verbosity
floor, 0 = none). Output: :class:`AnswerOut`. The history is shown as quoted ``<turn>`` blocks in the
user message (:func:`agents.quoting.quote_turns`), not as chat turns the model would take for its own.

Graph-side rule: an unanswerable turn is not sent to the model; it gets the fixed
:data:`UNANSWERABLE_ANSWER`.
"""
from __future__ import annotations

from pydantic import BaseModel, Field

from agents.quoting import DATA_RULE, quote_block, quote_passage, quote_passages, quote_turns
from agents.synth.state import ConvState, GraphContext, passage, visible_history
from agents.synth.step import SynthStep

UNANSWERABLE_ANSWER = ("I'm sorry, but the available information does not answer that question.")


class AnswerOut(BaseModel):
    answer: str = Field(..., min_length=1)


class Answerer(SynthStep, name="answerer", kind="generation", prompt_version="answerer-v4", output_model=AnswerOut,
               expected_output_tokens=400):
    """Answers the candidate question (see module docstring)."""

    def build_messages(self, x: dict) -> list[dict]:
        system = {"role": "system", "content": "You are a helpful, thorough assistant. Reply with JSON only: "
                                               '{"answer": "..."}. ' + DATA_RULE}
        convo = f"Conversation so far:\n{quote_turns(x['history'])}\n\n" if x.get("history") else ""
        question = f"Question: {quote_block('question', x['question'], inline=True)}"
        floor = f" The answer should be at least {x['min_chars']} characters." if x.get("min_chars") else ""
        if x.get("also"):       # a comparison: every passage it needs
            return [system, {"role": "user", "content": (
                f"{convo}Documents:\n{quote_passages([x['passage'], *x['also']], titles=False)}\n\n"
                f"{question}\n\nUsing the documents (and the earlier conversation if relevant), "
                "reason step by step and give a detailed and complete answer that covers each thing the question "
                "compares. Do not mention the documents or any source." + floor)}]
        return [system, {"role": "user", "content": (
            f"{convo}Document:\n{quote_passage(x['passage']['text'])}\n\n{question}\n\n"
            "Using the document (and the earlier conversation if relevant), reason step by step and give a "
            "detailed and complete answer. Do not mention the document or any source." + floor)}]

    def offline(self, x: dict) -> AnswerOut:
        """Extractive: the sentence that offers what the (standalone) question asks, with its supporting context
        (each gold passage's for a comparison; an overview's next sentence on its concept when the conversation has
        read the first), padded with neighbours up to ``min_chars``; see
        :mod:`agents.synth.offline.checks`."""
        from agents.synth.offline.checks import answer, answers_read, passage_sentences   # costly: spaCy loads
        q, standalone = x["question"], x.get("standalone_question") or x["question"]
        read = answers_read(x.get("history") or [])
        text = " ".join(answer(q, standalone, p, read) for p in [x["passage"], *x.get("also", [])])
        floor = x.get("min_chars") or 0
        if len(text) < floor:
            rest = [s for s in passage_sentences(x["passage"]["text"]) if s not in text]
            while len(text) < floor and rest:
                text += " " + rest.pop(0)
        return AnswerOut(answer=text)


def inputs(ctx: GraphContext, state: ConvState) -> dict:
    cand = state["cand"]
    return {"history": visible_history(state), "question": cand["question"],
            "standalone_question": cand["standalone_question"],     # offline answerer only
            "passage": passage(ctx, cand["gold"]), "min_chars": ctx.cfg.min_answer_chars,
            **({"also": [passage(ctx, g) for g in cand["also_gold"]]} if cand.get("also_gold") else {})}


STEP = Answerer()


async def node(ctx: GraphContext, state: ConvState) -> dict:
    if state["cand"]["unanswerable"]:
        return {"answer": UNANSWERABLE_ANSWER}
    return await STEP.turn_update(ctx, state, inputs(ctx, state), "a", lambda out: {"answer": out.answer.strip()})
