"""Percentile bootstrap confidence intervals for the mean of per-query values."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np


@dataclass(frozen=True, slots=True)
class ConfidenceInterval:
    """A mean with its bootstrap interval.

    Attributes:
        mean: the sample mean.
        low: lower bound.
        high: upper bound.
        confidence: e.g. 0.95.
        n: number of values.
        n_resamples: bootstrap resamples drawn.
    """

    mean: float
    low: float
    high: float
    confidence: float
    n: int
    n_resamples: int


def bootstrap_ci(values: Sequence[float] | np.ndarray | Mapping[str, float], confidence: float = 0.95,
                 n_resamples: int = 10_000, seed: int = 0) -> ConfidenceInterval:
    """Percentile bootstrap CI of the mean: resample queries with replacement.

    Args:
        values: per-query values (a mapping's values are used).
        confidence: coverage in (0, 1).
        n_resamples: bootstrap resamples.
        seed: RNG seed (results are reproducible).

    Returns:
        The :class:`ConfidenceInterval`; with one value, ``low == high == mean``.

    Raises:
        ValueError: no values, or ``confidence`` outside (0, 1).
    """
    if isinstance(values, Mapping):
        values = list(values.values())
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        raise ValueError("bootstrap_ci needs at least one value")
    _check(confidence, n_resamples)
    mean = float(x.mean())
    if x.size == 1 or np.all(x == x[0]):
        return ConfidenceInterval(mean, mean, mean, confidence, int(x.size), n_resamples)
    n = x.size
    means = _resampled_sums(x[:, None], n_resamples, seed)[:, 0] / n
    low, high = _percentiles(means, confidence)
    return ConfidenceInterval(mean, low, high, confidence, int(n), n_resamples)


def _check(confidence: float, n_resamples: int) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n_resamples < 1:
        raise ValueError("n_resamples must be >= 1")


def _resampled_sums(rows: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """``(n_resamples, k)`` column sums of ``rows`` (``(n, k)``) resampled ``n`` at a time with replacement; seeded,
    drawn in chunks of at most ~2M indexes (memory-bounded for large ``n``)."""
    rng = np.random.default_rng(seed)
    n = len(rows)
    chunk = max(1, min(n_resamples, 2_000_000 // n))
    out = np.empty((n_resamples, rows.shape[1]), dtype=np.float64)
    done = 0
    while done < n_resamples:
        size = min(chunk, n_resamples - done)
        idx = rng.integers(0, n, size=(size, n))
        out[done:done + size] = rows[idx].sum(axis=1)
        done += size
    return out


def _percentiles(stats: np.ndarray, confidence: float) -> tuple[float, float]:
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(stats, [alpha, 1.0 - alpha])
    return float(low), float(high)


def ratio_ci(groups: Sequence[Sequence[tuple[float, float]]], confidence: float = 0.95, n_resamples: int = 10_000,
             seed: int = 0) -> ConfidenceInterval:
    """Percentile bootstrap CI of a ratio of sums, ``sum(b) / sum(a)`` over ``(a, b)`` pairs, resampling whole
    groups with replacement (a cluster bootstrap: the turns of one conversation are not independent, so a
    conversation is resampled as a unit). Used for the rewrite / last-turn nDCG ratio of a conversational
    benchmark (``a`` = last turn, ``b`` = rewrite, one group per conversation).

    Args:
        groups: one sequence of ``(a, b)`` pairs per group; empty groups are ignored.
        confidence: coverage in (0, 1).
        n_resamples: bootstrap resamples.
        seed: RNG seed (results are reproducible).

    Returns:
        The :class:`ConfidenceInterval` whose ``mean`` is the ratio on all pairs and ``n`` the number of groups;
        a resample whose ``a`` sums to 0 is left out of the percentiles (``nan`` bounds if all are).

    Raises:
        ValueError: no pairs, ``sum(a)`` is 0, or ``confidence`` outside (0, 1).
    """
    _check(confidence, n_resamples)
    sums = np.array([[sum(a for a, _ in g), sum(b for _, b in g)] for g in groups if len(g)], dtype=np.float64)
    if sums.size == 0:
        raise ValueError("ratio_ci needs at least one pair")
    total_a, total_b = sums.sum(axis=0)
    if total_a == 0:
        raise ValueError("ratio_ci: the denominators sum to 0")
    ratio = float(total_b / total_a)
    n = len(sums)
    if n == 1:
        return ConfidenceInterval(ratio, ratio, ratio, confidence, 1, n_resamples)
    res = _resampled_sums(sums, n_resamples, seed)
    ok = res[:, 0] > 0
    if not ok.any():
        return ConfidenceInterval(ratio, float("nan"), float("nan"), confidence, n, n_resamples)
    low, high = _percentiles(res[ok, 1] / res[ok, 0], confidence)
    return ConfidenceInterval(ratio, low, high, confidence, n, n_resamples)
