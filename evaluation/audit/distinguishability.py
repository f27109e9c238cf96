"""Metric 2, evidence completeness via the distinguishability test (0/1): shown the gold
passage among hard negatives, does the judge pick the gold one as the passage most likely
to answer the current question? Picking another passage flags possible annotation
*sparsity* (a missing positive); those passages are exported for human review.

The candidate lists (gold + retrieved hard negatives, or the benchmark's own list) and
their seeded shuffles are built by :mod:`evaluation.audit.candidates`; this module only
asks and parses. The score of a judgment is 1 when the chosen passage is the gold one.

Inputs: ``{"question", "history", "rewrite", "query", "candidates": [{"doc_id", "title",
"text"}...]}`` in the order shown. Output: :class:`~evaluation.audit.base.Choice`
(1-based position in that order).
"""
from __future__ import annotations

from typing import Any

from evaluation.audit.base import Choice, JudgeStep, parse_choice


class DistinguishabilityJudge(JudgeStep):
    """Distinguishability judge (see module docstring)."""

    metric = "distinguishability"
    prompt_version = "mtr-eval-distinguishability-v3"
    output_model = Choice
    example = """Example:
Current user question: <question>How tall is the Eiffel Tower?</question>
<passage id="1" title="Statue of Liberty">
The Statue of Liberty is a colossal neoclassical sculpture on Liberty Island in New York Harbor.
</passage>
<passage id="2" title="Eiffel Tower">
The Eiffel Tower is a wrought-iron lattice tower in Paris. It is 330 metres tall.
</passage>
<passage id="3" title="Big Ben">
Big Ben is the nickname for the Great Bell of the clock at the Palace of Westminster in London.
</passage>
{"rationale": "Only passage 2 is about the Eiffel Tower and it states its height.", "choice": 2}"""

    def instruction(self, x: dict[str, Any]) -> str:
        return (f"Below are {len(x['candidates'])} numbered candidate passages (their id is the number). Choose the "
                "single passage that is most likely to contain the answer to the user's current question in this "
                "multi-turn conversation. Use the conversation to understand what the question refers to. Exactly "
                "one passage must be chosen, even if several seem relevant or none does.")

    def item(self, x: dict[str, Any]) -> str:
        listing = "\n\n".join(self.passage(c, i) for i, c in enumerate(x["candidates"], start=1))
        return f"{self.conversation(x)}\n\nCandidates:\n{listing}"

    def reply_format(self, x: dict[str, Any]) -> str:
        return ('Reply with only a JSON object {"rationale": "<your reasoning, a few sentences>", '
                f'"choice": <the passage number, 1-{len(x["candidates"])}>}}. Write the rationale first, then the choice.')

    def parse(self, text: str | None, inputs: Any) -> Choice:
        return parse_choice(text, len(inputs["candidates"]))
