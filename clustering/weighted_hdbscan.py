"""HDBSCAN of weighted points at scale: a minimum spanning tree over a kNN graph (cosine), components joined
by their closest pairs, then ``hdbscan``'s condensing and ``eom`` selection with the weights as sizes (a point
standing for a cluster of chunks counts as that many chunks). Used by :func:`clustering.topics.fit_topics_centroids`
on the conversation clusters' centroids; with unit weights the labels are ``hdbscan``'s."""
from __future__ import annotations

import numpy as np

KNN_TOPICS = 32          # hdbscan_knn: neighbours per point of the graph its spanning tree is built from
KNN_TOPICS_EXACT = 20000  # hdbscan_knn: exact kNN up to this many points, the calibrated FAISS IVF above


def hdbscan_knn(x: np.ndarray, weights: np.ndarray | None, min_cluster_size: int, min_samples: int | None = None,
                k: int = KNN_TOPICS, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """HDBSCAN (``eom``) of L2-normalised ``x`` (Euclidean = cosine order) where point i stands for
    ``weights[i]`` chunks (None: 1 each). Core distance: the distance to the nearest neighbour at
    which the weight within reach, the point's own included, exceeds ``m = min_samples or
    min_cluster_size`` (unit weights: the m-th neighbour, as in ``hdbscan``; a point of weight > m:
    0). The minimum spanning tree of the mutual reachability distances is taken over the kNN graph
    (``k`` neighbours; exact up to ``KNN_TOPICS_EXACT`` points, the IVF with nprobe calibrated to
    recall@10 0.95 above), components left apart by the graph joined at infinite distance (they
    are separate topics). Condensing and selection as in ``hdbscan`` with weights as sizes: a
    cluster needs ``min_cluster_size`` weight and at least two points. Returns (labels int64,
    probabilities float32)."""
    from hdbscan._hdbscan_linkage import label   # costly: hdbscan
    from scipy.sparse import coo_matrix   # costly: scipy
    from scipy.sparse.csgraph import connected_components, minimum_spanning_tree   # costly: scipy
    x = np.ascontiguousarray(x, dtype=np.float32)
    n = len(x)
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    if n < 2:
        return np.full(n, -1, dtype=np.int64), np.zeros(n, dtype=np.float32)
    m = min_samples or min_cluster_size
    kk = min(n - 1, max(k, m))
    if n <= KNN_TOPICS_EXACT:
        from clustering.knn.exact import knn
        idx, sims = knn(x, kk)
    else:
        from clustering.knn.ivf import ivf_knn   # costly: faiss
        idx, sims, _ = ivf_knn(x, kk, nprobe="auto", seed=seed)
    ok = idx >= 0
    d = np.where(ok, np.sqrt(np.maximum(0.0, 2.0 - 2.0 * sims.astype(np.float64))), np.inf)
    reach = (w[:, None] - 1) + np.cumsum(np.where(ok, w[np.maximum(idx, 0)], 0.0), axis=1)   # weight within d[:, j]
    hit = reach >= m
    j = np.where(hit.any(axis=1), hit.argmax(axis=1), ok.sum(axis=1) - 1)
    core = np.where(w - 1 >= m, 0.0, d[np.arange(n), np.maximum(j, 0)])
    a = np.repeat(np.arange(n), kk)[ok.ravel()]
    b = idx[ok].astype(np.int64)
    mr = np.maximum(np.maximum(d[ok], core[a]), core[b])
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    _, first = np.unique(lo * n + hi, return_index=True)
    graph = coo_matrix((np.maximum(mr[first], 1e-12), (lo[first], hi[first])), shape=(n, n)).tocsr()
    tree = minimum_spanning_tree(graph).tocoo()
    n_comp, comp = connected_components(tree, directed=False)
    if n_comp > 1:   # the kNN graph's components, bridged by their nearest mutual reachability edges
        br = _bridges(x, core, comp, n_comp, seed)
        graph = coo_matrix((np.concatenate([tree.data, np.maximum(br[:, 2], 1e-12)]),
                            (np.concatenate([tree.row, br[:, 0]]), np.concatenate([tree.col, br[:, 1]]))),
                           shape=(n, n)).tocsr()   # a pair twice is summed: keep bridges apart from the tree
        tree = minimum_spanning_tree(graph).tocoo()
        n_comp, comp = connected_components(tree, directed=False)
    edges = [np.column_stack([tree.row, tree.col, tree.data]).astype(np.float64)]
    if n_comp > 1:   # still apart: joined at infinite distance
        reps = np.unique(comp, return_index=True)[1]
        edges.append(np.column_stack([np.full(n_comp - 1, reps[0]), reps[1:], np.full(n_comp - 1, np.inf)]))
    mst = np.concatenate(edges)
    mst = mst[np.argsort(mst[:, 2], kind="stable")]
    return condense_select(label(mst), w, min_cluster_size)


def _bridges(x: np.ndarray, core: np.ndarray, comp: np.ndarray, n_comp: int, seed: int, kc: int = 8,
             m: int = 256) -> np.ndarray:
    """Edges (a, b, mutual reachability) between components of the kNN graph: each component and
    its ``kc`` nearest components by centroid, joined by their least mutual reachability pair among
    the ``m`` points of either nearest to the other's centroid. Joining components at infinite
    distance instead (the same root birth for all) inflates the stability of a component holding
    several topics, which then wins over them (measured: 4 topics instead of 7)."""
    from scipy.sparse import csr_matrix   # costly: scipy
    n = len(x)
    order = np.argsort(comp, kind="stable")
    starts = np.searchsorted(comp[order], np.arange(n_comp + 1))
    cen = np.asarray(csr_matrix((np.ones(n, dtype=np.float32), (comp, np.arange(n))), shape=(n_comp, n)) @ x)
    cen /= np.maximum(np.linalg.norm(cen, axis=1, keepdims=True), 1e-12)
    if n_comp <= KNN_TOPICS_EXACT:
        from clustering.knn.exact import knn
        nn, _ = knn(cen, kc)
    else:
        from clustering.knn.ivf import ivf_knn   # costly: faiss
        nn, _, _ = ivf_knn(cen, kc, nprobe="auto", seed=seed)
    a = np.repeat(np.arange(n_comp), nn.shape[1])
    b = nn.ravel().astype(np.int64)
    keep = b >= 0
    pairs = np.unique(np.column_stack([np.minimum(a, b), np.maximum(a, b)])[keep], axis=0)

    def near(c: int, other: int) -> np.ndarray:
        pts = order[starts[c]:starts[c + 1]]
        if len(pts) <= m:
            return pts
        return pts[np.argpartition(-(x[pts] @ cen[other]), m)[:m]]
    out = np.empty((len(pairs), 3))
    for r, (ca, cb) in enumerate(pairs.tolist()):
        pa_, pb_ = near(ca, cb), near(cb, ca)
        d = np.sqrt(np.maximum(0.0, 2.0 - 2.0 * (x[pa_] @ x[pb_].T).astype(np.float64)))
        mr = np.maximum(np.maximum(d, core[pa_][:, None]), core[pb_][None, :])
        i, j = np.unravel_index(int(np.argmin(mr)), mr.shape)
        out[r] = (pa_[i], pb_[j], mr[i, j])
    return out


def condense_select(single_linkage: np.ndarray, weights: np.ndarray, min_cluster_size: float
                    ) -> tuple[np.ndarray, np.ndarray]:
    """``hdbscan``'s condensing, excess-of-mass selection (root excluded), labelling and
    probabilities over a single-linkage tree (``hdbscan._hdbscan_linkage.label`` rows: left,
    right, distance, size), with point weights as sizes. Unit weights: ``hdbscan``'s labels."""
    n = len(weights)
    left, right = single_linkage[:, 0].astype(np.int64).tolist(), single_linkage[:, 1].astype(np.int64).tolist()
    dist = single_linkage[:, 2].tolist()
    wt = [float(v) for v in weights]
    for i in range(n - 1):
        wt.append(wt[left[i]] + wt[right[i]])
    relabel = [0] * (2 * n - 1)
    relabel[2 * n - 2] = n
    ignore = bytearray(2 * n - 1)
    parent, child, lam_row, size = [], [], [], []
    nxt = n + 1
    for node in range(2 * n - 2, n - 1, -1):
        if ignore[node]:
            continue
        i = node - n
        dd = dist[i]
        lam = np.inf if dd <= 0 else 1.0 / dd     # 1 / inf = 0.0
        p = relabel[node]
        big = [c >= n and wt[c] >= min_cluster_size for c in (left[i], right[i])]
        for c, c_big in zip((left[i], right[i]), big):
            if c_big and all(big):             # a true split: two new clusters
                relabel[c] = nxt
                parent.append(p), child.append(nxt), lam_row.append(lam), size.append(wt[c])
                nxt += 1
            elif c_big:                        # the cluster goes on as this child
                relabel[c] = p
            else:                              # too small: its points fall out of p
                stack = [c]
                while stack:
                    v = stack.pop()
                    if v < n:
                        parent.append(p), child.append(v), lam_row.append(lam), size.append(wt[v])
                    else:
                        ignore[v] = 1
                        stack += (left[v - n], right[v - n])
    par, chi = np.array(parent, dtype=np.int64) - n, np.array(child, dtype=np.int64)
    lam_a, size_a = np.array(lam_row, dtype=np.float64), np.array(size, dtype=np.float64)
    nc = nxt - n
    is_c = chi >= n
    birth = np.zeros(nc)
    birth[chi[is_c] - n] = lam_a[is_c]
    cpar = np.full(nc, -1, dtype=np.int64)
    cpar[chi[is_c] - n] = par[is_c]
    with np.errstate(invalid="ignore"):
        stab = np.bincount(par, weights=np.nan_to_num((lam_a - birth[par]) * size_a, nan=0.0, posinf=1e300),
                           minlength=nc)
    selected = np.zeros(nc, dtype=bool)
    sub = np.zeros(nc)                         # children's best stability, filled bottom-up
    for c in range(nc - 1, 0, -1):             # children have higher ids than parents; root (0) excluded
        if sub[c] > stab[c]:
            stab[c] = sub[c]
        else:
            selected[c] = True
        sub[cpar[c]] += stab[c]
    owner = np.full(nc, -1, dtype=np.int64)    # the selected cluster at or above each cluster
    for c in range(1, nc):
        owner[c] = c if selected[c] and owner[cpar[c]] < 0 else owner[cpar[c]]
    final = np.flatnonzero(selected & (owner == np.arange(nc)))
    number = np.full(nc, -1, dtype=np.int64)
    number[final] = np.arange(len(final))
    pts = ~is_c
    labels = np.full(n, -1, dtype=np.int64)
    own = owner[par[pts]]
    labels[chi[pts]] = np.where(own >= 0, number[np.maximum(own, 0)], -1)
    death = np.zeros(nc)
    np.maximum.at(death, par, lam_a)
    probs = np.zeros(n, dtype=np.float32)
    in_c = own >= 0
    pl, dl = lam_a[pts][in_c], death[own[in_c]]
    with np.errstate(divide="ignore", invalid="ignore"):
        pr = np.where((dl == 0) | ~np.isfinite(pl), 1.0, np.minimum(pl, dl) / dl)
    probs[chi[pts][in_c]] = pr
    return labels, probs


