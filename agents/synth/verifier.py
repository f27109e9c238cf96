"""The verifier: checks answerability from the gold passage alone, faithfulness of the answer,
and novelty against the earlier questions.

Inputs: ``question``, ``standalone_question``, ``answer``, ``passage``,
``previous_questions``. Output: :class:`VerdictOut`.

Graph-side rule (:func:`review`): the candidate is accepted only when all three hold;
otherwise the turn goes back to the questioner with the verifier's reason.
"""
from __future__ import annotations

from pydantic import BaseModel, Field

from agents.steps import LLMStep
from agents.synth.state import ConvState, GraphContext, error_record, item_id, passage, previous_questions, usage_add
from agents.synth.text import jaccard_words, overlap, sentences


class VerdictOut(BaseModel):
    reason: str
    answerable: bool = Field(..., description="the question is answerable from the passage alone")
    faithful: bool = Field(..., description="every claim of the answer is supported by the passage")
    novel: bool = Field(..., description="the question differs from all earlier questions")


class Verifier(LLMStep):
    """Reviews the candidate question and answer (see module docstring)."""

    name = "verifier"
    kind = "judge"
    prompt_version = "verifier-v1"
    output_model = VerdictOut
    expected_output_tokens = 120

    def build_messages(self, x: dict) -> list[dict]:
        prev = "\n".join(f"- {q}" for q in x.get("previous_questions") or []) or "(none)"
        return [{"role": "system", "content": "You are a strict data-quality reviewer. Reply with JSON only."},
                {"role": "user", "content": (
                    f"Passage:\n{x['passage']['text']}\n\nQuestion: {x['standalone_question']}\n\n"
                    f"Answer: {x['answer']}\n\nEarlier questions:\n{prev}\n\n"
                    "Decide: (1) answerable: can the question be answered from the passage alone? "
                    "(2) faithful: is every claim in the answer supported by the passage? "
                    "(3) novel: does the question ask something different from every earlier question? "
                    'Reply as JSON: {"reason": "...", "answerable": true|false, "faithful": true|false, '
                    '"novel": true|false}.')}]

    def offline(self, x: dict) -> VerdictOut:
        """Support/overlap checks: question words in the passage, answer sentences in the passage, novelty."""
        passage_text = x["passage"]["text"]
        answerable = overlap(x["standalone_question"], passage_text) >= 0.5
        psents = sentences(passage_text)
        asents = sentences(x["answer"]) or [x["answer"]]
        support = [max((jaccard_words(a, p) for p in psents), default=0.0) for a in asents]
        faithful = min(support) >= 0.8
        sims = [jaccard_words(x["question"], q) for q in x.get("previous_questions") or []]
        novel = max(sims, default=0.0) < 0.6
        reasons = []
        if not answerable:
            reasons.append("the passage does not contain most of the question's key terms")
        if not faithful:
            reasons.append(f"an answer sentence is not supported by the passage (support {min(support):.2f})")
        if not novel:
            reasons.append(f"the question repeats an earlier one (word Jaccard {max(sims):.2f})")
        return VerdictOut(reason="; ".join(reasons) or "answerable, supported and new", answerable=answerable,
                          faithful=faithful, novel=novel)


def inputs(ctx: GraphContext, state: ConvState) -> dict:
    cand = state["cand"]
    return {"question": cand["question"], "standalone_question": cand["standalone_question"],
            "answer": state["answer"], "passage": passage(ctx, cand["gold"]),
            "previous_questions": previous_questions(state)}


def review(v: VerdictOut) -> dict:
    """The state update for a verdict: accepted (no feedback) or rejected with the reason."""
    if v.answerable and v.faithful and v.novel:
        return {"feedback": None}
    return {"cand": None, "feedback": f"verifier: {v.reason}"}


STEP = Verifier()


async def node(ctx: GraphContext, state: ConvState) -> dict:
    res = await ctx.llm.run(STEP, inputs(ctx, state), item_id=item_id(state, "v"))
    upd: dict = {"turn_usage": usage_add(state, res)}
    if not res.ok:
        return {**upd, "turn_error": error_record(STEP.name, res)}
    return {**upd, **review(res.output)}
