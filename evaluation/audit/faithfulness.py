"""Metric 3, answer-evidence faithfulness (1-5): is every claim of the benchmark's reference
answer supported by the turn's gold passages? Low ratings flag hallucinated annotations.

One judgment per turn with a reference answer. The judge sees the gold passages, the
conversation (as context for the question) and the reference answer.

Inputs: ``{"question", "history", "rewrite", "query", "answer", "passages": [{"doc_id",
"title", "text"}...]}``. Output: :class:`~evaluation.audit.base.Rating`.
"""
from __future__ import annotations

from evaluation.audit.base import RatingJudge


class FaithfulnessJudge(RatingJudge):
    """Answer-evidence faithfulness judge (see module docstring)."""

    metric = "faithfulness"
    prompt_version = "mtr-eval-faithfulness-v3"
    task = """Below are the evidence passage(s) of a turn in a multi-turn conversation and the benchmark's reference response to the user's current question. Decide whether every claim in the response is supported by the passage(s). The question is context only; judge the response against the passage(s), not against your own knowledge."""
    scale = """Rating scale:
5 - Fully faithful: every claim in the response is supported by the passage(s).
4 - Mostly faithful: harmless paraphrase or a small, reasonable inference beyond the passage(s).
3 - Partially faithful: a mix of supported and unsupported claims, or a minor contradiction.
2 - Mostly unfaithful: most claims are unsupported or contradict the passage(s).
1 - Unfaithful: the response is hallucinated or contradicts the passage(s)."""
    example = """Example:
<passage title="Singapore">
Modern Singapore was founded in 1819 by Sir Stamford Raffles as a trading post of the British Empire.
</passage>
Current user question: <question>Who founded Singapore?</question>
Response: <answer>Singapore was founded in 1819 by Sir Stamford Raffles, who became its first president and built the Marina Bay Sands.</answer>
{"rationale": "The founding year and founder are supported, but Raffles being its first president and building Marina Bay Sands are invented and false.", "rating": 2}"""
