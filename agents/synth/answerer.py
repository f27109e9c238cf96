"""The answerer: a detailed, complete answer from the visible history and only the gold passage.

Inputs: ``history`` [(role, text)], ``question``, ``passage`` {doc_id, title, text},
``min_chars`` (verbosity floor, 0 = none). Output: :class:`AnswerOut`.

Graph-side rule: an unanswerable turn is not sent to the model; it gets the fixed
:data:`UNANSWERABLE_ANSWER`.
"""
from __future__ import annotations

from pydantic import BaseModel, Field

from agents.steps import LLMStep
from agents.synth.state import ConvState, GraphContext, error_record, item_id, passage, usage_add, visible_history
from agents.synth.text import overlap, sentences

UNANSWERABLE_ANSWER = ("I'm sorry, but the available information does not answer that question.")


class AnswerOut(BaseModel):
    answer: str = Field(..., min_length=1)


class Answerer(LLMStep):
    """Answers the candidate question (see module docstring)."""

    name = "answerer"
    kind = "generation"
    prompt_version = "answerer-v1"
    output_model = AnswerOut
    expected_output_tokens = 400

    def build_messages(self, x: dict) -> list[dict]:
        msgs = [{"role": "system", "content": "You are a helpful, thorough assistant. Reply with JSON only: "
                                              '{"answer": "..."}.'}]
        for role, text in x.get("history") or []:
            msgs.append({"role": role, "content": text})
        floor = f" The answer should be at least {x['min_chars']} characters." if x.get("min_chars") else ""
        msgs.append({"role": "user", "content": (
            f"Document:\n{x['passage']['text']}\n\nQuestion: {x['question']}\n\n"
            "Using the document (and the earlier conversation if relevant), reason step by step and give a "
            "detailed and complete answer. Do not mention the document or any source." + floor)})
        return msgs

    def offline(self, x: dict) -> AnswerOut:
        """Extractive: the sentences that best cover the question, with their neighbours, in passage order."""
        sents = sentences(x["passage"]["text"])
        if not sents:
            return AnswerOut(answer=x["passage"]["text"].strip())
        scores = [overlap(x["question"], s) for s in sents]
        best = max(range(len(sents)), key=lambda i: (scores[i], -i))
        chosen = {best}
        want = 3            # the best sentence and its nearest neighbours
        j = 1
        while len(chosen) < min(want, len(sents)):
            for k in (best + j, best - j):
                if 0 <= k < len(sents) and len(chosen) < want:
                    chosen.add(k)
            j += 1
        answer = " ".join(sents[i] for i in sorted(chosen))
        floor = x.get("min_chars") or 0
        while len(answer) < floor and len(chosen) < len(sents):
            extra = [i for i in range(len(sents)) if i not in chosen]
            chosen.add(min(extra, key=lambda i: abs(i - best)))
            answer = " ".join(sents[i] for i in sorted(chosen))
        return AnswerOut(answer=answer)


def inputs(ctx: GraphContext, state: ConvState) -> dict:
    cand = state["cand"]
    return {"history": visible_history(state), "question": cand["question"],
            "passage": passage(ctx, cand["gold"]), "min_chars": ctx.cfg.min_answer_chars}


STEP = Answerer()


async def node(ctx: GraphContext, state: ConvState) -> dict:
    if state["cand"]["unanswerable"]:
        return {"answer": UNANSWERABLE_ANSWER}
    res = await ctx.llm.run(STEP, inputs(ctx, state), item_id=item_id(state, "a"))
    upd: dict = {"turn_usage": usage_add(state, res)}
    if not res.ok:
        return {**upd, "turn_error": error_record(STEP.name, res)}
    return {**upd, "answer": res.output.answer.strip()}
