"""nDCG@k (trec_eval ``ndcg_cut.k``) with graded gains.

``DCG@k = sum_{r=1..k} gain_r / log2(r + 1)`` with ``gain_r`` the qrels grade of the document
at rank r (negative grades and unjudged documents count 0). The ideal DCG ranks *all* of the
query's relevant documents by grade and is cut at k as well. A query whose ideal DCG is 0
scores 0.
"""
from __future__ import annotations

import numpy as np

from evaluation.ranking import RankedJudgments


def discounts(k: int) -> np.ndarray:
    """``1 / log2(r + 1)`` for ranks ``r = 1..k``."""
    return 1.0 / np.log2(np.arange(2, k + 2, dtype=np.float64))


def ndcg_at_k(ranked: RankedJudgments, k: int) -> np.ndarray:
    """nDCG at cutoff ``k`` for every query.

    Args:
        ranked: per-rank grades (depth >= k).
        k: cutoff (>= 1).

    Returns:
        ``(n_queries,)`` float array.
    """
    disc = discounts(k)
    gains = np.clip(ranked.grades[:, :k], 0, None).astype(np.float64)
    dcg = gains @ disc
    idcg = ranked.ideal[:, :k] @ disc
    out = np.zeros(len(ranked.qids), dtype=np.float64)
    np.divide(dcg, idcg, out=out, where=idcg > 0)
    return out
