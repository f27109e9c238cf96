"""Recall@k (trec_eval ``recall.k``): relevant documents in the top k / all relevant documents."""
from __future__ import annotations

import numpy as np

from evaluation.ranking import RankedJudgments


def recall_at_k(ranked: RankedJudgments, k: int) -> np.ndarray:
    """Recall at cutoff ``k`` for every query.

    The denominator is the number of relevant documents in the qrels (not ``min(k, R)``);
    a query without relevant documents scores 0, as in trec_eval.

    Args:
        ranked: per-rank grades (depth >= k).
        k: cutoff (>= 1).

    Returns:
        ``(n_queries,)`` float array.
    """
    hits = ranked.relevant(k).sum(axis=1)
    out = np.zeros(len(ranked.qids), dtype=np.float64)
    np.divide(hits, ranked.num_rel, out=out, where=ranked.num_rel > 0)
    return out
