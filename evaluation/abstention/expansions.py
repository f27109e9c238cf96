"""LLM query expansions for the ``fusion`` / ``hybrid`` rungs (step 1).

An LLM reads the conversation and writes ``n`` search queries for its last question, the
first a short hypothetical passage that answers it (HyDE-style), the others standalone
rewrites. Offline the ladder uses pseudo-relevance feedback instead
(:meth:`evaluation.abstention.ladder.Ladder.prf_expansions`).
"""
from __future__ import annotations

from typing import Any, Mapping

from pydantic import BaseModel, Field

from agents.quoting import DATA_RULE, quote_block
from agents.steps import LLMStep
from evaluation.abstention.contexts import format_conversation


class Expansions(BaseModel):
    expansions: list[str] = Field(min_length=1)


class ExpandQuery(LLMStep):
    """``n`` expansions of a conversation's last question (input: question, history, n)."""

    name = "abstention_expand"
    kind = "generation"
    prompt_version = "abstention-expand-v3"
    output_model = Expansions
    expected_output_tokens = 250

    def __init__(self, role: str) -> None:
        super().__init__(role=role)

    def build_messages(self, x: Mapping[str, Any]):
        n = int(x.get("n", 3))
        user = (f"Conversation so far:\n{format_conversation(x)}\n\n"
                f"Last question: {quote_block('question', x['question'], inline=True)}\n\n"
                f"Write {n} search queries for a keyword search engine that would find passages answering the "
                f"last question. The first is a short hypothetical passage (2-3 sentences) that answers it; the "
                f"others are standalone rewrites of the question in different words. Reply with only a JSON "
                f"object: {{\"expansions\": [{n} strings]}}.")
        return [{"role": "system", "content": "You write search queries. " + DATA_RULE}, {"role": "user", "content": user}]


__all__ = ["ExpandQuery", "Expansions"]
