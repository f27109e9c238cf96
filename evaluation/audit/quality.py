"""Metric 4, answer quality (1-5): accuracy, completeness and relevance of the benchmark's
reference answer to the current question (in its conversation), independent of whether the
evidence supports it.

One judgment per turn with a reference answer. The judge sees the gold passages (context),
the conversation and the response.

Inputs: ``{"question", "history", "rewrite", "query", "answer", "passages": [...]}``.
Output: :class:`~evaluation.audit.base.Rating`.
"""
from __future__ import annotations

from evaluation.audit.base import RatingJudge


class QualityJudge(RatingJudge):
    """Answer quality judge (see module docstring)."""

    metric = "quality"
    prompt_version = "mtr-eval-quality-v3"
    task = """Rate the quality of the benchmark's reference response to the user's current question in a multi-turn conversation: its accuracy, completeness and relevance to what was asked. The passage(s) are context that may help you check accuracy."""
    scale = """Rating scale:
5 - Excellent: accurate, complete and directly relevant to the question.
4 - Good: accurate and relevant, with a minor omission or some unnecessary content.
3 - Partial: partly accurate or partly answers the question.
2 - Poor: mostly inaccurate, incomplete or off-topic.
1 - Inadequate: wrong, irrelevant, or does not answer the question."""
    example = """Example:
<passage title="Singapore">
Singapore gained independence from Malaysia on 9 August 1965. Its first prime minister was Lee Kuan Yew.
</passage>
Current user question: <question>When did Singapore become independent and who led it?</question>
Response: <answer>Singapore became independent in 1965, led by Tunku Abdul Rahman.</answer>
{"rationale": "The year is correct, but the leader is wrong (Lee Kuan Yew, not Tunku Abdul Rahman), so the response only half answers the question.", "rating": 3}"""
