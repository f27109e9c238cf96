"""Precision@k (trec_eval ``P.k``): relevant documents in the top k / k."""
from __future__ import annotations

import numpy as np

from evaluation.ranking import RankedJudgments


def precision_at_k(ranked: RankedJudgments, k: int) -> np.ndarray:
    """Precision at cutoff ``k`` for every query.

    The denominator is always ``k``, also when the run lists fewer than ``k`` documents
    (trec_eval semantics).

    Args:
        ranked: per-rank grades (depth >= k).
        k: cutoff (>= 1).

    Returns:
        ``(n_queries,)`` float array.
    """
    return ranked.relevant(k).sum(axis=1) / float(k)
