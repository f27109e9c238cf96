"""Conversational query rewriting: the last user turn made self-contained (query mode ``rewrite``).

One LLM step (prompt + output model + prompt version) with a deterministic offline
implementation, used by ``mtr evaluate --benchmark --query-mode rewrite`` for turns the
benchmark gives no rewrite for. Sampling is greedy (temperature 0) so rewrites are stable.
"""
from __future__ import annotations

import re
from typing import Sequence

from pydantic import BaseModel, Field

from agents.config import Sampling
from agents.quoting import DATA_RULE, quote_block, quote_turns
from agents.session import run_batch
from agents.steps import LLMStep
from agents.synth.text import content_words

_PRONOUN = re.compile(r"\b(it|its|they|them|their|this|that|these|those|he|she|his|her)\b", re.IGNORECASE)


class RewriteOut(BaseModel):
    text: str = Field(..., min_length=1, description="the last user question, self-contained")


class QueryRewriter(LLMStep):
    """Inputs: ``turns`` [{"role": "user"|"assistant", "text"}], the last one being the user question."""

    name = "query_rewriter"
    kind = "generation"
    prompt_version = "query-rewriter-v3"
    output_model = RewriteOut
    sampling = Sampling(temperature=0.0, max_tokens=128)
    expected_output_tokens = 40

    def build_messages(self, x: dict) -> list[dict]:
        turns = x["turns"]
        hist = quote_turns((t["role"], t["text"][:600]) for t in turns[:-1])
        return [{"role": "system", "content": "You rewrite conversational search queries. Reply with JSON only. "
                                                     + DATA_RULE},
                {"role": "user", "content": (
                    f"Conversation:\n{hist or '(none)'}\n\n"
                    f"Last user question: {quote_block('question', turns[-1]['text'], inline=True)}\n\n"
                    "Rewrite the last question so it can be understood without the conversation: resolve pronouns "
                    "and ellipsis with the entities they refer to, keep its meaning, do not answer it. "
                    'Reply as JSON: {"text": "..."}.')}]

    def offline(self, x: dict) -> RewriteOut:
        """When the question leans on context (pronoun, ellipsis, under 6 words), add the previous user
        turn's content words in parentheses: a deterministic contextual rewrite for retrieval."""
        turns = x["turns"]
        q = turns[-1]["text"].strip()
        prev = [t["text"] for t in turns[:-1] if t["role"] == "user"]
        if not prev or not (_PRONOUN.search(q) or len(q.split()) < 6):
            return RewriteOut(text=q)
        ctx = [w for w in dict.fromkeys(content_words(prev[-1])) if w not in q.lower()]
        return RewriteOut(text=f"{q} ({' '.join(ctx[:8])})" if ctx else q)


def rewrite_all(conversations: dict[str, Sequence[dict]], llm_config, store=None) -> tuple[dict[str, str], str]:
    """Rewrites for every conversation id; returns (rewrites, backend used)."""
    ids = list(conversations)
    step = QueryRewriter()
    batch = run_batch(llm_config, step, [{"turns": list(conversations[i])} for i in ids], item_ids=ids, store=store)
    out: dict[str, str] = {}
    failed = []
    for i, res in zip(ids, batch.items):
        if res.ok:
            out[i] = res.output.text.strip()
        else:
            failed.append(i)
    if failed:
        raise ValueError(f"the query rewriter failed on {len(failed)} of {len(ids)} turns (e.g. {failed[0]}: "
                         f"{batch.items[ids.index(failed[0])].failure.message}); nothing was scored")
    backend = batch.items[0].backend if batch.items else "offline"
    return out, backend
