"""The verifier: checks answerability from the gold passage alone, faithfulness of the answer,
and novelty against the earlier questions.

Inputs: ``question``, ``standalone_question``, ``answer``, ``passage``, ``also`` (a
comparison's further gold passages; absent otherwise), ``previous_questions``. Output: :class:`VerdictOut`.

Graph-side rule (:func:`review`): the candidate is accepted only when all three hold;
otherwise the turn goes back to the questioner with the verifier's reason. An unanswerable
turn has no passage to judge: it gets only the novelty check (:func:`novelty`, no model call).
"""
from __future__ import annotations

from pydantic import BaseModel, Field

from agents.quoting import DATA_RULE, quote_block, quote_passage, quote_passages
from agents.synth.state import ConvState, GraphContext, passage, previous_questions
from agents.synth.step import SynthStep
from agents.synth.text import jaccard_words


class VerdictOut(BaseModel):
    reason: str
    answerable: bool = Field(..., description="the question is answerable from the passage alone")
    faithful: bool = Field(..., description="every claim of the answer is supported by the passage")
    novel: bool = Field(..., description="the question differs from all earlier questions")


class Verifier(SynthStep, name="verifier", kind="judge", prompt_version="verifier-v4", output_model=VerdictOut,
               expected_output_tokens=120):
    """Reviews the candidate question and answer (see module docstring)."""

    def build_messages(self, x: dict) -> list[dict]:
        prev = "\n".join(quote_block("question", q, inline=True)
                         for q in x.get("previous_questions") or []) or "(none)"
        if x.get("also"):       # a comparison: judged against every passage it needs
            shown = ("Passages (together):\n" + quote_passages([x["passage"], *x["also"]], titles=False))
        else:
            shown = f"Passage:\n{quote_passage(x['passage']['text'])}"
        return [{"role": "system", "content": "You are a strict data-quality reviewer. Reply with JSON only. " + DATA_RULE},
                {"role": "user", "content": (
                    f"{shown}\n\nQuestion: {quote_block('question', x['standalone_question'], inline=True)}\n\n"
                    f"Answer: {quote_block('answer', x['answer'], inline=True)}\n\nEarlier questions:\n{prev}\n\n"
                    "Decide: (1) answerable: can the question be answered from the passage alone? "
                    "(2) faithful: is every claim in the answer supported by the passage? "
                    "(3) novel: does the question ask something different from every earlier question? "
                    'Reply as JSON: {"reason": "...", "answerable": true|false, "faithful": true|false, '
                    '"novel": true|false}.')}]

    def offline(self, x: dict) -> VerdictOut:
        """The ``checks`` rules of :mod:`agents.synth.offline.checks` (the passage offers what is asked, the answer
        names the concept, question and answer fit by MiniLM, every answer sentence is the passage's), each gold
        passage on its own for a comparison; novel: the question (and its standalone form) repeats no earlier
        question."""
        from agents.synth.offline.checks import verify     # costly: spaCy and MiniLM load on first use
        answerable, faithful, reasons = True, True, []
        for p in [x["passage"], *x.get("also", [])]:
            a, f, why = verify({**x, "passage": p})
            answerable, faithful, reasons = answerable and a, faithful and f, reasons + why
        novel, why_not = novelty(x["question"], x["standalone_question"], x.get("previous_questions") or [])
        if not novel:
            reasons.append(why_not)
        return VerdictOut(reason="; ".join(reasons) or "answerable, supported and new", answerable=answerable,
                          faithful=faithful, novel=novel)


def novelty(question: str, standalone: str, previous: list[str]) -> tuple[bool, str]:
    """(new, reason): the question repeats an earlier one when its words (or its standalone
    form's) overlap an earlier question's with Jaccard >= 0.6, or it is the same text."""
    def key(q: str) -> str:
        return " ".join(q.lower().replace("?", " ").split())
    best = 0.0
    for q in (question, standalone):
        for p in previous:
            if key(q) == key(p):
                return False, "the question repeats an earlier one (same text)"
            best = max(best, jaccard_words(q, p))
    if best >= 0.6:
        return False, f"the question repeats an earlier one (word Jaccard {best:.2f})"
    return True, ""


def inputs(ctx: GraphContext, state: ConvState) -> dict:
    cand = state["cand"]
    return {"question": cand["question"], "standalone_question": cand["standalone_question"],
            "answer": state["answer"], "passage": passage(ctx, cand["gold"]),
            "previous_questions": previous_questions(state),
            **({"also": [passage(ctx, g) for g in cand["also_gold"]]} if cand.get("also_gold") else {})}


def review(v: VerdictOut) -> dict:
    """The state update for a verdict: accepted (no feedback) or rejected with the reason."""
    if v.answerable and v.faithful and v.novel:
        return {"feedback": None}
    return {"cand": None, "feedback": f"verifier: {v.reason}"}


STEP = Verifier()


async def node(ctx: GraphContext, state: ConvState) -> dict:
    cand = state["cand"]
    if cand["unanswerable"]:
        # no passage to judge against: only the novelty check (graph-side, no model call)
        new, why = novelty(cand["question"], cand["standalone_question"], previous_questions(state))
        return {"feedback": None} if new else {"cand": None, "feedback": f"verifier: {why}"}
    return await STEP.turn_update(ctx, state, inputs(ctx, state), "v", review)
