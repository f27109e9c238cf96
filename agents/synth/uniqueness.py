"""The global uniqueness judge: does a retrieved non-gold passage also answer the question?

The candidate's standalone question is searched in the whole corpus (top ``uniqueness_k``);
each hit other than the gold passage is judged. Inputs: ``question`` (standalone),
``answer`` (reference answer; empty for an unanswerable turn), ``candidate`` {doc_id, text}.
Output: :class:`AlsoAnswersOut`.

Graph-side policy (:func:`decide`): all judgements failed -> the turn fails; some failed ->
``uniqueness_partial_failure`` decides (``flag``: the turn goes on, recorded with
``uniqueness_judged`` / ``uniqueness_failed`` counts, the ``uniqueness_incomplete`` flag and a
``failures`` row per failed judgement; ``retry``: back to the questioner; ``fail``: the turn
fails); an unanswerable question that some passage answers is regenerated; with
``uniqueness_policy = regenerate`` any other answering passage, and in any case more than
``max_extra_positives`` of them, send the question back to the questioner; otherwise they
become extra positives.
"""
from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from pydantic import BaseModel, Field

from agents.quoting import DATA_RULE, quote_block, quote_passage
from agents.synth.config import SynthConfig
from agents.synth.state import ConvState, GraphContext, item_id, passage, usage_add
from agents.synth.step import SynthStep


class AlsoAnswersOut(BaseModel):
    reason: str
    answers: bool = Field(..., description="this passage alone also answers the question")


class UniquenessJudge(SynthStep, name="uniqueness", kind="judge", prompt_version="uniqueness-v3",
                      output_model=AlsoAnswersOut, expected_output_tokens=80):
    """Judges one retrieved passage (see module docstring)."""

    def build_messages(self, x: dict) -> list[dict]:
        return [{"role": "system", "content": "You are a strict relevance assessor. Reply with JSON only. " + DATA_RULE},
                {"role": "user", "content": (
                    f"Question: {quote_block('question', x['question'], inline=True)}\n\n"
                    f"Reference answer: {quote_block('answer', x['answer'], inline=True)}\n\n"
                    f"Passage:\n{quote_passage(x['candidate']['text'])}\n\n"
                    "Does this passage ALONE contain the information needed to answer the question (the core "
                    'of the reference answer)? Reply as JSON: {"reason": "...", "answers": true|false}.')}]

    def offline(self, x: dict) -> AlsoAnswersOut:
        """The candidate answers when one of its sentences offers the question's intent about its concept and
        fits the reference answer; for an unanswerable question, when one offers the intent about the concept. See :mod:`agents.synth.offline.checks`."""
        from agents.synth.offline.checks import also_answers   # costly: spaCy and MiniLM load on first use
        answers, reason = also_answers(x["question"], x.get("answer") or "", x["candidate"]["text"])
        return AlsoAnswersOut(reason=reason, answers=answers)


def decide(cfg: SynthConfig, unanswerable: bool, answering: list[dict], failed: int, judged: int) -> dict:
    """The state update after ``judged`` judgements (``failed`` of them failed) found the
    other ``answering`` passages ([{doc_id, reason}]); see the module docstring."""
    if failed == judged:
        return {"turn_error": {"step": "uniqueness", "kind": "all_failed",
                               "message": f"all {failed} uniqueness judgements failed", "raw_output": None}}
    if failed and cfg.uniqueness_partial_failure == "fail":
        return {"turn_error": {"step": "uniqueness", "kind": "partial_failure",
                               "message": f"{failed} of {judged} uniqueness judgements failed "
                                          "(uniqueness_partial_failure = fail)", "raw_output": None}}
    if failed and cfg.uniqueness_partial_failure == "retry":
        return {"cand": None, "feedback": f"uniqueness: {failed} of {judged} judgements failed; try another question"}
    if unanswerable:
        if answering:
            return {"cand": None, "feedback": f"uniqueness: {len(answering)} passages answer this question, "
                                              "so it is not unanswerable"}
        return {"extra": []}
    if cfg.uniqueness_policy == "regenerate" and answering or len(answering) > cfg.max_extra_positives:
        return {"cand": None, "feedback": f"uniqueness: {len(answering)} other passages also answer; the question "
                                          "is too ambiguous, ask something specific to one passage"}
    return {"extra": answering}


STEP = UniquenessJudge()

# a search over a corpus this large runs in a worker thread (one: searches stay sequential, as
# in the event loop), so the loop keeps serving the other conversations' LLM calls meanwhile
THREAD_SEARCH_MIN_DOCS = 20_000
_SEARCH_POOL: ThreadPoolExecutor | None = None


async def search(ctx: GraphContext, query: str, k: int) -> list[str]:
    """``ctx.search(query, k)``, off the event loop for a large corpus (same result either way)."""
    global _SEARCH_POOL
    if len(ctx.corpus) < THREAD_SEARCH_MIN_DOCS:
        return ctx.search(query, k)
    if _SEARCH_POOL is None:
        _SEARCH_POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="uniqueness-search")
    return await asyncio.get_running_loop().run_in_executor(_SEARCH_POOL, ctx.search, query, k)


async def node(ctx: GraphContext, state: ConvState) -> dict:
    cand = state["cand"]
    gold = {cand["gold"], *cand.get("also_gold", [])}
    hits = [c for c in await search(ctx, cand["standalone_question"], ctx.cfg.uniqueness_k) if c not in gold]
    if not hits:
        return {"extra": [], "cand": {**cand, "uniqueness_judged": 0, "uniqueness_failed": 0}}
    xs = [{"question": cand["standalone_question"], "answer": "" if cand["unanswerable"] else state["answer"],
           "candidate": passage(ctx, c)} for c in hits]
    batch = await ctx.llm.map(STEP, xs, item_ids=[f"{item_id(state, 'u')}:{c}" for c in hits])
    usage = dict(state.get("turn_usage") or {})
    yes: list[dict] = []
    lost: list[dict] = []           # one record per failed judgement (a failures row if the turn is kept)
    for c, res in zip(hits, batch.items):
        usage = usage_add({**state, "turn_usage": usage}, res)
        if not res.ok:
            lost.append({"step": STEP.name, "kind": f"judgement_{res.failure.kind}",
                         "message": f"uniqueness judgement of {c} failed: {res.failure.message}",
                         "raw_output": res.raw_output})
            continue
        out: AlsoAnswersOut = res.output
        if out.answers:
            yes.append({"doc_id": c, "reason": out.reason})
    upd = decide(ctx.cfg, cand["unanswerable"], yes, len(lost), len(hits))
    if "extra" in upd:              # the turn goes on: what it was checked against is recorded
        upd["cand"] = {**cand, "uniqueness_judged": len(hits), "uniqueness_failed": len(lost),
                       "uniqueness_lost": lost}
    return {"turn_usage": usage, **upd}
