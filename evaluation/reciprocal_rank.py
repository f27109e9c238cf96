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

    Uses :attr:`RankedJudgments.first_rel_rank`, which is computed over the whole ranking,
    so the uncut measure does not need per-rank arrays as deep as the longest list.

    Args:
        ranked: per-query judgments.
        k: cutoff, or ``None`` for the whole ranking (uncut ``recip_rank``).

    Returns:
        ``(n_queries,)`` float array.
    """
    first = ranked.first_rel_rank
    found = first > 0 if k is None else (first > 0) & (first <= k)
    return np.where(found, 1.0 / np.maximum(first, 1), 0.0)
