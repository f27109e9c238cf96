"""The humanizer: a casual, lazy rewrite of the accepted question, the way users type.

Inputs: ``question``, ``history`` [(role, text)] (empty right after a topic switch, so no
pronoun can point at turns the user never saw), ``antecedent`` (phrase of the previous
question a pronoun may replace, or None). Output: :class:`HumanizeOut`.

Graph-side rules: turn 1 keeps the formal question unless ``humanize_first_turn``;
:func:`humanizer_guard` (the reference's guards) rejects a rewrite that is too short, more
than 1.3x longer than the original or contains a banned phrase, and keeps the original; a
failed call keeps the original too. The reason is recorded as the turn's ``humanize_note``.
"""
from __future__ import annotations

from pydantic import BaseModel, Field

from agents.quoting import DATA_RULE, quote_block
from agents.synth.prompt_parts import fmt_history
from agents.synth.state import ConvState, GraphContext, ok_turns, visible_history
from agents.synth.step import SynthStep
from agents.synth.text import salient_phrase

BANNED = ("rewrite", "here is", "certainly", "sure,")


class HumanizeOut(BaseModel):
    text: str = Field(..., min_length=1)


class Humanizer(SynthStep, name="humanizer", kind="generation", prompt_version="humanizer-v3",
                output_model=HumanizeOut, expected_output_tokens=40):
    """Rewrites the question casually (see module docstring)."""

    def build_messages(self, x: dict) -> list[dict]:
        ctx = fmt_history(x.get("history") or [], cut=300) or "(no earlier turns)"
        return [{"role": "system", "content": "You rewrite questions the way real users type them. Reply with JSON only. "
                                          + DATA_RULE},
                {"role": "user", "content": (
                    f"Conversation so far:\n{ctx}\n\n"
                    f"Last user question: {quote_block('question', x['question'], inline=True)}\n\n"
                    "Rewrite the last question as a real person would type it: short and lazy, maybe "
                    "ungrammatical; use pronouns instead of names already mentioned and omit obvious context; "
                    "only one question; sloppy capitalisation and missing apostrophes are fine; a compound "
                    "question becomes its most interesting part, under 12 words. "
                    'Reply as JSON: {"text": "..."}.')}]

    def offline(self, x: dict) -> HumanizeOut:
        """The offline questioner already asks follow-ups the way people do (pronouns, shorter
        descriptions, ellipsis) in well-formed English; the offline rewrite keeps that text."""
        return HumanizeOut(text=x["question"].strip())


def humanizer_guard(original: str, rewrite: str | None) -> tuple[str, str | None]:
    """The reference's guards: (text to use, rejection reason or None)."""
    if rewrite is None:
        return original, "no rewrite"
    r = rewrite.strip().strip('"')
    low = r.lower()
    if len(r) <= 3:
        return original, "too short"
    if len(r) > 1.3 * len(original):
        return original, "longer than 1.3x the original"
    if any(b in low for b in BANNED):
        return original, "contains a banned phrase"
    return r, None


def inputs(state: ConvState) -> dict:
    """The question, the history the user has seen (none right after a switch) and, when there
    is history, the salient phrase of the previous accepted question as the pronoun antecedent."""
    hist = [] if state["turn"] == state.get("switch_turn") else visible_history(state)
    prev = ok_turns(state)
    antecedent = salient_phrase(prev[-1]["question_original"]) if prev and hist else None
    return {"question": state["cand"]["question"], "history": hist, "antecedent": antecedent}


STEP = Humanizer()


async def node(ctx: GraphContext, state: ConvState) -> dict:
    cand = state["cand"]
    if state["turn"] == 1 and not ctx.cfg.humanize_first_turn:
        return {"cand": {**cand, "humanized": cand["question"], "humanize_note": "first turn kept formal"}}

    def keep(text: str, why: str | None) -> dict:
        return {"cand": {**cand, "humanized": text, "humanize_note": why}}
    return await STEP.turn_update(
        ctx, state, inputs(state), "h", lambda out: keep(*humanizer_guard(cand["question"], out.text)),
        lambda res: keep(cand["question"], f"humanizer failed ({res.failure.kind}); original kept"))
