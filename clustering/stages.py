"""Embed and cluster stages: package logic -> run tables. Plain functions (Prefect wraps them)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
import pyarrow as pa

from clustering.embed import EmbeddingCache, batch_size_for, embed_with_cache, encode, model_id, resolve_device
from clustering.greedy import greedy_clusters
from clustering.grouping import knn_ball_groups, random_groups
from clustering.knn import KnnGraph, build_knn, load_knn, save_knn
from clustering.topics import cluster_topics, fit_topics
from storage.schemas import CHUNK_TOPICS, CLUSTERS, TOPICS, embeddings_schema
from storage.store import RunStore

Progress = Callable[[str, int, int], None]


def default_cache_dir(store: RunStore, cfg) -> Path:
    if cfg.embed.cache_dir:
        return Path(cfg.embed.cache_dir)
    return Path(store.path).parent / ".cache" / "embeddings"


def embed(store: RunStore, cfg, progress: Progress | None = None) -> dict[str, Any]:
    """Embed every chunk (normalised), reusing the shared (model, content hash) cache."""
    t = store.read_table("chunks", columns=["chunk_id", "text", "content_hash"])
    ids, texts, hashes = (t.column(c).to_pylist() for c in ("chunk_id", "text", "content_hash"))
    cache = EmbeddingCache(default_cache_dir(store, cfg))
    total = len(texts)
    cb = (lambda n: progress("embed", n, total)) if progress else None
    device = resolve_device(getattr(cfg.embed, "device", "auto"))
    vecs, n_new = embed_with_cache(texts, hashes, cache, model=cfg.embed.model,
                                   batch_size=batch_size_for(device, cfg.embed.batch_size), progress=cb,
                                   device=device)
    dim = int(vecs.shape[1])
    mid = model_id(cfg.embed.model)
    table = pa.table({
        "chunk_id": pa.array(ids, pa.string()),
        "content_hash": pa.array(hashes, pa.string()),
        "model_id": pa.array([mid] * len(ids), pa.string()),
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(vecs.ravel(), pa.float32()), dim),
    })
    store.write_table("embeddings", table, embeddings_schema(dim))
    return {"chunks": total, "newly_embedded": n_new, "from_cache": total - n_new, "dim": dim, "model": mid,
            "device": device}


def embed_plan(store: RunStore, cfg, batch_chunks: int) -> list[dict[str, list[str]]]:
    """Batches of the chunks the embedding cache lacks, for parallel ``embed_batch`` calls.

    Unique content hashes in chunk order (as ``embed`` would encode them), split every
    ``batch_chunks``; each batch is ``{"hashes": [...], "texts": [...]}``. With
    ``batch_chunks`` a multiple of ``8 * embed.batch_size`` the encoder sees the same blocks
    as the single-process ``embed`` and the vectors are bit-identical.
    """
    t = store.read_table("chunks", columns=["text", "content_hash"])
    texts, hashes = t.column("text").to_pylist(), t.column("content_hash").to_pylist()
    found = EmbeddingCache(default_cache_dir(store, cfg)).lookup(model_id(cfg.embed.model), hashes)
    seen: set[str] = set(found)
    todo_h: list[str] = []
    todo_t: list[str] = []
    for text, h in zip(texts, hashes):
        if h not in seen:
            seen.add(h)
            todo_h.append(h)
            todo_t.append(text)
    return [{"hashes": todo_h[i:i + batch_chunks], "texts": todo_t[i:i + batch_chunks]}
            for i in range(0, len(todo_h), batch_chunks)]


def embed_batch(texts: list[str], cfg) -> np.ndarray:
    """Vectors of one batch (any process: loads the encoder once per process)."""
    device = resolve_device(getattr(cfg.embed, "device", "auto"))
    return encode(texts, model=cfg.embed.model, batch_size=batch_size_for(device, cfg.embed.batch_size),
                  device=device)


def embed_store_batch(store: RunStore, cfg, hashes: list[str], vectors: np.ndarray) -> None:
    """Add one batch's vectors to the shared embedding cache (``embed`` then reads them back)."""
    EmbeddingCache(default_cache_dir(store, cfg)).add(model_id(cfg.embed.model), hashes, vectors)


