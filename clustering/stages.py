"""The cluster stage: package logic -> run tables. Plain functions (Prefect wraps them); the embed
stage that writes its input is :mod:`embedding.stage`."""
from __future__ import annotations

import logging
from typing import Any, Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from clustering.greedy import greedy_clusters
from clustering.grouping import knn_ball_groups, random_groups
from clustering.knn import KnnGraph, build_knn, load_knn, save_knn
from clustering.topics import cluster_topics, coverage_warning, fit_topics
from embedding.vectors import read_embeddings
from storage.schemas import CHUNK_TOPICS, CLUSTERS, TOPICS
from storage.store import RunStore

Progress = Callable[[str, int, int], None]
log = logging.getLogger("clustering.topics")


class TextColumn(Sequence[str]):
    """A read-only sequence of ``str`` over an Arrow string column: the chunk texts stay in
    Arrow memory (one copy, no Python objects) and are materialised one at a time."""

    def __init__(self, arr: pa.Array | pa.ChunkedArray) -> None:
        self._arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr

    def __len__(self) -> int:
        return len(self._arr)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self._arr[j].as_py() for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self._arr[i].as_py()

    def __iter__(self):
        step = 4096
        for a in range(0, len(self._arr), step):
            yield from self._arr.slice(a, step).to_pylist()


def chunk_texts(store: RunStore, ids: list[str]) -> TextColumn:
    """The texts of the chunks ``ids`` (in that order), read from the ``chunks`` table as one
    Arrow column; raises when an id is not in the table."""
    t = store.read_table("chunks", columns=["chunk_id", "text"])
    cid = t.column("chunk_id").combine_chunks()
    want = pa.array(ids, pa.string())
    if not want.equals(cid):   # the usual case (embeddings in chunk order) needs no join
        pos = pc.index_in(want, value_set=cid)
        if pos.null_count:
            missing = want.filter(pc.is_null(pos))
            raise ValueError(f"{len(missing)} embedded chunks are not in the chunks table "
                             f"(e.g. {missing[0].as_py()}); re-run `mtr embed` for this run")
        return TextColumn(t.column("text").take(pos))
    return TextColumn(t.column("text"))


def knn_graph(store: RunStore, vecs: np.ndarray, c, progress: Progress | None = None) -> KnnGraph:
    """The kNN graph of the run's embeddings: reloaded (memory-mapped) from
    ``<run>/cache/knn`` when it was built from the same embeddings with the same kNN
    settings, else built (exact / FAISS IVF / exact on the GPU, see ``clustering.knn``) and saved."""
    n = len(vecs)
    directory = store.local_dir("cache", "knn")
    key = {"embeddings_sha256": store.table_stats("embeddings")["sha256"], "n": n, "k": c.k,
           "exact_max": c.exact_max, "nlist": c.nlist, "nprobe": c.nprobe, "seed": c.seed, "device": c.device}
    if c.nprobe == "auto":
        key["target_recall"] = c.target_recall
    graph = load_knn(directory, key)
    if graph is not None:
        return graph
    cb = (lambda k: progress("knn", k, n)) if progress else None
    graph = build_knn(vecs, k=c.k, exact_max=c.exact_max, nlist=c.nlist, nprobe=c.nprobe, seed=c.seed,
                      device=c.device, max_block_bytes=c.max_block_mb * 1024 * 1024, progress=cb,
                      target_recall=c.target_recall)
    save_knn(directory, graph, key)
    return graph


def cluster(store: RunStore, cfg, progress: Progress | None = None) -> dict[str, Any]:
    """kNN graph -> greedy traversal clusters (+ repair) -> HDBSCAN topics."""
    ids, vecs = read_embeddings(store)
    n = len(ids)
    texts = chunk_texts(store, ids)
    c = cfg.cluster
    graph = knn_graph(store, vecs, c, progress)
    if c.grouping == "random":
        res = random_groups(n, c.size, seed=c.seed)
    elif c.grouping == "knn-ball":
        res = knn_ball_groups(graph.neighbors, c.size, min_size=c.min_size, max_size=c.max_size, seed=c.seed)
    else:
        res = greedy_clusters(graph.neighbors, size=c.size, min_size=c.min_size, max_size=c.max_size, seed=c.seed,
                              vectors=vecs)
    # random groups are no neighbourhoods: their centroids carry no topic, so they take the sampled topics
    topics = fit_topics(vecs, texts, cfg.topics, clusters=None if c.grouping == "random" else res.clusters)
    ctopics = cluster_topics(res.clusters, topics, vecs)
    rows = {"cluster_id": [], "position": [], "chunk_id": [], "topic_id": []}
    for cid, (members, tid) in enumerate(zip(res.clusters, ctopics)):
        for pos, m in enumerate(members):
            rows["cluster_id"].append(cid)
            rows["position"].append(pos)
            rows["chunk_id"].append(ids[m])
            rows["topic_id"].append(tid)
    store.write_table("clusters", pa.table(rows, schema=CLUSTERS))
    store.write_table("chunk_topics", pa.table({"chunk_id": ids, "topic_id": topics.labels.astype(np.int32),
                                                "probability": topics.probabilities}, schema=CHUNK_TOPICS))
    tids = sorted(topics.sizes)
    store.write_table("topics", pa.table({
        "topic_id": pa.array(tids, pa.int32()),
        "size": pa.array([topics.sizes[t] for t in tids], pa.int64()),
        "label": [", ".join(topics.keywords.get(t, [])[:3]) if t >= 0 else "(noise)" for t in tids],
        "keywords": [topics.keywords.get(t, []) for t in tids]}, schema=TOPICS))
    sizes = res.sizes()
    assigned = res.assignment(n)
    if n and (assigned < 0).any():  # invariant: never expected
        raise RuntimeError("clustering lost chunks; this is a bug")
    report = {"chunks": n, "clusters": len(res.clusters),
              "size_min": int(sizes.min()) if n else 0, "size_max": int(sizes.max()) if n else 0,
              "size_mean": round(float(sizes.mean()), 2) if n else 0.0,
              "short_clusters": len(res.short_clusters), "moved_by_repair": res.moved,
              "rewalked": res.rewalked, "topics": len([t for t in tids if t >= 0]),
              "noise_chunks": int(topics.sizes.get(-1, 0)), "topic_method": topics.method,
              "topic_coverage": round(topics.coverage, 4),
              "knn_method": graph.method, "knn_reused": graph.loaded, "grouping": c.grouping}
    warning = coverage_warning(topics, cfg.topics)
    if warning:   # logged, in the manifest's stage summary and in the summary `mtr cluster` / `mtr build` print
        log.warning("%s", warning)
        report["topics_warning"] = warning
    if graph.method == "ivf":   # the IVF's settings; with nprobe auto, the calibrated nprobe and its sample recall
        report.update(knn_nlist=graph.params.get("nlist"), knn_nprobe=graph.params.get("nprobe"))
        if graph.params.get("nprobe_auto"):
            report.update(knn_target_recall=graph.params.get("target_recall"),
                          knn_sample_recall=graph.params.get("sample_recall"),
                          knn_recall_sample_size=graph.params.get("sample_size"))
    return report
