"""Topics: HDBSCAN (the ``hdbscan`` package) over chunk embeddings, with c-TF-IDF labels.

Up to ``sample_size`` chunks: HDBSCAN on every chunk, embeddings first reduced with PCA (default
32 dimensions) because tree-based HDBSCAN is slow at 384 dimensions (see stack.md: 51 s -> 6 s on
10k points). Noise points keep topic -1 at chunk level; a conversation cluster gets the majority
topic of its chunks, or, when all of them are noise, the topic whose centroid is nearest to the
cluster's mean. Later stages use cluster topics to pick *far* clusters for hard topic switches.

Scale, above ``sample_size`` chunks (full HDBSCAN is quadratic in practice: 950 s at 100k on 2
cores), ``method``:

* ``centroids`` (default): HDBSCAN on the conversation clusters' centroids, each a point weighted
  by its chunk count (:func:`fit_topics_centroids`, :func:`clustering.weighted_hdbscan.hdbscan_knn`: cosine, minimum spanning
  tree over a kNN graph, ``hdbscan``'s condensing with weights as sizes); every chunk takes its
  cluster's topic. The number of points follows the corpus (N / C), so topics of a few clusters
  are found at any N.
* ``sample``: PCA and HDBSCAN on a seeded sample of ``sample_size`` chunks; every other chunk takes
  the topic (and probability) of its nearest sample point in the PCA space (FAISS IVF L2; noise
  when that point is noise); keywords come from the sample. The sample's HDBSCAN is
  :func:`hdbscan_dense` (exact MST by Prim's algorithm on a dense mutual-reachability matrix; ~4x
  less CPU than the package's Boruvka k-d tree at 32 dimensions; `fast-hdbscan` and sklearn's
  HDBSCAN were measured slower). A fixed sample misses every topic under about ``min_cluster_size
  * N / sample_size`` chunks: 0 topics at 1M chunks in topics of 200.

Agreement with full HDBSCAN, and with planted topics, is measured by ``benchmarks/clustering.py``
(``--topics-ari``, ``--topics-compare``); see docs/concepts/clustering.md.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Literal, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from clustering.weighted_hdbscan import hdbscan_knn


class TopicConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    min_cluster_size: int = Field(10, ge=2, description="smallest topic, in chunks (method centroids: the chunk "
                                                        "weight of two or more clusters)")
    min_samples: int | None = Field(None, ge=1, description="HDBSCAN's core distance: reach of this many other "
                                                            "chunks (default min_cluster_size)")
    reduce_dims: int | None = Field(32, ge=2, description="PCA dimensions before HDBSCAN on chunks (not "
                                                           "for topics.method centroids: cosine in full); "
                                                           "None = no reduction")
    n_keywords: int = Field(5, ge=1)
    seed: int = 0
    sample_size: int = Field(20000, ge=100, description="at or below this many chunks: HDBSCAN on every chunk; above "
                                                        "it, see topics.method")
    method: Literal["centroids", "sample"] = Field(
        "centroids", description="above sample_size chunks: centroids = HDBSCAN on the conversation clusters' "
                                 "centroids, each weighted by its chunk count, every chunk taking its cluster's topic "
                                 "(the sample method with random grouping); sample = HDBSCAN on a seeded sample of "
                                 "sample_size chunks, the rest by nearest sample point (finds no topic much smaller "
                                 "than min_cluster_size x N / sample_size chunks)")
    assign_nprobe: int = Field(16, ge=0, description="sampled topics: IVF cells searched for the nearest sample "
                                                     "point (of sqrt(sample_size)); 0 = exact search")


@dataclass
class TopicResult:
    labels: np.ndarray            # topic per chunk (-1 = noise)
    probabilities: np.ndarray
    keywords: dict[int, list[str]]
    sizes: dict[int, int]
    centroids: dict[int, np.ndarray]
    method: str = "full"          # full | sample | centroids

    @property
    def coverage(self) -> float:
        """Share of the chunks with a topic (not noise)."""
        return float((self.labels >= 0).mean()) if len(self.labels) else 0.0


COVERAGE_WARN = 0.5   # topics covering less than this share of the chunks: a warning (topics_warning)


def coverage_warning(result: TopicResult, cfg: TopicConfig) -> str | None:
    """The warning when topics cover less than ``COVERAGE_WARN`` of the chunks (None otherwise)."""
    if not len(result.labels) or result.coverage >= COVERAGE_WARN:
        return None
    n_topics = len([t for t in result.sizes if t >= 0])
    hint = ("topics.method = 'centroids' (with greedy or knn-ball grouping) or a larger topics.sample_size"
            if result.method == "sample" else "a smaller topics.min_cluster_size")
    return (f"topics cover {result.coverage:.1%} of the {len(result.labels)} chunks ({n_topics} topics, method "
            f"{result.method}, min_cluster_size {cfg.min_cluster_size}): the clusters of the others take the "
            f"nearest topic, and with no topic at all synthesis makes no far topic switches; try {hint}")


def fit_topics(vectors: np.ndarray, texts: Sequence[str], cfg: TopicConfig | None = None,
               clusters: list[list[int]] | None = None) -> TopicResult:
    """Topics of the chunks: full HDBSCAN up to ``cfg.sample_size`` chunks; above it, HDBSCAN on the
    ``clusters``' weighted centroids (``cfg.method`` centroids, when ``clusters`` are given) or on a sample."""
    cfg = cfg or TopicConfig()
    n = len(vectors)
    if n > cfg.sample_size:
        if cfg.method == "centroids" and clusters is not None:
            return fit_topics_centroids(vectors, texts, clusters, cfg)
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
    return _result(vectors, labels, probs, keywords, "sample")


