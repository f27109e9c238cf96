"""How well a benchmark separates retrievers: the spread of one measure's means across them.

A benchmark on which BM25, dense and hybrid retrievers all reach about the same Recall@20
cannot tell them apart; the *discrimination* figure is the range (max - min) and the
standard deviation of the per-retriever means.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from evaluation.metrics import EvalResult

DEFAULT_MEASURE = "recall_20"


@dataclass(frozen=True, slots=True)
class Discrimination:
    """Spread of one measure's means across retrievers.

    Attributes:
        measure: the measure (default ``recall_20``).
        means: ``{retriever: mean}``.
        spread: ``max - min`` of the means.
        std: population standard deviation (``ddof=0``) of the means.
        best: retriever with the highest mean.
        worst: retriever with the lowest mean.
    """

    measure: str
    means: Mapping[str, float]
    spread: float
    std: float
    best: str
    worst: str


def discrimination(results: Mapping[str, EvalResult | float], measure: str = DEFAULT_MEASURE) -> Discrimination:
    """Spread of ``measure`` across retrievers.

    Args:
        results: ``{retriever: EvalResult}`` (its mean of ``measure`` is used) or
            ``{retriever: mean}``.
        measure: which measure (``recall_20`` by default).

    Returns:
        The :class:`Discrimination`.

    Raises:
        ValueError: fewer than two retrievers.
        KeyError: an ``EvalResult`` lacks ``measure``.
    """
    if len(results) < 2:
        raise ValueError(f"discrimination needs at least two retrievers, got {len(results)}")
    means = {}
    for name, value in results.items():
        if isinstance(value, EvalResult):
            means[name] = float(value.column(measure).mean()) if value.n_queries else float("nan")
        else:
            means[name] = float(value)
    arr = np.array(list(means.values()))
    names = list(means)
    return Discrimination(measure=measure, means=means, spread=float(arr.max() - arr.min()),
                          std=float(arr.std(ddof=0)), best=names[int(arr.argmax())],
                          worst=names[int(arr.argmin())])
