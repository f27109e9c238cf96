"""Embed and cluster stages: package logic -> run tables. Plain functions (Prefect wraps them)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import clustering.embed as emb
from clustering.embed import EmbeddingCache, batch_size_for, encode, model_id, resolve_device
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


EMBED_BATCH_ROWS = 8192   # chunks read per batch by the embed stage (one row group in memory)


def embed(store: RunStore, cfg, progress: Progress | None = None, batch_rows: int = EMBED_BATCH_ROWS
          ) -> dict[str, Any]:
    """Embed every chunk (normalised), reusing the shared (model, content hash) cache.

    Streams the ``chunks`` table in two passes, ``batch_rows`` rows at a time:

    1. the unique content hashes the cache lacks (in chunk order) are encoded in blocks of
       ``8 * batch_size`` (the blocks :func:`clustering.embed.embed_with_cache` uses, so the
       vectors are the same) and each block is committed to the cache before the next: a
       kill loses at most the block in progress, and a rerun encodes only what is missing;
       this call's parts are then merged into one;
    2. the vectors are gathered back from the cache (through its hash index, decoding only
       the row groups needed) and written to ``embeddings`` batch by batch.

    Memory holds one batch of chunk texts, one block of pending texts and the cache index
    (about 16 bytes per cached vector), never the corpus text or every vector at once.
    """
    cache = EmbeddingCache(default_cache_dir(store, cfg))
    total = store.num_rows("chunks")
    cb = (lambda n: progress("embed", n, total)) if progress else None
    device = resolve_device(getattr(cfg.embed, "device", "auto"))
    bs = batch_size_for(device, cfg.embed.batch_size)
    mid = model_id(cfg.embed.model)
    step = bs * 8
    n_new = 0
    parts: list[Path | None] = []
    todo_h: list[str] = []
    todo_t: list[str] = []
    todo: set[str] = set()

    def encode_block(n: int) -> None:
        nonlocal todo_h, todo_t, n_new
        hs, ts = todo_h[:n], todo_t[:n]
        vecs = emb.encode(ts, model=cfg.embed.model, batch_size=bs, progress=cb, device=device)
        parts.append(cache.add(mid, hs, vecs))
        n_new += len(hs)
        todo_h, todo_t = todo_h[n:], todo_t[n:]
        todo.difference_update(hs)

    rows = max(1, batch_rows)
    for b in store.iter_batches("chunks", columns=["text", "content_hash"], batch_size=rows):   # pass 1
        hashes = b.column("content_hash").to_pylist()
        uniq = [h for h in dict.fromkeys(hashes) if h not in todo]
        have = dict(zip(uniq, cache.contains(mid, uniq).tolist()))
        queued = 0
        for i, h in enumerate(hashes):
            if h not in todo and not have.get(h, True):
                todo.add(h)
                todo_h.append(h)
                todo_t.append(b.column("text")[i].as_py())
                queued += 1
        if cb and len(hashes) - queued:
            cb(len(hashes) - queued)
        while len(todo_h) >= step:
            encode_block(step)
    if todo_h:
        encode_block(len(todo_h))
    cache.compact(mid, parts)

    dim: int | None = None
    with store.table_writer("embeddings", None) as out:   # pass 2
        for b in store.iter_batches("chunks", columns=["chunk_id", "content_hash"], batch_size=rows):
            hashes = b.column("content_hash").to_pylist()
            found, vecs = cache.gather(mid, hashes)
            if not found.all():   # gone from the cache since pass 1 (removed by hand): encode them now
                miss = np.flatnonzero(~found)
                new = emb.encode(_texts_of(store, b.column("chunk_id"), miss), model=cfg.embed.model,
                                 batch_size=bs, device=device)
                if vecs is None:
                    vecs = np.zeros((len(hashes), new.shape[1]), dtype=np.float32)
                vecs[miss] = new
                cache.add(mid, [hashes[i] for i in miss], new)
                n_new += len(miss)
            if dim is None:
                dim = int(vecs.shape[1])
                out.schema = embeddings_schema(dim)
            out.write(pa.table({
                "chunk_id": b.column("chunk_id"),
                "content_hash": b.column("content_hash"),
                "model_id": pa.array([mid] * len(hashes), pa.string()),
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(vecs.ravel(), pa.float32()), dim),
            }))
        if dim is None:
            dim = int(emb.load_encoder(cfg.embed.model).get_embedding_dimension())
            out.schema = embeddings_schema(dim)
    return {"chunks": total, "newly_embedded": n_new, "from_cache": total - n_new, "dim": dim, "model": mid,
            "device": device}


def _texts_of(store: RunStore, ids: pa.Array, rows: np.ndarray) -> list[str]:
    """Texts of the chunks ``ids[rows]`` (the rare fallback of ``embed``'s second pass)."""
    want = ids.take(pa.array(rows)).to_pylist()
    got: dict[str, str] = {}
    for b in store.iter_batches("chunks", columns=["chunk_id", "text"]):
        mask = pc.is_in(b.column("chunk_id"), value_set=pa.array(want, pa.string()))
        sel = b.filter(mask)
        got.update(zip(sel.column("chunk_id").to_pylist(), sel.column("text").to_pylist()))
    return [got[i] for i in want]


def embed_plan(store: RunStore, cfg, batch_chunks: int) -> list[dict[str, list[str]]]:
    """Batches of the chunks the embedding cache lacks, for parallel ``embed_batch`` calls.

    Unique content hashes in chunk order (as ``embed`` would encode them), split every
    ``batch_chunks``; each batch is ``{"hashes": [...], "texts": [...]}``. With
    ``batch_chunks`` a multiple of ``8 * embed.batch_size`` the encoder sees the same blocks
    as the single-process ``embed`` and the vectors are bit-identical. Streams the chunks
    table; only the texts to encode are kept.
    """
    cache = EmbeddingCache(default_cache_dir(store, cfg))
    mid = model_id(cfg.embed.model)
    seen: set[str] = set()
    todo_h: list[str] = []
    todo_t: list[str] = []
    for b in store.iter_batches("chunks", columns=["text", "content_hash"], batch_size=EMBED_BATCH_ROWS):
        hashes = b.column("content_hash").to_pylist()
        uniq = [h for h in dict.fromkeys(hashes) if h not in seen]
        have = dict(zip(uniq, cache.contains(mid, uniq).tolist()))
        for i, h in enumerate(hashes):
            if h not in seen and not have.get(h, True):
                seen.add(h)
                todo_h.append(h)
                todo_t.append(b.column("text")[i].as_py())
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
    """Chunk ids and the [N, dim] float32 vectors: zero-copy from a single-row-group table,
    else filled row group by row group into one array (the vectors are held once)."""
    files = store.table_files("embeddings")
    if len(files) == 1:
        pf = pq.ParquetFile(files[0], filesystem=store.fs)
        if pf.metadata.num_row_groups > 1:
            n = pf.metadata.num_rows
            ids: list[str] = []
            out: np.ndarray | None = None
            r = 0
            for b in pf.iter_batches(batch_size=65536, columns=["chunk_id", "vector"]):
                ids += b.column("chunk_id").to_pylist()
                v = vectors_of(b.column("vector"))
                if out is None:
                    out = np.empty((n, v.shape[1]), dtype=np.float32)
                out[r:r + len(v)] = v
                r += len(v)
            return ids, out if out is not None else np.zeros((0, 0), dtype=np.float32)
    t = store.read_table("embeddings", columns=["chunk_id", "vector"])
    ids = t.column("chunk_id").to_pylist()
    if len(ids) == 0:
        return ids, np.zeros((0, 0), dtype=np.float32)
    return ids, vectors_of(t.column("vector"))


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
    if graph.method == "ivf":   # the IVF's settings; with nprobe auto, the calibrated nprobe and its sample recall
        report.update(knn_nlist=graph.params.get("nlist"), knn_nprobe=graph.params.get("nprobe"))
        if graph.params.get("nprobe_auto"):
            report.update(knn_target_recall=graph.params.get("target_recall"),
                          knn_sample_recall=graph.params.get("sample_recall"),
                          knn_recall_sample_size=graph.params.get("sample_size"))
    return report