def _result(vectors: np.ndarray, labels: np.ndarray, probs: np.ndarray, keywords: dict[int, list[str]],
            method: str) -> TopicResult:
    """Sizes and topic centroids (normalised mean of the members) of chunk ``labels``."""
    n = len(labels)
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
    return TopicResult(labels, probs, keywords, sizes, centroids, method)


def fit_topics_centroids(vectors: np.ndarray, texts: Sequence[str], clusters: list[list[int]],
                         cfg: TopicConfig) -> TopicResult:
    """HDBSCAN on the clusters' centroids (normalised means of their chunks, cosine), each a point
    weighted by its chunk count (:func:`hdbscan_knn`); every chunk takes its cluster's topic and
    probability (a chunk in no cluster is noise), except outliers (:func:`_outliers_to_noise`).
    Keywords come from up to ``max(10, sample_size / (topics + 1))`` seeded chunks of each topic
    (and of the noise), so every topic gets some."""
    from scipy.sparse import csr_matrix   # costly: scipy
    n = len(vectors)
    sizes = np.fromiter((len(m) for m in clusters), dtype=np.int64, count=len(clusters))
    members = np.fromiter((i for m in clusters for i in m), dtype=np.int64, count=int(sizes.sum()))
    owner = np.repeat(np.arange(len(clusters)), sizes)
    member = csr_matrix((np.ones(len(members), dtype=np.float32), (owner, members)), shape=(len(clusters), n))
    cent = np.asarray(member @ vectors, dtype=np.float32)
    cent /= np.maximum(np.linalg.norm(cent, axis=1, keepdims=True), 1e-12)
    c_labels, c_probs = hdbscan_knn(cent, sizes, cfg.min_cluster_size, cfg.min_samples, seed=cfg.seed)
    labels = np.full(n, -1, dtype=np.int64)
    probs = np.zeros(n, dtype=np.float32)
    labels[members] = c_labels[owner]
    probs[members] = c_probs[owner]
    _outliers_to_noise(vectors, labels, probs)
    # keywords: a seeded share of each topic's chunks (a uniform sample would leave small topics without)
    order = np.random.default_rng(cfg.seed).permutation(n)
    lab = labels[order]
    by_topic = np.argsort(lab, kind="stable")
    starts = np.searchsorted(lab[by_topic], lab[by_topic], side="left")
    per = max(10, cfg.sample_size // (len(np.unique(lab)) + 1))
    rows = np.sort(order[by_topic[np.arange(n) - starts < per]])
    keywords = ctfidf_keywords([texts[int(i)] for i in rows], labels[rows], cfg.n_keywords)
    return _result(vectors, labels, probs, keywords, "centroids")


OUTLIER_Z = 5.0   # a chunk whose cosine to its topic's centroid is this many robust sd below the topic's median: noise


def _outliers_to_noise(vectors: np.ndarray, labels: np.ndarray, probs: np.ndarray) -> None:
    """Chunks far from their topic: cosine to the topic's centroid below the topic's median by more
    than ``OUTLIER_Z`` x 1.4826 x MAD (the median absolute deviation; at least 0.02 cosine) become
    noise, in place. A greedy cluster's chain can hold a chunk of another topic or of none (on the
    benchmark's hard data, 92% of the planted background noise rode in topic clusters: ARI 0.62
    against the planted topics; with this rule 0.98, 0.3% of topic chunks turned noise)."""
    from scipy.sparse import csr_matrix   # costly: scipy
    rows = np.flatnonzero(labels >= 0)
    if not len(rows):
        return
    t_ids, t_of = np.unique(labels[rows], return_inverse=True)
    member = csr_matrix((np.ones(len(rows), dtype=np.float32), (t_of, rows)), shape=(len(t_ids), len(labels)))
    cent = np.asarray(member @ vectors, dtype=np.float32)
    cent /= np.maximum(np.linalg.norm(cent, axis=1, keepdims=True), 1e-12)
    cos = np.empty(len(rows), dtype=np.float32)
    for a in range(0, len(rows), 65536):
        r = rows[a:a + 65536]
        cos[a:a + 65536] = np.einsum("ij,ij->i", np.asarray(vectors[r], dtype=np.float32), cent[t_of[a:a + 65536]])
    counts = np.bincount(t_of)
    lo, hi = np.cumsum(counts) - counts + (counts - 1) // 2, np.cumsum(counts) - counts + counts // 2

    def median(v: np.ndarray) -> np.ndarray:   # per topic
        s = v[np.lexsort((v, t_of))]
        return 0.5 * (s[lo] + s[hi])
    med = median(cos)
    dev = np.abs(cos - med[t_of])
    scale = np.maximum(1.4826 * median(dev), 0.02)
    out = rows[cos < med[t_of] - OUTLIER_Z * scale[t_of]]
    labels[out] = -1
    probs[out] = 0.0


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
