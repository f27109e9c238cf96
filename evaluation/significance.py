"""Paired significance tests between two systems' per-query values.

Both tests compare the same queries scored by two retrievers (``a`` and ``b``); the
statistic is the mean of the per-query differences ``a - b``. Inputs are aligned by query
id, so both must cover exactly the same queries (evaluate both runs with the same qrels and
the same missing-query policy).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
from scipy import stats

from evaluation.metrics import EvalResult

PairedValues = Mapping[str, float] | Sequence[float] | np.ndarray


@dataclass(frozen=True, slots=True)
class PairedTest:
    """Result of a paired test.

    Attributes:
        method: ``randomization`` or ``t-test``.
        mean_diff: mean of ``a - b`` over the paired queries.
        p_value: two-sided p-value.
        n: number of paired queries.
        n_resamples: sign flips drawn (``None`` for the t-test; ``2**n`` when exact).
        exact: True when every sign assignment was enumerated.
        statistic: the t statistic (t-test) or the observed mean difference.
    """

    method: str
    mean_diff: float
    p_value: float
    n: int
    n_resamples: int | None
    exact: bool
    statistic: float


def paired_arrays(a: PairedValues, b: PairedValues) -> tuple[np.ndarray, np.ndarray]:
    """Align two per-query value collections.

    Mappings are aligned by key and must have the same keys; sequences must have the same
    length (and are assumed aligned).

    Raises:
        ValueError: different query sets / lengths, or no pairs at all.
    """
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        if set(a) != set(b):
            only_a, only_b = len(set(a) - set(b)), len(set(b) - set(a))
            raise ValueError(f"the two systems cover different queries ({only_a} only in a, {only_b} only in b); "
                             f"evaluate both with the same qrels and missing-query policy")
        keys = list(a)
        x = np.array([a[k] for k in keys], dtype=np.float64)
        y = np.array([b[k] for k in keys], dtype=np.float64)
    elif isinstance(a, Mapping) or isinstance(b, Mapping):
        raise ValueError("pass two mappings (qid -> value) or two aligned sequences, not one of each")
    else:
        x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        if x.shape != y.shape or x.ndim != 1:
            raise ValueError(f"paired values must be 1-d with equal lengths, got {x.shape} and {y.shape}")
    if x.size == 0:
        raise ValueError("no paired values")
    return x, y


def paired_values(a: EvalResult, b: EvalResult, measure: str) -> tuple[dict[str, float], dict[str, float]]:
    """Per-query values of ``measure`` from two evaluation results (``{qid: value}`` each)."""
    return a.series(measure), b.series(measure)


def paired_randomization_test(a: PairedValues, b: PairedValues, n_resamples: int = 10_000,
                              seed: int = 0) -> PairedTest:
    """Two-sided paired randomisation (sign-flip permutation) test on the mean difference.

    Under the null hypothesis each query's difference ``a_i - b_i`` is equally likely to have
    either sign. The p-value is the share of sign assignments whose mean difference is at
    least as extreme (in absolute value) as the observed one. When ``2**n <= n_resamples``
    every assignment is enumerated and the p-value is exact; otherwise ``n_resamples`` random
    assignments are drawn and ``p = (hits + 1) / (n_resamples + 1)`` (never 0).

    Args:
        a: per-query values of system a (mapping qid -> value, or a sequence).
        b: per-query values of system b, same queries.
        n_resamples: random sign assignments to draw.
        seed: RNG seed (results are reproducible).

    Returns:
        A :class:`PairedTest` with ``method="randomization"``.
    """
    x, y = paired_arrays(a, b)
    d = x - y
    n = d.size
    observed = float(d.mean())
    tol = 1e-12 * max(1.0, abs(observed))
    if n_resamples < 1:
        raise ValueError("n_resamples must be >= 1")
    if n <= 30 and 2 ** n <= n_resamples:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=n)))
        perm = signs @ d / n
        hits = int(np.count_nonzero(np.abs(perm) >= abs(observed) - tol))
        return PairedTest("randomization", observed, hits / len(perm), n, len(perm), True, observed)
    rng = np.random.default_rng(seed)
    hits = 0
    chunk = max(1, min(n_resamples, 2_000_000 // max(n, 1)))
    done = 0
    while done < n_resamples:
        size = min(chunk, n_resamples - done)
        signs = rng.integers(0, 2, size=(size, n), dtype=np.int8) * 2 - 1
        perm = signs @ d / n
        hits += int(np.count_nonzero(np.abs(perm) >= abs(observed) - tol))
        done += size
    return PairedTest("randomization", observed, (hits + 1) / (n_resamples + 1), n, n_resamples, False, observed)


def paired_t_test(a: PairedValues, b: PairedValues) -> PairedTest:
    """Two-sided paired t-test (``scipy.stats.ttest_rel``).

    When every difference is identical the t statistic is undefined; the p-value is then 1.0
    if all differences are 0 and 0.0 otherwise (a constant non-zero shift).

    Args:
        a: per-query values of system a (mapping qid -> value, or a sequence).
        b: per-query values of system b, same queries.

    Returns:
        A :class:`PairedTest` with ``method="t-test"``.

    Raises:
        ValueError: fewer than 2 pairs.
    """
    x, y = paired_arrays(a, b)
    if x.size < 2:
        raise ValueError("a paired t-test needs at least 2 queries")
    d = x - y
    observed = float(d.mean())
    if np.allclose(d, d[0], rtol=0.0, atol=1e-15):
        p = 1.0 if abs(d[0]) <= 1e-15 else 0.0
        t = 0.0 if p == 1.0 else math.copysign(math.inf, observed)
        return PairedTest("t-test", observed, p, int(d.size), None, False, t)
    res = stats.ttest_rel(x, y)
    return PairedTest("t-test", observed, float(res.pvalue), int(d.size), None, False, float(res.statistic))
