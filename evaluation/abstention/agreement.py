"""Step 2 (agreement): how much two content judges agree on the same contexts.

Cohen's kappa (:func:`sklearn.metrics.cohen_kappa_score`, unweighted, over the three labels
``yes`` / ``partial`` / ``no``) and raw agreement, on the contexts both judges labelled.
Also the binary kappa of "answers" (``yes``) vs not. Kappa is NaN when undefined (fewer
than two contexts, or both judges constant on the same single label).
"""
from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass
from typing import Sequence

from evaluation.abstention.judges import LABELS


@dataclass(frozen=True, slots=True)
class Agreement:
    judge_a: str
    judge_b: str
    n: int
    raw_agreement: float
    kappa: float
    kappa_yes_vs_rest: float

    def to_dict(self) -> dict:
        return asdict(self)


def _kappa(a: list[str], b: list[str], labels: Sequence[str]) -> float:
    from sklearn.metrics import cohen_kappa_score   # costly: scikit-learn
    if len(a) < 2 or len(set(a) | set(b)) < 2:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        k = cohen_kappa_score(a, b, labels=list(labels))
    return float(k)


def agreement(judge_a: str, labels_a: Sequence[str | None], judge_b: str,
              labels_b: Sequence[str | None]) -> Agreement:
    """Agreement of two judges on aligned labels (pairs with a missing label are dropped)."""
    if len(labels_a) != len(labels_b):
        raise ValueError("the two judges' labels differ in length")
    pairs = [(x, y) for x, y in zip(labels_a, labels_b) if x is not None and y is not None]
    a = [x for x, _ in pairs]
    b = [y for _, y in pairs]
    raw = sum(x == y for x, y in pairs) / len(pairs) if pairs else math.nan
    yes_a = ["yes" if x == "yes" else "other" for x in a]
    yes_b = ["yes" if y == "yes" else "other" for y in b]
    return Agreement(judge_a, judge_b, len(pairs), raw, _kappa(a, b, LABELS), _kappa(yes_a, yes_b, ("yes", "other")))


__all__ = ["Agreement", "agreement"]
