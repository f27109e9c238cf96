"""Topics: HDBSCAN (the ``hdbscan`` package) over chunk embeddings, with c-TF-IDF labels.

Embeddings are first reduced with PCA (default 32 dimensions) because tree-based HDBSCAN
is slow at 384 dimensions (see stack.md: 51 s -> 6 s on 10k points). Noise points keep
topic -1 at chunk level; a conversation cluster gets the majority topic of its chunks, or,
when all of them are noise, the topic whose centroid is nearest to the cluster's mean.
Later stages use cluster topics to pick *far* clusters for hard topic switches.

Scale: above ``sample_size`` chunks, PCA and HDBSCAN run on a seeded sample of that many
chunks and every other chunk takes the topic (and probability) of its nearest sample point
in the PCA space (FAISS flat L2; noise when that point is noise); keywords come from the
sample. Full HDBSCAN is quadratic in practice (950 s at 100k on 2 cores); the sample keeps
topics at a fixed cost. The sample's HDBSCAN is :func:`hdbscan_dense` (exact MST by Prim's
algorithm on a dense mutual-reachability matrix; ~4x less CPU than the package's Boruvka
k-d tree at 32 dimensions; `fast-hdbscan` and sklearn's HDBSCAN were measured slower). Agreement with full HDBSCAN (ARI) is measured by
``benchmarks/clustering.py --topics-ari`` and stated in the README. At or below
``sample_size`` nothing changes: full HDBSCAN on every chunk.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict, Field


class TopicConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    min_cluster_size: int = Field(10, ge=2)
    min_samples: int | None = Field(None, ge=1)
    reduce_dims: int | None = Field(32, ge=2, description="PCA dimensions before HDBSCAN; None = no reduction")
    n_keywords: int = Field(5, ge=1)
    seed: int = 0
    sample_size: int = Field(20000, ge=100, description="above this many chunks: HDBSCAN on a seeded sample, "
                                                        "the rest by nearest sample point")
    assign_nprobe: int = Field(16, ge=0, description="sampled topics: IVF cells searched for the nearest sample "
                                                     "point (of sqrt(sample_size)); 0 = exact search")


@dataclass
class TopicResult:
    labels: np.ndarray            # topic per chunk (-1 = noise)
    probabilities: np.ndarray
    keywords: dict[int, list[str]]
    sizes: dict[int, int]
    centroids: dict[int, np.ndarray]


def fit_topics(vectors: np.ndarray, texts: list[str], cfg: TopicConfig | None = None) -> TopicResult:
    cfg = cfg or TopicConfig()
    n = len(vectors)
    if n > cfg.sample_size:
        return fit_topics_sampled(vectors, texts, cfg)
    if n < max(cfg.min_cluster_size * 2, 4):
        labels = np.full(n, -1, dtype=np.int64)
        probs = np.zeros(n, dtype=np.float32)
    else:
        x = np.asarray(vectors, dtype=np.float64)
        if cfg.reduce_dims and x.shape[1] > cfg.reduce_dims and n > cfg.reduce_dims:
            from sklearn.decomposition import PCA   # costly: scikit-learn
            x = PCA(n_components=cfg.reduce_dims, random_state=cfg.seed).fit_transform(x)
        import hdbscan   # costly: hdbscan
        model = hdbscan.HDBSCAN(min_cluster_size=cfg.min_cluster_size, min_samples=cfg.min_samples,
                                core_dist_n_jobs=1)
        labels = model.fit_predict(x).astype(np.int64)
        probs = np.asarray(model.probabilities_, dtype=np.float32)
    topic_ids = sorted(int(t) for t in set(labels.tolist()) if t >= 0)
    keywords = ctfidf_keywords(texts, labels, cfg.n_keywords)
    sizes = {t: int((labels == t).sum()) for t in sorted(set(labels.tolist()))}
    centroids = {}
    for t in topic_ids:
        c = np.asarray(vectors)[labels == t].mean(axis=0)
        centroids[t] = c / (np.linalg.norm(c) or 1.0)
    return TopicResult(labels, probs, keywords, sizes, centroids)


DENSE_MST_MAX = 25000      # hdbscan_dense holds an n x n float32 matrix: 2.5 GB at 25k


def hdbscan_dense(z: np.ndarray, min_cluster_size: int, min_samples: int | None = None,
                  block: int = 2048) -> tuple[np.ndarray, np.ndarray]:
    """HDBSCAN (Euclidean, ``eom``) of ``z`` with an exact minimum spanning tree built by Prim's
    algorithm over a dense matrix of mutual reachability distances (BLAS products in float32),
    then the ``hdbscan`` package's own condensing and cluster selection. Same clusters as
    ``hdbscan.HDBSCAN(algorithm="prims_kdtree")`` (ARI 1.000, identical labels at 5k and 20k),
    at 20k x 32 dims ~10 CPU s against 20.6 for that and 42 for the default Boruvka k-d tree,
    which is slow at 32 dimensions. Returns (labels int64, probabilities float32)."""
    import faiss   # costly: faiss
    from hdbscan._hdbscan_linkage import label   # costly: hdbscan
    from hdbscan.hdbscan_ import _tree_to_labels   # costly: hdbscan
    z = np.ascontiguousarray(z, dtype=np.float32)
    n = len(z)
    m = max(1, min(n - 1, min_samples or min_cluster_size))
    # squared core distance: the m-th nearest other point (k = m + 1 counts the point itself, as hdbscan does)
    core2, _ = faiss.knn(z, z, m + 1)
    core2 = np.maximum(core2[:, m], 0).astype(np.float32)
    sq = np.einsum("ij,ij->i", z, z)
    mr = np.empty((n, n), dtype=np.float32)          # squared mutual reachability
    for a in range(0, n, block):
        b = min(n, a + block)
        blk = mr[a:b]
        np.matmul(z[a:b], z.T, out=blk)
        blk *= -2
        blk += sq[None, :]
        blk += sq[a:b, None]
        np.maximum(blk, core2[None, :], out=blk)
        np.maximum(blk, core2[a:b, None], out=blk)
    best = np.full(n, np.inf, dtype=np.float32)
    parent = np.zeros(n, dtype=np.int64)
    pen = np.zeros(n, dtype=np.float32)              # inf once a point is in the tree
    row = np.empty(n, dtype=np.float32)
    upd = np.empty(n, dtype=bool)
    mst = np.empty((n - 1, 3))
    inf = np.float32(np.inf)
    cur = 0
    for it in range(n - 1):
        pen[cur] = inf
        best[cur] = inf
        np.maximum(mr[cur], pen, out=row)
        np.less(row, best, out=upd)
        np.minimum(row, best, out=best)
        parent[upd] = cur
        j = int(np.argmin(best))
        mst[it] = (parent[j], j, best[j])
        cur = j
    del mr
    mst[:, 2] = np.sqrt(np.maximum(mst[:, 2], 0))
    mst = mst[np.argsort(mst[:, 2], kind="stable")]
    labels, probs, *_ = _tree_to_labels(z, label(mst), min_cluster_size)
    return np.asarray(labels, dtype=np.int64), np.asarray(probs, dtype=np.float32)


def _sample_index(zs: np.ndarray, nprobe: int):
    """Nearest-sample-point search in the PCA space: FAISS IVF (L2) over the sample, ``sqrt(m)``
    cells, ``nprobe`` probed (0 = exact flat search). At 100k x 20k x 32 dims the flat search
    was 16 of the 42 topic seconds."""
    import faiss   # costly: faiss
    m, dim = zs.shape
    nlist = int(math.sqrt(m))
    if not nprobe or nprobe >= nlist:
        index = faiss.IndexFlatL2(dim)
        index.add(zs)
        return index
    quant = faiss.IndexFlatL2(dim)
    index = faiss.IndexIVFFlat(quant, dim, nlist)
    index.train(zs)
    index.add(zs)
    index.nprobe = nprobe
    index.referenced_objects = [quant]
    return index


def fit_topics_sampled(vectors: np.ndarray, texts: list[str], cfg: TopicConfig) -> TopicResult:
    """HDBSCAN on a seeded sample of ``cfg.sample_size`` chunks; the rest by nearest sample point."""
    import hdbscan   # costly: hdbscan
    from sklearn.decomposition import PCA   # costly: scikit-learn
    n, d = vectors.shape
    rng = np.random.default_rng(cfg.seed)
    sample = np.sort(rng.choice(n, cfg.sample_size, replace=False))
    xs = np.asarray(vectors[sample], dtype=np.float64)
    pca = None
    if cfg.reduce_dims and d > cfg.reduce_dims and len(sample) > cfg.reduce_dims:
        pca = PCA(n_components=cfg.reduce_dims, random_state=cfg.seed).fit(xs)
        zs = pca.transform(xs)
    else:
        zs = xs
    if len(zs) <= DENSE_MST_MAX:
        s_labels, s_probs = hdbscan_dense(zs, cfg.min_cluster_size, cfg.min_samples)
    else:
        model = hdbscan.HDBSCAN(min_cluster_size=cfg.min_cluster_size, min_samples=cfg.min_samples,
                                core_dist_n_jobs=1)
        s_labels = model.fit_predict(zs).astype(np.int64)
        s_probs = np.asarray(model.probabilities_, dtype=np.float32)
    index = _sample_index(np.ascontiguousarray(zs, dtype=np.float32), cfg.assign_nprobe)
    labels = np.empty(n, dtype=np.int64)
    probs = np.empty(n, dtype=np.float32)
    step = 16384

    def assign(a: int) -> None:
        block = np.asarray(vectors[a:a + step], dtype=np.float64)
        z = pca.transform(block) if pca is not None else block
        _, nn = index.search(np.ascontiguousarray(z, dtype=np.float32), 1)
        labels[a:a + step] = s_labels[nn[:, 0]]
        probs[a:a + step] = s_probs[nn[:, 0]]
    from clustering.knn.ivf import default_threads, pool_map   # costly: clustering.knn at CLI start-up
    for _ in pool_map(assign, range(0, n, step), default_threads(None)):
        pass
    labels[sample] = s_labels
    probs[sample] = s_probs
    keywords = ctfidf_keywords([texts[i] for i in sample], s_labels, cfg.n_keywords)
    tids, counts = np.unique(labels, return_counts=True)
    sizes = {int(t): int(c) for t, c in zip(tids, counts)}
    centroids: dict[int, np.ndarray] = {}
    rows = np.flatnonzero(labels >= 0)
    if len(rows):
        from scipy.sparse import csr_matrix   # costly: scipy; topic sums without copying the vectors
        t_ids = np.unique(labels[rows])
        member = csr_matrix((np.ones(len(rows), dtype=np.float32), (np.searchsorted(t_ids, labels[rows]), rows)),
                            shape=(len(t_ids), n))
        sums = np.asarray(member @ vectors, dtype=np.float64)
        for t, c in zip(t_ids.tolist(), sums):
            centroids[int(t)] = c / (np.linalg.norm(c) or 1.0)
    return TopicResult(labels, probs, keywords, sizes, centroids)


_TOKEN = re.compile(r"[^\W\d_][\w'-]{2,}", re.UNICODE)


def ctfidf_keywords(texts: list[str], labels: np.ndarray, n: int = 5) -> dict[int, list[str]]:
    """Class-based TF-IDF (BERTopic style): tf per topic * log(1 + A / f_t)."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS   # costly: scikit-learn
    per_topic: dict[int, Counter] = {}
    for text, lab in zip(texts, labels.tolist()):
        toks = [t for t in (w.lower() for w in _TOKEN.findall(text)) if t not in ENGLISH_STOP_WORDS]
        per_topic.setdefault(int(lab), Counter()).update(toks)
    if not per_topic:
        return {}
    total = Counter()
    for c in per_topic.values():
        total.update(c)
    avg = sum(sum(c.values()) for c in per_topic.values()) / len(per_topic)
    out = {}
    for lab, c in per_topic.items():
        s = sum(c.values()) or 1
        scored = sorted(((cnt / s) * np.log(1 + avg / total[w]), w) for w, cnt in c.items())
        scored.sort(key=lambda p: (-p[0], p[1]))
        out[lab] = [w for _, w in scored[:n]]
    return out


def cluster_topics(clusters: list[list[int]], result: TopicResult, vectors: np.ndarray) -> list[int]:
    """Topic of each conversation cluster: majority non-noise topic, else nearest centroid."""
    out = []
    tids = sorted(result.centroids)
    cent = np.stack([result.centroids[t] for t in tids]) if tids else None
    for members in clusters:
        labs = [int(result.labels[m]) for m in members if result.labels[m] >= 0]
        if labs:
            counts = Counter(labs)
            best = max(counts.values())
            out.append(min(t for t, c in counts.items() if c == best))
        elif cent is not None:
            mean = np.asarray(vectors)[members].mean(axis=0)
            out.append(int(tids[int(np.argmax(cent @ mean))]))
        else:
            out.append(-1)
    return out
