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
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n_resamples < 1:
        raise ValueError("n_resamples must be >= 1")
    mean = float(x.mean())
    if x.size == 1 or np.all(x == x[0]):
        return ConfidenceInterval(mean, mean, mean, confidence, int(x.size), n_resamples)
    rng = np.random.default_rng(seed)
    n = x.size
    chunk = max(1, min(n_resamples, 2_000_000 // n))
    means = np.empty(n_resamples, dtype=np.float64)
    done = 0
    while done < n_resamples:
        size = min(chunk, n_resamples - done)
        idx = rng.integers(0, n, size=(size, n))
        means[done:done + size] = x[idx].mean(axis=1)
        done += size
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return ConfidenceInterval(mean, float(low), float(high), confidence, int(n), n_resamples)
