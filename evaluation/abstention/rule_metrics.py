"""Step 5: how wrong the rule label is, per retriever, against content labels.

Inputs per context: the rule label (True = rule-unanswerable) and one judge's content label
(``yes`` / ``partial`` / ``no``; None = not judged, left out of every content statistic).
``content-unanswerable`` means ``no``.

* **false-miss rate** = among rule-unanswerable (judged) contexts, the share labelled ``yes``;
  also ``yes`` + ``partial``.
* **rule precision** as an unanswerable detector = ``no`` / (``yes`` + ``no``) among
  rule-unanswerable contexts (``partial`` excluded); also with ``partial`` counted as
  answerable: ``no`` / all rule-unanswerable judged contexts.
* **Youden's J** = recall - false positive rate of the rule as a detector of
  content-unanswerable contexts: recall = P(rule-unanswerable | ``no``), FPR =
  P(rule-unanswerable | ``yes``) (``partial`` excluded); the second variant counts
  ``partial`` among the negatives (answerable). Base-rate free; NaN when a class is empty.
* **abstention rates**: the share of judged contexts a perfect abstainer would decline
  under each labelling (rule-unanswerable share; content-unanswerable share).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Sequence


def _div(a: int, b: int) -> float:
    return a / b if b else math.nan


@dataclass(frozen=True, slots=True)
class RuleMetrics:
    """The step-5 numbers of one retriever under one judge (see module docstring)."""

    n_contexts: int
    n_judged: int
    rule_unanswerable: int
    content_unanswerable: int
    content_partial: int
    rule_unanswerable_judged: int
    false_miss_yes: float
    false_miss_yes_partial: float
    precision: float
    precision_partial_answerable: float
    recall: float
    false_positive_rate: float
    youden_j: float
    youden_j_partial_answerable: float
    abstention_rule: float
    abstention_content: float

    def to_dict(self) -> dict:
        return asdict(self)


def rule_metrics(rule: Sequence[bool], content: Sequence[str | None]) -> RuleMetrics:
    """Step-5 metrics from aligned rule labels and content labels."""
    if len(rule) != len(content):
        raise ValueError("rule and content labels differ in length")
    bad = {c for c in content if c not in (None, "yes", "partial", "no")}
    if bad:
        raise ValueError(f"unknown content labels {sorted(bad)}")
    n = len(rule)
    pairs = [(bool(r), c) for r, c in zip(rule, content) if c is not None]
    cnt = {(r, c): 0 for r in (True, False) for c in ("yes", "partial", "no")}
    for p in pairs:
        cnt[p] += 1
    ru_yes, ru_par, ru_no = cnt[True, "yes"], cnt[True, "partial"], cnt[True, "no"]
    ra_yes, ra_par, ra_no = cnt[False, "yes"], cnt[False, "partial"], cnt[False, "no"]
    ru = ru_yes + ru_par + ru_no
    n_no = ru_no + ra_no
    n_yes = ru_yes + ra_yes
    recall = _div(ru_no, n_no)
    fpr = _div(ru_yes, n_yes)
    fpr_p = _div(ru_yes + ru_par, n_yes + ru_par + ra_par)
    nj = len(pairs)
    return RuleMetrics(
        n_contexts=n, n_judged=nj, rule_unanswerable=sum(bool(r) for r in rule),
        content_unanswerable=n_no, content_partial=ru_par + ra_par, rule_unanswerable_judged=ru,
        false_miss_yes=_div(ru_yes, ru), false_miss_yes_partial=_div(ru_yes + ru_par, ru),
        precision=_div(ru_no, ru_no + ru_yes), precision_partial_answerable=_div(ru_no, ru),
        recall=recall, false_positive_rate=fpr, youden_j=recall - fpr,
        youden_j_partial_answerable=recall - fpr_p,
        abstention_rule=_div(ru, nj), abstention_content=_div(n_no, nj))


__all__ = ["RuleMetrics", "rule_metrics"]
