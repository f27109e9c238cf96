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


@dataclass(frozen=True, slots=True)
class PairCount:
    """How many retriever pairs a benchmark separates significantly.

    Attributes:
        measure: the measure compared per query.
        n_pairs: retriever pairs tested (``r * (r - 1) / 2``).
        n_significant: pairs with ``p < alpha``.
        alpha: the significance level (no multiple-comparison correction unless ``holm``).
        correction: ``none`` or ``holm`` (Holm-Bonferroni step-down over the pairs).
        pairs: ``{(a, b): p_value}`` in input order.
    """

    measure: str
    n_pairs: int
    n_significant: int
    alpha: float
    correction: str
    pairs: Mapping[tuple[str, str], float]


def holm_reject(p_values: list[float], alpha: float) -> list[bool]:
    """Holm-Bonferroni step-down: sort p ascending, reject while ``p_(i) <= alpha / (m - i)``
    (0-based ``i``), stop at the first acceptance.

    Examples:
        >>> holm_reject([0.01, 0.04, 0.03], 0.05)      # 0.01 <= .05/3; 0.03 > .05/2 -> stop
        [True, False, False]
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    out = [False] * m
    for rank, i in enumerate(order):
        if p_values[i] <= alpha / (m - rank):
            out[i] = True
        else:
            break
    return out


def significant_pairs(results: Mapping[str, EvalResult], measure: str = DEFAULT_MEASURE, alpha: float = 0.05,
                      n_resamples: int = 10_000, seed: int = 0, correction: str = "none") -> PairCount:
    """Count the retriever pairs whose per-query ``measure`` differs under the project's paired
    randomisation test (:func:`evaluation.significance.paired_randomization_test`).

    Args:
        results: ``{retriever: EvalResult}`` over the same queries.
        measure: per-query measure (``recall_20`` by default).
        alpha: significance level.
        n_resamples / seed: of the randomisation test.
        correction: ``none`` (each pair at ``alpha``) or ``holm``.
    """
    from evaluation.significance import paired_randomization_test   # costly: scipy
    if correction not in ("none", "holm"):
        raise ValueError(f"correction must be 'none' or 'holm', got {correction!r}")
    names = list(results)
    pairs: dict[tuple[str, str], float] = {}
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            t = paired_randomization_test(results[a].series(measure), results[b].series(measure),
                                          n_resamples=n_resamples, seed=seed)
            pairs[(a, b)] = t.p_value
    ps = list(pairs.values())
    rejected = holm_reject(ps, alpha) if correction == "holm" else [p < alpha for p in ps]
    return PairCount(measure=measure, n_pairs=len(ps), n_significant=sum(rejected), alpha=alpha,
                     correction=correction, pairs=pairs)
