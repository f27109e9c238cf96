"""Metric 1, query-evidence alignment (1-5): can the current question be answered from one
gold passage alone? Low ratings flag annotation *noise* (false positives in the gold set).

One judgment per (turn, gold passage). The judge sees the conversation history (to resolve
what the current question refers to), the current question and the passage (citation
markers removed).

Inputs: ``{"question", "history": [[role, text]...], "rewrite", "query", "passage":
{"doc_id", "title", "text"}}``. Output: :class:`~evaluation.audit.base.Rating`.
"""
from __future__ import annotations

from typing import Any

from evaluation.audit.base import RatingJudge


class AlignmentJudge(RatingJudge):
    """Query-evidence alignment judge (see module docstring)."""

    metric = "alignment"
    prompt_version = "mtr-eval-alignment-v3"
    task = """A passage was annotated as evidence for the user's current question in a multi-turn conversation. Decide whether the current question can be answered from this passage alone.
Use the conversation only to understand what the current question refers to; the answer itself must come from the passage."""
    scale = """Rating scale:
5 - Fully answerable: the passage alone answers the question; no outside knowledge is needed.
4 - Mostly answerable: the passage answers it, but a minor detail is missing or needs a small inference.
3 - Partially answerable: the passage covers only part of what is asked.
2 - Minimal relevance: the passage is on the topic but does not answer the question.
1 - Not answerable: the passage does not help answer the question."""
    example = """Example:
<passage title="Singapore">
Singapore is an island country in Southeast Asia. Its territory comprises one main island, 63 satellite islands and one outlying islet.
</passage>
Current user question: <question>When did Singapore become independent?</question>
{"rationale": "The passage only describes Singapore's location and territory; it says nothing about independence, so the question cannot be answered from it.", "rating": 1}"""

    def item(self, x: dict[str, Any]) -> str:
        return f"{self.conversation(x)}\n\nPassage:\n{self.passage(x['passage'])}"
