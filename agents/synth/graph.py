"""The conversation graph (LangGraph): one thread per conversation, checkpointed per node.

Nodes: select evidence -> questioner -> answerer -> verifier -> global uniqueness ->
humanizer -> commit, looping per turn. The verifier and the uniqueness checker send the turn
back to the questioner with their reason, at most ``max_attempts`` times; then the turn is
recorded as failed (not dropped). A hard topic switch moves the conversation to another
topic's cluster at a seeded turn; the first question after it is standalone and is humanized
without history, so no pronoun points at turns the user never saw.

Every LLM call goes through :class:`agents.session.LLMSession` (cache, accounting, budget);
with the checkpointer and the content-addressed cache, a killed run resumes at the node it
was on and repeats no LLM call.
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any, Callable, TypedDict

from langgraph.graph import END, START, StateGraph

from agents.synth.config import SynthConfig
from agents.synth.steps import (AlsoAnswersOut, Answerer, Humanizer, Questioner, UniquenessJudge, Verifier,
                                humanizer_guard)
from agents.synth import text as T

UNANSWERABLE_ANSWER = ("I'm sorry, but the available information does not answer that question.")


class ConvState(TypedDict, total=False):
    conv_id: str
    seed: int
    n_turns: int
    turn: int
    pool: list[str]
    cluster_id: int
    topic_id: int
    switch_turn: int | None
    switch_pool: list[str]
    switch_cluster_id: int | None
    switch_topic_id: int | None
    unanswerable_turns: list[int]
    # per-turn scratch
    shown: list[str]
    attempt: int
    feedback: str | None
    cand: dict | None
    answer: str | None
    extra: list[dict]
    turn_usage: dict
    turn_error: dict | None
    # results
    turns: list[dict]
    failures: list[dict]
    done: bool


@dataclass
class GraphContext:
    """What the nodes need besides the state (not checkpointed)."""
    corpus: dict[str, dict]                       # chunk_id -> {doc_id, title, text}
    llm: Any                                      # agents.session.LLMSession
    search: Callable[[str, int], list[str]]       # standalone question -> top-k chunk ids
    cfg: SynthConfig


def _rng(*parts: Any) -> random.Random:
    return random.Random("|".join(map(str, parts)))


def _usage_add(state: ConvState, res) -> dict:
    u = dict(state.get("turn_usage") or {})
    u["prompt_tokens"] = u.get("prompt_tokens", 0) + res.usage.prompt_tokens
    u["completion_tokens"] = u.get("completion_tokens", 0) + res.usage.completion_tokens
    pv = dict(u.get("prompt_versions", {}))
    pv[res.step] = res.prompt_version
    u["prompt_versions"] = pv
    u["backend"] = res.backend
    if res.model:
        u.setdefault("models", {})
        u["models"] = {**u["models"], res.step: res.model}
    return u


def _error(step: str, res) -> dict:
    """The turn's error record for a failed call (the raw output is kept)."""
    return {"step": step, "kind": res.failure.kind, "message": res.failure.message, "raw_output": res.raw_output}


def _history(state: ConvState) -> list[list[str]]:
    h: list[list[str]] = []
    for t in state.get("turns", []):
        if t["status"] == "ok":
            h.append(["user", t["question"]])
            h.append(["assistant", t["answer"]])
    return h


def _in_second_topic(state: ConvState) -> bool:
    st = state.get("switch_turn")
    return st is not None and state["turn"] >= st


def _visible_history(state: ConvState) -> list[list[str]]:
    """History the user of this turn has seen; a switch starts a fresh visible context for prompts."""
    st = state.get("switch_turn")
    if st is not None and state["turn"] >= st:
        return [x for t in state.get("turns", []) if t["status"] == "ok" and t["turn"] >= st
                for x in (["user", t["question"]], ["assistant", t["answer"]])]
    return _history(state)


def _passage(ctx: GraphContext, cid: str) -> dict:
    c = ctx.corpus[cid]
    return {"doc_id": cid, "title": c.get("title") or "", "text": c["text"]}


