"""Exact cosine kNN in memory: one numpy pass per block of rows, the graph every other search
is checked against (the row itself excluded; rows sorted by similarity descending, ties by the
lower index). :func:`clustering.knn.build_knn` uses it up to ``cluster.exact_max`` vectors, so
small corpora (the demo, tests) get exactly the graph they always got.
"""
from __future__ import annotations

from typing import Callable

import numpy as np


def knn(vectors: np.ndarray, k: int = 100, max_block_bytes: int = 256 * 1024 * 1024,
        progress: Callable[[int], None] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Exact: return (indices int32 [N, k'], similarities float32 [N, k']) with k' = min(k, N-1).

    Rows are sorted by similarity descending (ties: lower index first).
    """
    x = np.ascontiguousarray(vectors, dtype=np.float32)
    n = x.shape[0]
    kk = max(0, min(k, n - 1))
    idx = np.empty((n, kk), dtype=np.int32)
    sims = np.empty((n, kk), dtype=np.float32)
    if n == 0 or kk == 0:
        return idx, sims
    block = max(1, int(max_block_bytes // (4 * n)))
    for start in range(0, n, block):
        stop = min(n, start + block)
        s = x[start:stop] @ x.T
        rows = np.arange(stop - start)
        s[rows, rows + start] = -np.inf  # exclude self
        # top-kk without materialising -s (one pass less over the block)
        part = np.argpartition(s, n - kk, axis=1)[:, n - kk:] if kk < n - 1 else np.argsort(-s, axis=1, kind="stable")[:, :kk]
        ps = np.take_along_axis(s, part, axis=1)
        # sort by (-sim, index) for determinism
        order = np.lexsort((part, -ps), axis=1)
        idx[start:stop] = np.take_along_axis(part, order, axis=1)
        sims[start:stop] = np.take_along_axis(ps, order, axis=1)
        if progress:
            progress(stop - start)
    return idx, sims
