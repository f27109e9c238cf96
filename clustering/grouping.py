"""Ablation groupings of C passages, compared with the greedy traversal (:mod:`clustering.greedy`).

``cluster.grouping`` picks how the passages of one conversation are grouped:

* ``greedy`` (default): the chain walk over the kNN graph (each step from the *last added*
  passage), repaired; topics drift along the chain.
* ``random``: a seeded permutation cut into groups of ``size`` (C); the last ``n mod C``
  passages join the last group (so groups hold C..2C-1 passages). No similarity at all.
* ``knn-ball``: a plain kNN ball around a seed: seeds in a seeded random order; each unused
  seed takes its nearest ``C - 1`` unused neighbours from its own kNN list (no chaining), in
  nearest-first order. Members of balls shorter than ``min_size`` (seeds whose neighbours
  were taken) are pooled and cut into groups of C in pool order, the remainder joining the
  last full group while it stays under ``max_size``, else kept as a short group (reported).

Both return a :class:`~clustering.greedy.ClusteringResult` (every passage in exactly one
group), so the rest of the pipeline is unchanged.
"""
from __future__ import annotations

import numpy as np

from clustering.greedy import ClusteringResult

GROUPINGS = ("greedy", "random", "knn-ball")


def random_groups(n: int, size: int, seed: int = 0) -> ClusteringResult:
    """``n`` items in random groups of ``size`` (see module docstring).

    Examples:
        >>> sorted(len(g) for g in random_groups(10, 4, seed=1).clusters)
        [4, 6]
    """
    if size < 1:
        raise ValueError("size must be >= 1")
    order = [int(i) for i in np.random.default_rng(seed).permutation(n)]
    groups = [order[i:i + size] for i in range(0, n - n % size, size)]
    rest = order[n - n % size:]
    if rest:
        if groups:
            groups[-1].extend(rest)
        else:
            groups.append(rest)
    short = [cid for cid, g in enumerate(groups) if len(g) < size]
    return ClusteringResult(groups, short_clusters=short)


def knn_ball_groups(neighbours: np.ndarray, size: int, min_size: int | None = None, max_size: int | None = None,
                    seed: int = 0) -> ClusteringResult:
    """kNN balls around seeds (see module docstring); ``neighbours`` is N x k, nearest first,
    -1 = none."""
    n = neighbours.shape[0]
    min_size = min_size or size
    max_size = max_size or 2 * size
    used = np.zeros(n, dtype=bool)
    balls: list[list[int]] = []
    for s in np.random.default_rng(seed).permutation(n):
        s = int(s)
        if used[s]:
            continue
        ball = [s]
        used[s] = True
        for j in neighbours[s]:
            if len(ball) >= size:
                break
            if j >= 0 and not used[j]:
                ball.append(int(j))
                used[j] = True
        balls.append(ball)
    kept = [b for b in balls if len(b) >= min_size]
    pool = [m for b in balls if len(b) < min_size for m in b]
    moved = len(pool)
    for i in range(0, len(pool), size):
        part = pool[i:i + size]
        if len(part) < size and kept and len(kept[-1]) + len(part) <= max_size:
            kept[-1].extend(part)
        else:
            kept.append(part)
    short = [cid for cid, g in enumerate(kept) if len(g) < min_size]
    return ClusteringResult(kept, short_clusters=short, moved=moved)
