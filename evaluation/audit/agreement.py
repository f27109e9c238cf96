"""Inter-judge agreement: Krippendorff's alpha and mean pairwise Spearman / raw agreement.

Krippendorff's alpha is implemented here (coincidence-matrix form, ~30 lines) rather than
taken from a dependency: it handles missing judgments (a judge that failed or was excluded
for self-preference simply has no value for that unit) and any number of judges.

    alpha = 1 - (n - 1) * sum_ck o_ck d(c, k) / sum_ck n_c n_k d(c, k)

with ``o`` the coincidence matrix (each unit with ``m >= 2`` values contributes every ordered
pair of its values with weight ``1 / (m - 1)``), ``n_c`` its margins, ``n`` the number of
pairable values and ``d`` the squared difference function of the level of measurement
(nominal, ordinal, interval, ratio). Units with fewer than two values are not pairable and
are ignored. When every pairable value is identical the expected disagreement is 0 and
alpha is undefined (NaN).

References:
    Krippendorff, K. (2011). Computing Krippendorff's Alpha-Reliability. University of
    Pennsylvania, Annenberg School for Communication, Departmental Papers 43.
"""
from __future__ import annotations

import itertools
import math
from typing import Any, Hashable, Literal, Sequence

import numpy as np

Level = Literal["nominal", "ordinal", "interval", "ratio"]


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def krippendorff_alpha(data: Sequence[Sequence[Hashable | None]], level: Level = "interval") -> float:
    """Krippendorff's alpha of reliability data (see module docstring).

    Args:
        data: one row per *unit*, one column per judge (coder); ``None``/NaN = missing.
        level: ``nominal`` (any hashable values), ``ordinal``, ``interval`` or ``ratio``
            (numbers).

    Returns:
        Alpha in (-inf, 1]; NaN when fewer than two pairable values exist or there is no
        variation at all.

    Examples:
        >>> round(krippendorff_alpha([[1, 1], [2, 2], [3, 3]]), 3)
        1.0
    """
    units = [[v for v in row if not _missing(v)] for row in data]
    units = [u for u in units if len(u) >= 2]
    if not units:
        return float("nan")
    values = sorted({v for u in units for v in u}, key=lambda v: (str(type(v)), v)) if level == "nominal" \
        else sorted({float(v) for u in units for v in u})
    idx = {v: i for i, v in enumerate(values)}
    V = len(values)
    counts = np.zeros((len(units), V))
    for r, u in enumerate(units):
        for v in u:
            counts[r, idx[v if level == "nominal" else float(v)]] += 1
    m = counts.sum(axis=1)
    w = 1.0 / (m - 1.0)
    o = (counts * w[:, None]).T @ counts - np.diag((counts * w[:, None]).sum(axis=0))
    n_c = o.sum(axis=1)
    n = n_c.sum()
    d = _distance(np.asarray(values, dtype=float) if level != "nominal" else np.arange(V), n_c, level)
    expected = (np.outer(n_c, n_c) * d).sum()
    if expected <= 0 or n <= 1:
        return float("nan")
    observed = (o * d).sum()
    return float(1.0 - (n - 1.0) * observed / expected)


def _distance(vals: np.ndarray, n_c: np.ndarray, level: str) -> np.ndarray:
    V = len(vals)
    if level == "nominal":
        return 1.0 - np.eye(V)
    if level == "interval":
        return (vals[:, None] - vals[None, :]) ** 2
    if level == "ratio":
        s = vals[:, None] + vals[None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            d = ((vals[:, None] - vals[None, :]) / s) ** 2
        return np.nan_to_num(d)
    if level == "ordinal":
        cum = np.cumsum(n_c)
        d = np.zeros((V, V))
        for c in range(V):
            for k in range(c + 1, V):
                between = cum[k] - (cum[c - 1] if c > 0 else 0.0)   # sum of n_g for g in c..k
                d[c, k] = d[k, c] = (between - (n_c[c] + n_c[k]) / 2.0) ** 2
        return d
    raise ValueError(f"unknown level of measurement {level!r}")


def _pairs(data: Sequence[Sequence[Any]]) -> list[tuple[np.ndarray, np.ndarray]]:
    arr = [list(r) for r in data]
    k = len(arr[0]) if arr else 0
    out = []
    for a, b in itertools.combinations(range(k), 2):
        xs = [(r[a], r[b]) for r in arr if not _missing(r[a]) and not _missing(r[b])]
        out.append((np.array([x for x, _ in xs], dtype=object), np.array([y for _, y in xs], dtype=object)))
    return out


def mean_pairwise_spearman(data: Sequence[Sequence[float | None]], min_units: int = 3) -> float:
    """Mean Spearman rho over judge pairs (units both judged; pairs with fewer than
    ``min_units`` common units or a constant column are left out); NaN when no pair counts."""
    from scipy.stats import spearmanr   # costly: scipy
    rhos = []
    for x, y in _pairs(data):
        if len(x) < min_units:
            continue
        x, y = x.astype(float), y.astype(float)
        if np.all(x == x[0]) or np.all(y == y[0]):
            continue
        rhos.append(float(spearmanr(x, y).statistic))
    return float(np.mean(rhos)) if rhos else float("nan")


def mean_pairwise_agreement(data: Sequence[Sequence[Any]]) -> float:
    """Mean share of identical values over judge pairs (units both judged); NaN when none."""
    rates = [float(np.mean([a == b for a, b in zip(x, y)])) for x, y in _pairs(data) if len(x)]
    return float(np.mean(rates)) if rates else float("nan")


def fleiss_kappa(counts: Sequence[Sequence[int]]) -> float:
    """Fleiss' kappa of ``counts[i][j]`` = raters who put item ``i`` in category ``j``.

    Every item must have the same number ``n >= 2`` of ratings (use
    :func:`krippendorff_alpha` when ratings are missing).

        P_i = (sum_j n_ij^2 - n) / (n (n - 1)),  p_j = sum_i n_ij / (N n)
        kappa = (mean_i P_i - sum_j p_j^2) / (1 - sum_j p_j^2)

    Returns NaN for no items or when every rating is in one category.

    References:
        Fleiss, J. L. (1971). Measuring nominal scale agreement among many raters.
        Psychological Bulletin 76(5), 378-382.

    Examples:
        >>> round(fleiss_kappa([[3, 0], [2, 1], [0, 3]]), 3)      # (7/9 - 41/81) / (40/81)
        0.55
    """
    arr = np.asarray(counts, dtype=float)
    if arr.size == 0 or arr.ndim != 2:
        return float("nan")
    n_per = arr.sum(axis=1)
    n = n_per[0]
    if n < 2 or np.any(n_per != n):
        raise ValueError("Fleiss' kappa needs the same number (>= 2) of ratings for every item")
    big_n = arr.shape[0]
    p_j = arr.sum(axis=0) / (big_n * n)
    p_i = ((arr ** 2).sum(axis=1) - n) / (n * (n - 1))
    pe = float((p_j ** 2).sum())
    if pe >= 1.0:
        return float("nan")
    return float((p_i.mean() - pe) / (1.0 - pe))
