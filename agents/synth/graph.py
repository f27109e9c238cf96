"""The conversation graph (LangGraph): one thread per conversation, checkpointed per node.

Nodes: questioner (evidence selection, then the question) -> answerer -> verifier -> global
uniqueness -> humanizer (then the turn's commit), looping per turn; a turn that fails or gives up
goes to ``commit`` directly. Bookkeeping without an LLM call runs inside the LLM node next to it
(selection before the questioner, the commit after the humanizer): every LLM node is still
checkpointed, with two graph steps (and checkpoints) fewer per turn. The quality gate (``gate``: the same named checks
for every backend) runs in the verifier's node on the candidate the verifier accepted, and on the humanizer's rewrite
before the commit. The verifier, the gate and the uniqueness checker send the turn
back to the questioner with their reason, at most ``max_attempts`` times; then the turn is
recorded as failed (not dropped). A hard topic switch moves the conversation to another
topic's cluster at a seeded turn; the first question after it is standalone and is humanized
without history, so no pronoun points at turns the user never saw.

This module is wiring only: each agent (prompt, output model, offline implementation and its
graph-side rule) lives in its own module (``questioner``, ``answerer``, ``verifier``,
``uniqueness``, ``humanizer``); the turn's bookkeeping nodes in ``turn``; the state and the
helpers the nodes share in ``state``.

Every LLM call goes through :class:`agents.session.LLMSession` (cache, accounting, budget);
with the checkpointer and the content-addressed cache, a killed run resumes at the node it
was on and repeats no LLM call.
"""
from __future__ import annotations

import inspect
from typing import Any, Awaitable, Callable

from langgraph.graph import END, START, StateGraph

from agents.synth import answerer, gate, humanizer, questioner, turn, uniqueness, verifier
from agents.synth.state import ConvState, GraphContext

__all__ = ["ConvState", "GraphContext", "build_graph", "GRAPH_VERSION"]

# the node layout: part of every checkpoint thread's key (agents.synth.run.synthesis_key), so a
# checkpoint written by another layout is never resumed by this one
GRAPH_VERSION = "g3-gate-in-verify"


def _after_call(state: ConvState, max_attempts: int, accepted: str, empty_extra: int = 0) -> str:
    """Route after a node that may reject the candidate: a failed call ends the turn, a
    rejection retries (or gives up after ``max_attempts``), an accepted candidate goes on. Up to
    ``empty_extra`` attempts whose shown passages had nothing to ask (no candidate written:
    ``empty_attempts``) do not count against ``max_attempts``: each shows other passages of the pool."""
    if state.get("turn_error"):
        return "commit"
    if state.get("cand") is None:
        limit = max_attempts + min(state.get("empty_attempts", 0), empty_extra) + state.get("thread_looks", 0)
        return "retry" if state.get("attempt", 0) + 1 < limit else "commit"
    return accepted


def _after_answer(state: dict) -> str:
    if state.get("turn_error"):
        return "commit"
    return "verify"            # unanswerable turns too: the verifier's novelty check


def _after_commit(state: dict) -> str:
    return END if state.get("done") else "question"


def route(fn: Callable[[dict], str]) -> Callable[[dict], Awaitable[str]]:
    """A router as a coroutine: LangGraph runs a plain-function router of an async graph in a thread
    pool (a thread hop per turn and edge, about 5 per turn); a coroutine runs on the event loop."""
    async def router(state: dict) -> str:
        return fn(state)
    return router


def build_graph(ctx: GraphContext, checkpointer=None):
    """The compiled graph. Its state is ONE channel holding the whole :class:`ConvState` dict
    (``StateGraph(dict)``): each node returns the state with its update applied. LangGraph's
    per-step work (channel updates, copies for the routers, the checkpoint) then touches one
    channel instead of one per state key; the checkpointed values are the same dict. (Nodes and
    routers are annotated ``dict``: LangGraph reads a TypedDict annotation of a node or a router
    as more state channels.)"""
    def bind(fn: Callable[[GraphContext, ConvState], Awaitable[dict]]):
        async def node(state: dict) -> dict:
            return {**state, **await fn(ctx, state)}
        return node

    def plain(fn: Callable[[ConvState], Any]):
        async def node(state: dict) -> dict:
            upd = fn(state)
            if inspect.isawaitable(upd):
                upd = await upd
            return {**state, **upd}
        return node

    def then(accepted: str):
        return route(lambda state: _after_call(state, ctx.cfg.max_attempts, accepted, ctx.cfg.empty_attempts_extra))

    async def select_then_question(state: dict) -> dict:
        state = {**state, **await turn.select(ctx, state)}
        return {**state, **await questioner.node(ctx, state)}

    async def verify_then_gate(state: dict) -> dict:
        state = {**state, **await verifier.node(ctx, state)}
        return {**state, **gate.node(ctx, state)}

    async def humanize_then_commit(state: dict) -> dict:
        state = {**state, **await humanizer.node(ctx, state)}
        state = {**state, **gate.guard_rewrite(ctx, state)}
        return {**state, **await turn.commit(state)}

    nodes: dict[str, Any] = {"question": select_then_question,
                             "answer": bind(answerer.node), "verify": verify_then_gate,
                             "unique": bind(uniqueness.node), "humanize": humanize_then_commit,
                             "commit": plain(turn.commit), "retry": plain(turn.next_attempt)}
    g = StateGraph(dict)
    for name, fn in nodes.items():
        g.add_node(name, fn)
    g.add_edge(START, "question")
    g.add_conditional_edges("question", then("answer"), {"answer": "answer", "retry": "retry", "commit": "commit"})
    g.add_conditional_edges("answer", route(_after_answer), {"verify": "verify", "unique": "unique", "commit": "commit"})
    g.add_conditional_edges("verify", then("unique"), {"unique": "unique", "retry": "retry", "commit": "commit"})
    g.add_conditional_edges("unique", then("humanize"), {"humanize": "humanize", "retry": "retry", "commit": "commit"})
    g.add_edge("retry", "question")
    g.add_conditional_edges("humanize", route(_after_commit), {"question": "question", END: END})
    g.add_conditional_edges("commit", route(_after_commit), {"question": "question", END: END})
    return g.compile(checkpointer=checkpointer)
