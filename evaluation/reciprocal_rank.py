"""Reciprocal rank (trec_eval ``recip_rank``) and its cut version MRR@k.

``recip_rank`` = 1 / rank of the first relevant document (0 when none is retrieved). The cut
version only looks at the top k (named ``recip_rank_k`` in MTR-Suite; trec_eval has no cut
variant, it equals ``recip_rank`` computed on the run truncated to its top k).
"""
from __future__ import annotations

import numpy as np

from evaluation.ranking import RankedJudgments


def reciprocal_rank_at_k(ranked: RankedJudgments, k: int | None = None) -> np.ndarray:
    """Reciprocal rank of the first relevant document within the top ``k``.

    Args:
        ranked: per-rank grades (depth >= k; for ``k=None`` the depth must cover the longest list).
        k: cutoff, or ``None`` for the whole ranking (uncut ``recip_rank``).

    Returns:
        ``(n_queries,)`` float array.
    """
    hit = ranked.relevant(ranked.depth if k is None else k)
    first = hit.argmax(axis=1)
    return np.where(hit.any(axis=1), 1.0 / (first + 1.0), 0.0)
