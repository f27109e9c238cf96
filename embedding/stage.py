"""The spine's embed stage: the run's ``chunks`` table -> its ``embeddings`` table, through the
shared :class:`~embedding.store.EmbeddingCache`; and its batched form (plan, encode a batch in
any process, store it) for parallel workers. Plain functions (Prefect wraps them)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from embedding import encoder
from embedding.encoder import batch_size_for, model_id, resolve_device
from embedding.store import EmbeddingCache
from storage import shared_cache
from storage.schemas import embeddings_schema
from storage.store import RunStore

Progress = Callable[[str, int, int], None]


def default_cache_dir(store: RunStore, cfg) -> Path:
    """The embedding cache's local folder: ``embed.cache_dir``, or for an ``s3://`` one its local mirror with the
    store's parts pulled in (:func:`storage.shared_cache.pull`; :func:`publish_cache` pushes new parts back), else
    the runs root's shared cache."""
    if cfg.embed.cache_dir:
        return shared_cache.pull(cfg.embed.cache_dir)
    return store.shared_local_dir(".cache", "embeddings")


def publish_cache(cfg) -> None:
    """Copy the parts this machine added to an ``s3://`` ``embed.cache_dir`` (no-op for a local cache)."""
    if cfg.embed.cache_dir:
        shared_cache.push(cfg.embed.cache_dir)


EMBED_BATCH_ROWS = 8192   # chunks read per batch by the embed stage (one row group in memory)


def embed(store: RunStore, cfg, progress: Progress | None = None, batch_rows: int = EMBED_BATCH_ROWS
          ) -> dict[str, Any]:
    """Embed every chunk (normalised), reusing the shared (model, content hash) cache.

    Streams the ``chunks`` table in two passes, ``batch_rows`` rows at a time:

    1. the unique content hashes the cache lacks (in chunk order) are encoded in blocks of
       ``8 * batch_size`` (the blocks :func:`embedding.store.embed_with_cache` uses, so the
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
        vecs = encoder.encode(ts, model=cfg.embed.model, batch_size=bs, progress=cb, device=device)
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
    publish_cache(cfg)

    dim: int | None = None
    with store.table_writer("embeddings", None) as out:   # pass 2
        for b in store.iter_batches("chunks", columns=["chunk_id", "content_hash"], batch_size=rows):
            hashes = b.column("content_hash").to_pylist()
            found, vecs = cache.gather(mid, hashes)
            if not found.all():   # gone from the cache since pass 1 (removed by hand): encode them now
                miss = np.flatnonzero(~found)
                new = encoder.encode(_texts_of(store, b.column("chunk_id"), miss), model=cfg.embed.model,
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
            dim = int(encoder.load_encoder(cfg.embed.model).get_embedding_dimension())
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
    return encoder.encode(texts, model=cfg.embed.model, batch_size=batch_size_for(device, cfg.embed.batch_size),
                  device=device)


def embed_store_batch(store: RunStore, cfg, hashes: list[str], vectors: np.ndarray) -> None:
    """Add one batch's vectors to the shared embedding cache (``embed`` then reads them back)."""
    EmbeddingCache(default_cache_dir(store, cfg)).add(model_id(cfg.embed.model), hashes, vectors)
    publish_cache(cfg)