def build_graph(ctx: GraphContext, checkpointer=None):
    cfg = ctx.cfg
    q_step, a_step, v_step, u_step, h_step = Questioner(), Answerer(), Verifier(), UniquenessJudge(), Humanizer()

    def sid(state: ConvState) -> str:
        return f"{state['conv_id']}:{state['turn']}"

    async def select(state: ConvState) -> dict:
        pool = state["switch_pool"] if _in_second_topic(state) else state["pool"]
        rng = _rng(state["seed"], state["conv_id"], state["turn"], state.get("attempt", 0))
        shown = rng.sample(pool, min(cfg.shown_passages, len(pool)))
        return {"shown": shown, "cand": None, "answer": None, "extra": [], "turn_error": None}

    async def question(state: ConvState) -> dict:
        turn = state["turn"]
        unans = turn in (state.get("unanswerable_turns") or [])
        standalone = turn == 1 or turn == state.get("switch_turn")
        prev_q = [t["question_original"] for t in state.get("turns", []) if t["status"] == "ok"]
        used = [g for t in state.get("turns", []) if t["status"] == "ok" for g in t["gold_doc_ids"][:1]]
        x = {"passages": [_passage(ctx, c) for c in state["shown"]], "history": _visible_history(state),
             "previous_questions": prev_q, "feedback": state.get("feedback"), "attempt": state.get("attempt", 0),
             "standalone": standalone, "unanswerable": unans, "used_gold": used}
        res = await ctx.llm.run(q_step, x, item_id=f"{sid(state)}:q{state.get('attempt', 0)}")
        upd: dict = {"turn_usage": _usage_add(state, res)}
        if not res.ok:
            return {**upd, "turn_error": _error("questioner", res)}
        out = res.output
        if unans:
            gold = None
        elif not 1 <= out.doc_index <= len(state["shown"]):
            return {**upd, "cand": None, "feedback": f"doc_index {out.doc_index} is not one of the shown passages"}
        else:
            gold = state["shown"][out.doc_index - 1]
        q = out.question.strip()
        return {**upd, "cand": {"question": q, "standalone_question": out.standalone_question.strip() or q,
                                "gold": gold, "unanswerable": unans}}

    async def answer(state: ConvState) -> dict:
        cand = state["cand"]
        if cand["unanswerable"]:
            return {"answer": UNANSWERABLE_ANSWER}
        x = {"history": _visible_history(state), "question": cand["question"],
             "passage": _passage(ctx, cand["gold"]), "min_chars": cfg.min_answer_chars}
        res = await ctx.llm.run(a_step, x, item_id=f"{sid(state)}:a{state.get('attempt', 0)}")
        upd: dict = {"turn_usage": _usage_add(state, res)}
        if not res.ok:
            return {**upd, "turn_error": _error("answerer", res)}
        return {**upd, "answer": res.output.answer.strip()}

    async def verify(state: ConvState) -> dict:
        cand = state["cand"]
        prev_q = [t["question_original"] for t in state.get("turns", []) if t["status"] == "ok"]
        x = {"question": cand["question"], "standalone_question": cand["standalone_question"],
             "answer": state["answer"], "passage": _passage(ctx, cand["gold"]), "previous_questions": prev_q}
        res = await ctx.llm.run(v_step, x, item_id=f"{sid(state)}:v{state.get('attempt', 0)}")
        upd: dict = {"turn_usage": _usage_add(state, res)}
        if not res.ok:
            return {**upd, "turn_error": _error("verifier", res)}
        v = res.output
        if v.answerable and v.faithful and v.novel:
            return {**upd, "feedback": None}
        return {**upd, "cand": None, "feedback": f"verifier: {v.reason}"}

    async def unique(state: ConvState) -> dict:
        cand = state["cand"]
        gold = cand["gold"]
        hits = [c for c in ctx.search(cand["standalone_question"], cfg.uniqueness_k) if c != gold]
        if not hits:
            return {"extra": []}
        xs = [{"question": cand["standalone_question"], "answer": "" if cand["unanswerable"] else state["answer"],
               "candidate": _passage(ctx, c)} for c in hits]
        batch = await ctx.llm.map(u_step, xs, item_ids=[f"{sid(state)}:u{state.get('attempt', 0)}:{c}" for c in hits])
        usage = dict(state.get("turn_usage") or {})
        yes: list[dict] = []
        failed = 0
        for c, res in zip(hits, batch.items):
            st = {**state, "turn_usage": usage}
            usage = _usage_add(st, res)
            if not res.ok:
                failed += 1
                continue
            out: AlsoAnswersOut = res.output
            if out.answers:
                yes.append({"doc_id": c, "reason": out.reason})
        upd: dict = {"turn_usage": usage}
        if failed == len(hits):
            upd["turn_error"] = {"step": "uniqueness", "kind": "all_failed",
                                 "message": f"all {failed} uniqueness judgements failed", "raw_output": None}
            return upd
        if cand["unanswerable"]:
            if yes:
                return {**upd, "cand": None, "feedback": f"uniqueness: {len(yes)} passages answer this question, "
                                                         "so it is not unanswerable"}
            return {**upd, "extra": []}
        if cfg.uniqueness_policy == "regenerate" and yes or len(yes) > cfg.max_extra_positives:
            return {**upd, "cand": None, "feedback": f"uniqueness: {len(yes)} other passages also answer; the question "
                                                     "is too ambiguous, ask something specific to one passage"}
        return {**upd, "extra": yes}

    async def humanize(state: ConvState) -> dict:
        cand = state["cand"]
        turn = state["turn"]
        if turn == 1 and not cfg.humanize_first_turn:
            return {"cand": {**cand, "humanized": cand["question"], "humanize_note": "first turn kept formal"}}
        hist = [] if turn == state.get("switch_turn") else _visible_history(state)
        prev = [t for t in state.get("turns", []) if t["status"] == "ok"]
        antecedent = None
        if prev and hist:
            antecedent = T.salient_phrase(prev[-1]["question_original"])
        x = {"question": cand["question"], "history": hist, "antecedent": antecedent}
        res = await ctx.llm.run(h_step, x, item_id=f"{sid(state)}:h{state.get('attempt', 0)}")
        upd: dict = {"turn_usage": _usage_add(state, res)}
        text, why = humanizer_guard(cand["question"], res.output.text if res.ok else None)
        if not res.ok:
            why = f"humanizer failed ({res.failure.kind}); original kept"
        return {**upd, "cand": {**cand, "humanized": text, "humanize_note": why}}

    async def commit(state: ConvState) -> dict:
        turn = state["turn"]
        st = state.get("switch_turn")
        usage = state.get("turn_usage") or {}
        base = {"sample_id": sid(state), "conv_id": state["conv_id"], "turn": turn,
                "is_switch": st is not None and turn == st,
                "turns_since_switch": (turn - st) if st is not None and turn >= st else None,
                "cluster_id": state["switch_cluster_id"] if _in_second_topic(state) else state["cluster_id"],
                "topic_id": state["switch_topic_id"] if _in_second_topic(state) else state["topic_id"],
                "prompt_tokens": usage.get("prompt_tokens", 0), "completion_tokens": usage.get("completion_tokens", 0),
                "prompt_versions": json.dumps(usage.get("prompt_versions", {}), sort_keys=True),
                "backend": usage.get("backend"), "model": json.dumps(usage.get("models", {}), sort_keys=True)
                if usage.get("models") else None,
                "verifier_attempts": state.get("attempt", 0) + 1}
        failures = list(state.get("failures", []))
        cand = state.get("cand")
        err = state.get("turn_error")
        if err is not None or cand is None or state.get("answer") is None:
            reason = (f"{err['step']}: {err['kind']}: {err['message']}" if err else
                      f"no accepted question after {state.get('attempt', 0) + 1} attempts; last: {state.get('feedback')}")
            rec = {**base, "status": "failed", "question": None, "question_original": None, "standalone_question": None,
                   "answer": None, "gold_doc_ids": [], "extra_positives": [], "answerability": None,
                   "failure_reason": reason}
            failures.append({"sample_id": base["sample_id"], "conv_id": state["conv_id"], "turn": turn,
                             "step": err["step"] if err else "verifier", "kind": err["kind"] if err else "rejected",
                             "message": reason, "raw_output": (err or {}).get("raw_output")})
        else:
            gold = [] if cand["unanswerable"] else [cand["gold"]]
            rec = {**base, "status": "ok", "question": cand.get("humanized", cand["question"]),
                   "question_original": cand["question"], "standalone_question": cand["standalone_question"],
                   "answer": state["answer"], "gold_doc_ids": gold, "extra_positives": state.get("extra", []),
                   "answerability": "UNANSWERABLE" if cand["unanswerable"] else "ANSWERABLE",
                   "failure_reason": None, "humanize_note": cand.get("humanize_note")}
        turns = [*state.get("turns", []), rec]
        nxt = turn + 1
        return {"turns": turns, "failures": failures, "turn": nxt, "attempt": 0, "feedback": None, "cand": None,
                "answer": None, "extra": [], "turn_usage": {}, "turn_error": None, "done": nxt > state["n_turns"]}

    def retry_or_fail(state: ConvState) -> dict:
        return {"attempt": state.get("attempt", 0) + 1}

    # -- routing --------------------------------------------------------------------------
    def after_gen(state: ConvState) -> str:   # after questioner / answerer / verifier / unique
        if state.get("turn_error"):
            return "commit"
        if state.get("cand") is None:          # rejected: retry or give up
            return "retry" if state.get("attempt", 0) + 1 < cfg.max_attempts else "commit"
        return "next"

    def after_question(state: ConvState) -> str:
        r = after_gen(state)
        return "answer" if r == "next" else r

    def after_answer(state: ConvState) -> str:
        if state.get("turn_error"):
            return "commit"
        return "unique" if state["cand"]["unanswerable"] else "verify"

    def after_verify(state: ConvState) -> str:
        r = after_gen(state)
        return "unique" if r == "next" else r

    def after_unique(state: ConvState) -> str:
        r = after_gen(state)
        return "humanize" if r == "next" else r

    def after_commit(state: ConvState) -> str:
        return END if state.get("done") else "select"

    g = StateGraph(ConvState)
    for name, fn in [("select", select), ("question", question), ("answer", answer), ("verify", verify),
                     ("unique", unique), ("humanize", humanize), ("commit", commit), ("retry", retry_or_fail)]:
        g.add_node(name, fn)
    g.add_edge(START, "select")
    g.add_edge("select", "question")
    g.add_conditional_edges("question", after_question, {"answer": "answer", "retry": "retry", "commit": "commit"})
    g.add_conditional_edges("answer", after_answer, {"verify": "verify", "unique": "unique", "commit": "commit"})
    g.add_conditional_edges("verify", after_verify, {"unique": "unique", "retry": "retry", "commit": "commit"})
    g.add_conditional_edges("unique", after_unique, {"humanize": "humanize", "retry": "retry", "commit": "commit"})
    g.add_edge("humanize", "commit")
    g.add_edge("retry", "select")
    g.add_conditional_edges("commit", after_commit, {"select": "select", END: END})
    return g.compile(checkpointer=checkpointer)
