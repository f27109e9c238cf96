"""The conversation graph (LangGraph): one thread per conversation, checkpointed per node.

Nodes: select evidence -> questioner -> answerer -> verifier -> global uniqueness ->
humanizer -> commit, looping per turn. The verifier and the uniqueness checker send the turn
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

from typing import Any, Awaitable, Callable

from langgraph.graph import END, START, StateGraph

from agents.synth import answerer, humanizer, questioner, turn, uniqueness, verifier
from agents.synth.state import ConvState, GraphContext

__all__ = ["ConvState", "GraphContext", "build_graph"]


def _after_call(state: ConvState, max_attempts: int, accepted: str) -> str:
    """Route after a node that may reject the candidate: a failed call ends the turn, a
    rejection retries (or gives up after ``max_attempts``), an accepted candidate goes on."""
    if state.get("turn_error"):
        return "commit"
    if state.get("cand") is None:
        return "retry" if state.get("attempt", 0) + 1 < max_attempts else "commit"
    return accepted


def _after_answer(state: ConvState) -> str:
    if state.get("turn_error"):
        return "commit"
    return "verify"            # unanswerable turns too: the verifier's novelty check


def _after_commit(state: ConvState) -> str:
    return END if state.get("done") else "select"


def build_graph(ctx: GraphContext, checkpointer=None):
    def bind(fn: Callable[[GraphContext, ConvState], Awaitable[dict]]):
        async def node(state: ConvState) -> dict:
            return await fn(ctx, state)
        return node

    def then(accepted: str) -> Callable[[ConvState], str]:
        return lambda state: _after_call(state, ctx.cfg.max_attempts, accepted)

    nodes: dict[str, Any] = {"select": bind(turn.select), "question": bind(questioner.node),
                             "answer": bind(answerer.node), "verify": bind(verifier.node),
                             "unique": bind(uniqueness.node), "humanize": bind(humanizer.node),
                             "commit": turn.commit, "retry": turn.next_attempt}
    g = StateGraph(ConvState)
    for name, fn in nodes.items():
        g.add_node(name, fn)
    g.add_edge(START, "select")
    g.add_edge("select", "question")
    g.add_conditional_edges("question", then("answer"), {"answer": "answer", "retry": "retry", "commit": "commit"})
    g.add_conditional_edges("answer", _after_answer, {"verify": "verify", "unique": "unique", "commit": "commit"})
    g.add_conditional_edges("verify", then("unique"), {"unique": "unique", "retry": "retry", "commit": "commit"})
    g.add_conditional_edges("unique", then("humanize"), {"humanize": "humanize", "retry": "retry", "commit": "commit"})
    g.add_edge("humanize", "commit")
    g.add_edge("retry", "select")
    g.add_conditional_edges("commit", _after_commit, {"select": "select", END: END})
    return g.compile(checkpointer=checkpointer)
