"""What the conversation graph's nodes share: the checkpointed state (:class:`ConvState`),
the per-run context (:class:`GraphContext`) and small readers/writers of that state used by
every agent node (history, passages, usage, the failed-call record)."""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Callable, TypedDict

from agents.synth.config import SynthConfig


THREAD_LOOKS = 2    # other selections of passages a follow-up looks at (NoThread) before it is asked in full


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
    empty_attempts: int          # attempts of this turn whose shown passages had nothing to ask (NothingToAsk)
    thread_looks: int            # attempts of this follow-up whose shown passages held nothing that leans on the
                                 # conversation (NoThread, at most THREAD_LOOKS); they count against no limit
    feedback: str | None
    cand: dict | None
    answer: str | None
    extra: list[dict]
    turn_usage: dict
    turn_error: dict | None
    # results
    turns: list[dict]
    failures: list[dict]
    gate_log: list[dict]         # every quality-gate rejection of the conversation (agents.synth.gate)
    done: bool


@dataclass
class GraphContext:
    """What the nodes need besides the state (not checkpointed)."""
    corpus: dict[str, dict]                       # chunk_id -> {doc_id, title, text}
    llm: Any                                      # agents.session.LLMSession
    search: Callable[[str, int], list[str]]       # standalone question -> top-k chunk ids
    cfg: SynthConfig
    pages: dict[str, tuple[str, ...]] = field(default_factory=dict)   # page_key -> its passages (2+)
    views: dict[str, frozenset[str]] = field(default_factory=dict)   # focus_passages' content-word cache
    related: dict[str, list[str]] = field(default_factory=dict)   # page name -> corpus search hits (turn.select)
    idf: dict[str, float] = field(default_factory=dict)   # rare corpus words -> idf (turn.word_idf; offline questioner)
    need_search: Callable[[str, int], list[str]] | None = None   # the offline questioner's history-need search
    need_hits: dict[str, tuple[str, ...]] = field(default_factory=dict)   # its cache: query -> top-k chunk ids


def seeded_rng(*parts: Any) -> random.Random:
    return random.Random("|".join(map(str, parts)))


def sample_id(state: ConvState) -> str:
    return f"{state['conv_id']}:{state['turn']}"


def item_id(state: ConvState, tag: str) -> str:
    """The LLM call's item id (part of the accounting row): sample, step tag and attempt."""
    return f"{sample_id(state)}:{tag}{state.get('attempt', 0)}"


def usage_add(state: ConvState, res) -> dict:
    """The turn's usage record with one more step result counted in."""
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


def error_record(step: str, res) -> dict:
    """The turn's error record for a failed call (the raw output is kept)."""
    return {"step": step, "kind": res.failure.kind, "message": res.failure.message, "raw_output": res.raw_output}


def ok_turns(state: ConvState) -> list[dict]:
    return [t for t in state.get("turns", []) if t["status"] == "ok"]


def previous_questions(state: ConvState) -> list[str]:
    """The questioner's original wording of every accepted earlier turn."""
    return [t["question_original"] for t in ok_turns(state)]


def history(state: ConvState) -> list[list[str]]:
    h: list[list[str]] = []
    for t in ok_turns(state):
        h.append(["user", t["question"]])
        h.append(["assistant", t["answer"]])
    return h


def in_second_topic(state: ConvState) -> bool:
    st = state.get("switch_turn")
    return st is not None and state["turn"] >= st


def segment_ok_turns(state: ConvState) -> list[dict]:
    """The accepted turns of the current segment: since turn 1, or since the hard topic switch once it is reached."""
    st = state.get("switch_turn")
    lo = st if st is not None and state["turn"] >= st else 1
    return [t for t in ok_turns(state) if t["turn"] >= lo]


def visible_history(state: ConvState) -> list[list[str]]:
    """History the user of this turn has seen; a switch starts a fresh visible context for prompts."""
    return [x for t in segment_ok_turns(state) for x in (["user", t["question"]], ["assistant", t["answer"]])]


def passage(ctx: GraphContext, cid: str) -> dict:
    c = ctx.corpus[cid]
    return {"doc_id": cid, "title": c.get("title") or "", "text": c["text"]}