def read_embeddings(store: RunStore) -> tuple[list[str], np.ndarray]:
    t = store.read_table("embeddings", columns=["chunk_id", "vector"])
    ids = t.column("chunk_id").to_pylist()
    if len(ids) == 0:
        return ids, np.zeros((0, 0), dtype=np.float32)
    return ids, vectors_of(t.column("vector"))


def vectors_of(col: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """[N, dim] float32 view of a fixed-size-list column: zero-copy for a single chunk
    without nulls (the values buffer itself), one copy when the column has several chunks."""
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    chunks = [ch for ch in chunks if len(ch)]
    if not chunks:
        return np.zeros((0, 0), dtype=np.float32)
    dim = chunks[0].type.list_size

    def view(ch: pa.FixedSizeListArray) -> np.ndarray:
        if ch.null_count:
            raise ValueError("embeddings table has null vectors; re-run `mtr embed`")
        vals = ch.values.slice(ch.offset * dim, len(ch) * dim)
        arr = vals.to_numpy(zero_copy_only=vals.type == pa.float32() and vals.null_count == 0)
        return arr.astype(np.float32, copy=False).reshape(len(ch), dim)

    if len(chunks) == 1:
        return view(chunks[0])
    out = np.empty((sum(len(ch) for ch in chunks), dim), dtype=np.float32)
    r = 0
    for ch in chunks:
        out[r:r + len(ch)] = view(ch)
        r += len(ch)
    return out


def knn_graph(store: RunStore, vecs: np.ndarray, c, progress: Progress | None = None) -> KnnGraph:
    """The kNN graph of the run's embeddings: reloaded (memory-mapped) from
    ``<run>/cache/knn`` when it was built from the same embeddings with the same kNN
    settings, else built (exact / FAISS IVF / FAISS GPU, see ``clustering.knn``) and saved."""
    n = len(vecs)
    directory = store.local_dir("cache", "knn")
    key = {"embeddings_sha256": store.table_stats("embeddings")["sha256"], "n": n, "k": c.k,
           "exact_max": c.exact_max, "nlist": c.nlist, "nprobe": c.nprobe, "seed": c.seed, "device": c.device}
    graph = load_knn(directory, key)
    if graph is not None:
        return graph
    cb = (lambda k: progress("knn", k, n)) if progress else None
    graph = build_knn(vecs, k=c.k, exact_max=c.exact_max, nlist=c.nlist, nprobe=c.nprobe, seed=c.seed,
                      device=c.device, max_block_bytes=c.max_block_mb * 1024 * 1024, progress=cb)
    save_knn(directory, graph, key)
    return graph


def cluster(store: RunStore, cfg, progress: Progress | None = None) -> dict[str, Any]:
    """kNN graph -> greedy traversal clusters (+ repair) -> HDBSCAN topics."""
    ids, vecs = read_embeddings(store)
    n = len(ids)
    texts_by_id = dict(zip(*(store.read_table("chunks", columns=["chunk_id", "text"]).column(c).to_pylist()
                             for c in ("chunk_id", "text"))))
    missing = [i for i in ids if i not in texts_by_id]
    if missing:
        raise ValueError(f"{len(missing)} embedded chunks are not in the chunks table (e.g. {missing[0]}); "
                         "re-run `mtr embed` for this run")
    c = cfg.cluster
    graph = knn_graph(store, vecs, c, progress)
    if c.grouping == "random":
        res = random_groups(n, c.size, seed=c.seed)
    elif c.grouping == "knn-ball":
        res = knn_ball_groups(graph.neighbors, c.size, min_size=c.min_size, max_size=c.max_size, seed=c.seed)
    else:
        res = greedy_clusters(graph.neighbors, size=c.size, min_size=c.min_size, max_size=c.max_size, seed=c.seed,
                              vectors=vecs)
    texts = [texts_by_id[i] for i in ids]
    topics = fit_topics(vecs, texts, cfg.topics)
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
              "noise_chunks": int(topics.sizes.get(-1, 0)),
              "knn_method": graph.method, "knn_reused": graph.loaded, "grouping": c.grouping}
    return report
