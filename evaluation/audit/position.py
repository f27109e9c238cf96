"""Position bias of a distinguishability judge: accuracy by gold slot and two chi-square tests.

Inputs are the forward-pass judgments of one judge as ``(gold_slot, chosen_slot)`` pairs over
lists of ``k`` candidates (1-based slots).

* **Chosen-position test** (goodness of fit): are the chosen slots distributed like the gold
  slots? Expected count of slot ``s`` = ``n * g_s / n`` = ``g_s`` where ``g_s`` is the number
  of judgments whose gold was in slot ``s``; statistic ``sum_s (c_s - g_s)^2 / g_s`` with
  ``k - 1`` degrees of freedom (``c_s`` = picks of slot ``s``). A judge without position
  preference picks the gold where it is and, when wrong, a slot unrelated to its position;
  under a counterbalanced design (``g_s`` equal) both give a uniform expectation. A judge
  that always picks slot 1 gives ``c = (n, 0, ...)``, far from ``g``. Undefined (NaN) when a
  slot never holds the gold (``g_s = 0``) - the design avoids that for ``n >= k``.
* **Accuracy-by-slot test** (independence, 2 x k contingency table correct / wrong x gold
  slot, Pearson's chi-square without continuity correction): does being right depend on
  where the gold was? Slots with no judgment are left out; NaN when fewer than two slots
  remain or every judgment is right (or every one wrong).

References:
    Pearson, K. (1900). On the criterion that a given system of deviations from the probable
    ... Philosophical Magazine 50(302), 157-175.
    Zheng, L. et al. (2023). Judging LLM-as-a-judge with MT-Bench and Chatbot Arena
    (position bias of LLM judges). NeurIPS Datasets and Benchmarks.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

NAN = float("nan")


@dataclass(frozen=True)
class PositionBias:
    """Per-judge position statistics (see module docstring).

    Attributes:
        k: list length (number of slots).
        n: judgments used.
        gold_hist / chosen_hist: counts per slot (index 0 = slot 1).
        accuracy_by_slot: share right per gold slot (NaN where the gold never was there).
        first_rate / last_rate: share of picks at slot 1 / slot ``k``.
        chi2 / df / p: the chosen-position goodness-of-fit test.
        slot_chi2 / slot_df / slot_p: the accuracy-by-slot independence test.
    """

    k: int
    n: int
    gold_hist: list[int]
    chosen_hist: list[int]
    accuracy_by_slot: list[float]
    first_rate: float
    last_rate: float
    chi2: float
    df: int
    p: float
    slot_chi2: float
    slot_df: int
    slot_p: float


def _sf(x: float, df: int) -> float:
    from scipy.stats import chi2   # costly: scipy
    return float(chi2.sf(x, df)) if df > 0 and not math.isnan(x) else NAN


def chosen_position_test(chosen_hist: Sequence[int], gold_hist: Sequence[int]) -> tuple[float, int, float]:
    """``(chi2, df, p)`` of the chosen slots against the gold slots' distribution (NaN when a
    slot never held the gold or fewer than two slots exist)."""
    k = len(gold_hist)
    n = sum(gold_hist)
    if k < 2 or n == 0 or sum(chosen_hist) != n or any(g == 0 for g in gold_hist):
        return NAN, k - 1, NAN
    x = sum((c - g) ** 2 / g for c, g in zip(chosen_hist, gold_hist))
    return x, k - 1, _sf(x, k - 1)


def slot_accuracy_test(right: Sequence[int], total: Sequence[int]) -> tuple[float, int, float]:
    """``(chi2, df, p)`` of the 2 x k table (right, wrong) x gold slot (see module docstring)."""
    cols = [(r, t - r) for r, t in zip(right, total) if t > 0]
    n = sum(r + w for r, w in cols)
    r_all = sum(r for r, _ in cols)
    w_all = n - r_all
    if len(cols) < 2 or r_all == 0 or w_all == 0:
        return NAN, max(len(cols) - 1, 0), NAN
    x = 0.0
    for r, w in cols:
        t = r + w
        for obs, row in ((r, r_all), (w, w_all)):
            e = row * t / n
            x += (obs - e) ** 2 / e
    df = len(cols) - 1
    return x, df, _sf(x, df)


def position_bias(pairs: Sequence[tuple[int, int]], k: int) -> PositionBias:
    """Statistics of ``(gold_slot, chosen_slot)`` pairs over lists of ``k`` slots.

    Examples:
        >>> pb = position_bias([(1, 1), (2, 1), (3, 3), (4, 1)], 4)
        >>> pb.chosen_hist, pb.accuracy_by_slot[:3], pb.first_rate
        ([3, 0, 1, 0], [1.0, 0.0, 1.0], 0.75)
    """
    gold = [0] * k
    chosen = [0] * k
    right = [0] * k
    for g, c in pairs:
        gold[g - 1] += 1
        chosen[c - 1] += 1
        right[g - 1] += g == c
    n = len(pairs)
    chi2, df, p = chosen_position_test(chosen, gold)
    schi2, sdf, sp = slot_accuracy_test(right, gold)
    return PositionBias(k=k, n=n, gold_hist=gold, chosen_hist=chosen,
                        accuracy_by_slot=[r / t if t else NAN for r, t in zip(right, gold)],
                        first_rate=chosen[0] / n if n else NAN, last_rate=chosen[-1] / n if n else NAN,
                        chi2=chi2, df=df, p=p, slot_chi2=schi2, slot_df=sdf, slot_p=sp)
