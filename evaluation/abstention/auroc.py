"""Step 6 (scoring): AUROC of a detector against a binary label, its test against 0.5, and a
vectorised rank AUROC for bootstrap resamples.

The positive class is *unanswerable* and detector scores are oriented so that higher means
"more likely unanswerable". AUROC is :func:`sklearn.metrics.roc_auc_score` (ties count
one half); it is undefined (NaN) when only one class is present. ``AUROC > 0.5`` is tested
with the one-sided Mann-Whitney U test (``AUROC = U / (n_pos * n_neg)``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np


@dataclass(frozen=True, slots=True)
class AurocResult:
    auroc: float
    n_pos: int
    n_neg: int
    p_value: float   # one-sided Mann-Whitney, H1: AUROC > 0.5 (NaN when undefined)


def auroc(labels: Sequence[int], scores: Sequence[float]) -> float:
    """AUROC (sklearn); NaN when ``labels`` hold a single class."""
    from sklearn.metrics import roc_auc_score   # costly: scikit-learn
    y = np.asarray(labels, dtype=int)
    if y.size == 0 or y.min() == y.max():
        return math.nan
    return float(roc_auc_score(y, np.asarray(scores, dtype=float)))


def auroc_test(labels: Sequence[int], scores: Sequence[float]) -> AurocResult:
    """AUROC with the one-sided Mann-Whitney p-value of ``AUROC > 0.5``."""
    from scipy.stats import mannwhitneyu   # costly: scipy
    y = np.asarray(labels, dtype=int)
    s = np.asarray(scores, dtype=float)
    pos, neg = s[y == 1], s[y == 0]
    a = auroc(y, s)
    if math.isnan(a):
        return AurocResult(a, int(pos.size), int(neg.size), math.nan)
    p = float(mannwhitneyu(pos, neg, alternative="greater").pvalue)
    return AurocResult(a, int(pos.size), int(neg.size), p)


def rank_auroc(labels: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Row-wise AUROC of ``(B, n)`` label / score matrices (mid-ranks for ties); NaN for rows
    with a single class. Equals :func:`auroc` on every row."""
    from scipy.stats import rankdata   # costly: scipy
    y = np.atleast_2d(labels).astype(bool)
    s = np.atleast_2d(scores).astype(float)
    ranks = rankdata(s, axis=1)
    n_pos = y.sum(axis=1)
    n_neg = y.shape[1] - n_pos
    u = (ranks * y).sum(axis=1) - n_pos * (n_pos + 1) / 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        out = u / (n_pos * n_neg)
    out[(n_pos == 0) | (n_neg == 0)] = np.nan
    return out


__all__ = ["AurocResult", "auroc", "auroc_test", "rank_auroc"]
