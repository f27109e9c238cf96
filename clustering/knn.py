"""Cosine k-nearest-neighbour graphs: exact below a size threshold, FAISS IVF above it.

Vectors must be L2-normalised (cosine = inner product). The row itself is excluded from its
own neighbour list; rows are sorted by similarity descending (exact path: ties by the lower index).

* :func:`knn` - exact search in memory-bounded blocks (numpy). Used up to
  ``cluster.exact_max`` vectors, so small corpora (the demo, tests) get exactly the graph
  they always got.
* :func:`ivf_knn` - approximate all-pairs kNN over an IVF partition (inner product):
  a spherical k-means coarse quantizer with ``nlist`` cells (default ``sqrt(nprobe * N)``,
  which balances the quantizer cost ``N * nlist`` against the list scans
  ``N * nprobe * N / nlist``) trained on a seeded sample, every vector in its nearest cell.
  The search is cell-batched: all vectors of a cell are searched at once, with one BLAS
  product (``faiss.knn``), against the ``nprobe`` cells nearest to that cell's centroid.
  Measured against FAISS ``IndexIVFFlat.search`` (each query in its own ``nprobe`` nearest
  cells, one query at a time): 2x less CPU at 300k (52 vs 99 CPU s), recall@10 equal on the
  benchmark's data (1.000) and 0.90 vs 0.93 on data with 10% uniform background noise
  (raise ``nprobe`` there: 16 gives 0.92 and still costs less). Cells run on Python threads
  with FAISS single-threaded (OpenMP spin-waiting burnt CPU on the shared machine).
* :func:`gpu_knn` - exact search with a FAISS GPU flat index (sharded over every GPU), used
  when ``faiss.get_num_gpus() > 0`` and ``cluster.device`` allows it. Untested (no FAISS GPU
  wheel could be taken to the lent GPU machine: it needs CUDA 12 libraries of several 100 MB).
* :func:`torch_knn` - exact search with torch matrix products on the GPU (blocked, sharded when
  the vectors do not fit), used when torch sees CUDA and no FAISS GPU build is installed.
  Measured on an H200 by ``benchmarks/gpu.py`` (README); tested on the CPU against :func:`knn`.
* :func:`build_knn` picks one of them; :func:`save_knn` / :func:`load_knn` persist the graph
  (``neighbors.npy``, memory-mapped on reload) and the trained IVF quantizer with the cell
  of every vector, keyed by the embeddings' content hash and the kNN parameters.
"""
from __future__ import annotations

import json
import logging
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

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


IVF_SEARCH = "cell-batched"   # persisted with the graph; an IVF graph of another search is rebuilt
AUTO_NPROBE_START = 8         # nprobe="auto": first nprobe tried; nlist defaults to auto_nlist(n, 8)
CALIBRATION_SAMPLE = 1000     # nprobe="auto": sampled queries whose exact top-10 is computed
RECALL_AT = 10

log = logging.getLogger(__name__)


def auto_nlist(n: int, nprobe: int) -> int:
    """Cells of the IVF index: ``sqrt(nprobe * n)``, at least ``nprobe`` and at most ``n // 8``."""
    return int(max(nprobe, min(max(1, n // 8), round(math.sqrt(nprobe * n)))))


@dataclass
class IVF:
    """A trained coarse quantizer and the cell of every vector (the inverted lists)."""

    centroids: np.ndarray          # float32 [nlist, d], unit norm
    assign: np.ndarray             # int32 [N], cell of each vector
    nprobe: int
    calibration: Calibration | None = None   # set when nprobe was calibrated ("auto")

    def lists(self) -> list[np.ndarray]:
        order = np.argsort(self.assign, kind="stable").astype(np.int64)
        bounds = np.searchsorted(self.assign[order], np.arange(len(self.centroids) + 1))
        return [order[bounds[i]:bounds[i + 1]] for i in range(len(self.centroids))]

    def faiss_index(self, vectors: np.ndarray):
        """A searchable ``faiss.IndexIVFFlat`` (inner product) over ``vectors`` without
        re-training or re-assigning (for later dense searches over the same corpus)."""
        import faiss
        d = self.centroids.shape[1]
        quant = faiss.IndexFlatIP(d)
        quant.add(np.ascontiguousarray(self.centroids, dtype=np.float32))
        index = faiss.IndexIVFFlat(quant, d, len(self.centroids), faiss.METRIC_INNER_PRODUCT)
        index.is_trained = True
        x = np.ascontiguousarray(vectors, dtype=np.float32)
        cells = np.ascontiguousarray(self.assign, dtype=np.int64)   # keep alive: swig_ptr holds no reference
        index.add_core(len(x), faiss.swig_ptr(x), None, faiss.swig_ptr(cells))
        index.nprobe = self.nprobe
        index.referenced_objects = [quant]   # the SWIG index does not own its quantizer
        return index


def default_threads(threads: int | None) -> int:
    if threads:
        return max(1, int(threads))
    try:
        import faiss
        return max(1, min(os.cpu_count() or 1, faiss.omp_get_max_threads()))
    except Exception:  # noqa: BLE001
        return 1


def pool_map(fn: Callable[[Any], Any], items, threads: int):
    """``map(fn, items)`` over ``threads`` Python threads (FAISS and BLAS release the GIL), each
    running FAISS single-threaded: OpenMP's spinning workers cost CPU on a shared machine
    (measured: 2 OpenMP threads used 14.2 CPU s / 31 s wall where 1 used 8.0 / 17 s)."""
    import faiss

    def one(item):
        faiss.omp_set_num_threads(1)
        return fn(item)
    if threads <= 1:
        prev = faiss.omp_get_max_threads()
        faiss.omp_set_num_threads(1)
        try:
            yield from map(fn, items)
        finally:
            faiss.omp_set_num_threads(prev)
        return
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(threads) as ex:
        yield from ex.map(one, items)


def train_ivf(x: np.ndarray, nlist: int, nprobe: int, seed: int = 0, train_per_cell: int = 32,
              niter: int = 10, threads: int | None = None) -> IVF:
    """Spherical k-means (FAISS) on a seeded sample, then every vector's nearest cell."""
    import faiss
    n, d = x.shape
    threads = default_threads(threads)
    rng = np.random.default_rng(seed)
    m = min(n, nlist * train_per_cell)
    sample = x[np.sort(rng.choice(n, m, replace=False))] if m < n else x
    km = faiss.Kmeans(d, nlist, niter=niter, spherical=True, seed=int(seed) + 1,
                      max_points_per_centroid=train_per_cell, min_points_per_centroid=1, verbose=False)
    km.train(np.ascontiguousarray(sample, dtype=np.float32))
    cent = np.ascontiguousarray(km.centroids, dtype=np.float32)
    quant = faiss.IndexFlatIP(d)
    quant.add(cent)
    assign = np.empty(n, dtype=np.int32)
    step = 16384

    def nearest(s: int) -> None:
        _, a = quant.search(np.ascontiguousarray(x[s:s + step], dtype=np.float32), 1)
        assign[s:s + step] = a[:, 0]
    for _ in pool_map(nearest, range(0, n, step), threads):
        pass
    return IVF(cent, assign, nprobe)


def nprobe_ladder(nlist: int, start: int = AUTO_NPROBE_START) -> list[int]:
    """The nprobe values the calibration tries, in half-octave steps (8, 12, 16, 24, 32, 48,
    64, 96, ...) below ``nlist``, then ``nlist`` itself (every cell: the exact graph)."""
    out: list[int] = []
    p = max(1, start)
    while p < nlist:
        out.append(p)
        half = p + p // 2
        if p >= 2 and half < nlist and half < 2 * p:
            out.append(half)
        p *= 2
    return sorted(set(out)) + [nlist]


@dataclass
class Calibration:
    """What :func:`calibrate_nprobe` measured: the chosen ``nprobe`` and the sample's recall."""

    nprobe: int
    recall: float                  # recall@``at`` of the sampled queries at ``nprobe``
    target: float
    at: int                        # recall@10 (fewer when k < 10)
    sample: np.ndarray             # int64 rows of the sampled queries (sorted)
    curve: list[tuple[int, float]]  # (nprobe, sample recall) for every ladder step tried
    seconds: float

    def params(self) -> dict[str, Any]:
        return {"nprobe_auto": True, "target_recall": self.target, "sample_recall": round(self.recall, 4),
                "sample_size": int(len(self.sample)), "recall_at": self.at,
                "recall_curve": [[p, round(r, 4)] for p, r in self.curve],
                "calibration_s": round(self.seconds, 2)}


def calibration_sample(n: int, size: int = CALIBRATION_SAMPLE, seed: int = 0) -> np.ndarray:
    """The seeded, sorted rows whose exact neighbours calibrate ``nprobe``."""
    rng = np.random.default_rng([int(seed), 0x6e70])   # another stream than the quantizer's sample
    m = min(n, size)
    return np.sort(rng.choice(n, m, replace=False)).astype(np.int64) if m < n else np.arange(n, dtype=np.int64)


def exact_top(x: np.ndarray, rows: np.ndarray, r: int, threads: int | None = None,
              block: int | None = None) -> np.ndarray:
    """Exact top-``r`` neighbours (int64 [len(rows), r], the row itself excluded) of
    ``x[rows]`` against all of ``x``: ``faiss.knn`` (inner products + heap selection,
    memory-bounded in its own blocks) per ``block`` queries (default: the rows split evenly
    over the threads; larger calls run faster) on Python threads."""
    import faiss
    threads = default_threads(threads)
    block = block or max(64, -(-len(rows) // threads))
    out = np.empty((len(rows), r), dtype=np.int64)

    def one(a: int) -> None:
        q = rows[a:a + block]
        _, I = faiss.knn(np.ascontiguousarray(x[q]), x, r + 1, metric=faiss.METRIC_INNER_PRODUCT)
        own = I == q[:, None]     # drop the query itself (or, when it is not among the r+1, the farthest)
        drop = np.where(own.any(axis=1), own.argmax(axis=1), r)
        keep = np.argsort(np.arange(r + 1)[None, :] == drop[:, None], axis=1, kind="stable")[:, :r]
        out[a:a + len(q)] = np.take_along_axis(I, keep, axis=1)
    for _ in pool_map(one, range(0, len(rows), block), threads):
        pass
    return out


def cell_probes(centroids: np.ndarray, cells: np.ndarray, nprobe: int) -> np.ndarray:
    """The ``nprobe`` cells nearest to each of ``cells`` (by centroid inner product, nearest
    first): the cells the cell-batched search reads for the vectors of that cell."""
    import faiss
    quant = faiss.IndexFlatIP(centroids.shape[1])
    quant.add(np.ascontiguousarray(centroids, dtype=np.float32))
    _, probes = quant.search(np.ascontiguousarray(centroids[cells], dtype=np.float32), min(nprobe, len(centroids)))
    return probes


def probes_needed(ivf: IVF, rows: np.ndarray, nbrs: np.ndarray, max_bytes: int = 64 * 1024 * 1024) -> np.ndarray:
    """For each (query row, neighbour) pair: the smallest ``nprobe`` at which the cell-batched
    search reads the neighbour's cell for that query (0 = the query's own cell, always read;
    ``p`` = the neighbour's cell is the p-th nearest to the query cell's centroid)."""
    nlist = len(ivf.centroids)
    qc = np.asarray(ivf.assign[rows], dtype=np.int64)
    nc = np.asarray(ivf.assign[nbrs.ravel()], dtype=np.int64).reshape(nbrs.shape)
    need = np.zeros(nbrs.shape, dtype=np.int64)
    uc, inv = np.unique(qc, return_inverse=True)
    step = max(1, max_bytes // (16 * nlist))
    for a in range(0, len(uc), step):
        cells = uc[a:a + step]
        order = cell_probes(ivf.centroids, cells, nlist)             # [len(cells), nlist], full ordering
        rank = np.full((len(cells), nlist), nlist, dtype=np.int64)   # rank (1-based) of every cell
        np.put_along_axis(rank, order, np.arange(1, nlist + 1)[None, :], axis=1)
        sel = np.flatnonzero((inv >= a) & (inv < a + len(cells)))
        need[sel] = rank[inv[sel, None] - a, nc[sel]]
    need[nc == qc[:, None]] = 0
    return need


def calibrate_nprobe(x: np.ndarray, ivf: IVF, k: int, target: float = 0.95, sample: int = CALIBRATION_SAMPLE,
                     seed: int = 0, threads: int | None = None, start: int = AUTO_NPROBE_START) -> Calibration:
    """The smallest ``nprobe`` of :func:`nprobe_ladder` at which the cell-batched search of
    :func:`ivf_knn` over ``ivf`` reaches recall@10 >= ``target`` on a seeded sample of
    ``sample`` queries (``nlist`` - every cell - when no smaller one does).

    The sample's exact top-10 costs one BLAS pass of the sample against all N vectors. The
    recall at every ``nprobe`` then follows without searching: the search reads, for a query
    of cell ``c``, every vector of ``c`` and of the ``nprobe`` cells nearest to ``c``'s
    centroid and keeps the top ``k`` of them, so an exact top-10 neighbour is in the query's
    top 10 exactly when its cell is among those read (ties at the 10th similarity aside).
    The recall recorded is therefore the recall the graph's rows of these queries have."""
    t0 = time.perf_counter()
    x = np.ascontiguousarray(x, dtype=np.float32)
    n, nlist = len(x), len(ivf.centroids)
    ladder = nprobe_ladder(nlist, start)
    r = max(0, min(RECALL_AT, k, n - 1))
    rows = calibration_sample(n, sample, seed)
    if r == 0 or not len(rows):
        return Calibration(ladder[0], 1.0, target, r, rows, [(ladder[0], 1.0)], time.perf_counter() - t0)
    need = probes_needed(ivf, rows, exact_top(x, rows, r, threads))
    curve: list[tuple[int, float]] = []
    for p in ladder:
        curve.append((p, float((need <= p).mean())))
        if curve[-1][1] >= target:
            break
    p, rec = curve[-1]
    cal = Calibration(p, rec, target, r, rows, curve, time.perf_counter() - t0)
    log.info("IVF nprobe auto: %d of %d cells gives recall@%d %.3f on %d sampled queries (target %.3f; %s) in %.1f s",
             p, nlist, r, rec, len(rows), target, ", ".join(f"{a}: {b:.3f}" for a, b in curve), cal.seconds)
    return cal


def ivf_knn(vectors: np.ndarray, k: int = 100, nlist: int | None = None, nprobe: int | str = 8, seed: int = 0,
            progress: Callable[[int], None] | None = None, ivf: IVF | None = None,
            threads: int | None = None, target_recall: float = 0.95,
            calibration_sample: int = CALIBRATION_SAMPLE) -> tuple[np.ndarray, np.ndarray, IVF]:
    """Approximate kNN (see module docstring). Returns (indices int32 [N, k], sims float32
    [N, k], the IVF); rows with fewer than k candidates are padded with -1 / -inf.

    Cell-batched: the vectors of one cell are searched together, by one matrix product
    (``faiss.knn``, BLAS), against the vectors of the ``nprobe`` cells nearest to that cell's
    centroid (itself included), so every candidate list is read once per cell instead of once
    per query.

    ``nprobe="auto"``: the quantizer is trained once (``nlist`` default ``auto_nlist(N, 8)``),
    then :func:`calibrate_nprobe` picks the smallest ``nprobe`` whose recall@10 on a seeded
    sample of queries reaches ``target_recall``; ``ivf.nprobe`` / ``ivf.calibration`` hold
    the outcome."""
    import faiss
    x = np.ascontiguousarray(vectors, dtype=np.float32)
    n = x.shape[0]
    k = max(0, min(k, n - 1))
    auto = nprobe == "auto"
    if not auto:
        nprobe = max(1, int(nprobe))
    threads = default_threads(threads)
    if ivf is None:
        base = AUTO_NPROBE_START if auto else nprobe
        ivf = train_ivf(x, nlist or auto_nlist(n, base), base, seed=seed, threads=threads)
    if auto:
        cal = calibrate_nprobe(x, ivf, k, target=target_recall, sample=calibration_sample, seed=seed,
                               threads=threads)
        nprobe = ivf.nprobe = cal.nprobe
        ivf.calibration = cal
    lists = ivf.lists()
    probes = cell_probes(ivf.centroids, np.arange(len(lists)), nprobe)
    idx = np.full((n, k), -1, dtype=np.int32)
    sims = np.full((n, k), -np.inf, dtype=np.float32)

    def search(c: int) -> int:
        q = lists[c]
        if not len(q) or not k:
            return len(q)
        cells = [p for p in probes[c].tolist() if p >= 0]
        if c not in cells:
            cells.append(c)
        cand = np.concatenate([lists[p] for p in cells])
        kk = min(k + 1, len(cand))
        D, I = faiss.knn(x[q], x[cand], kk, metric=faiss.METRIC_INNER_PRODUCT)
        I = cand[I]
        # drop the query itself (or, when it is not among the kk, the farthest hit)
        own = I == q[:, None]
        drop = np.where(own.any(axis=1), own.argmax(axis=1), kk - 1)
        keep = np.argsort(np.arange(kk)[None, :] == drop[:, None], axis=1, kind="stable")[:, :min(k, kk - 1)]
        w = keep.shape[1]
        idx[q, :w] = np.take_along_axis(I, keep, axis=1)
        sims[q, :w] = np.take_along_axis(D, keep, axis=1)
        return len(q)
    for done in pool_map(search, range(len(lists)), threads):
        if progress and done:
            progress(done)
    return idx, sims, ivf


def gpu_knn(vectors: np.ndarray, k: int = 100, query_batch: int = 65536,
            progress: Callable[[int], None] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Exact kNN on every visible GPU (FAISS flat index, sharded). Needs a FAISS GPU build."""
    import faiss
    x = np.ascontiguousarray(vectors, dtype=np.float32)
    n, d = x.shape
    k = max(0, min(k, n - 1))
    co = faiss.GpuMultipleClonerOptions()
    co.shard = True
    index = faiss.index_cpu_to_all_gpus(faiss.IndexFlatIP(d), co=co)
    index.add(x)
    idx = np.full((n, k), -1, dtype=np.int32)
    sims = np.full((n, k), -np.inf, dtype=np.float32)
    for s in range(0, n, query_batch):
        D, I = index.search(x[s:s + query_batch], k + 1)
        for r in range(len(I)):
            keep = I[r] != s + r
            row_i, row_d = I[r][keep][:k], D[r][keep][:k]
            order = np.lexsort((row_i, -row_d))
            idx[s + r, :len(order)] = row_i[order]
            sims[s + r, :len(order)] = row_d[order]
        if progress:
            progress(len(I))
    return idx, sims


def torch_knn(vectors: np.ndarray, k: int = 100, device: str = "cuda", max_block_bytes: int | None = None,
              shard_rows: int | None = None, progress: Callable[[int], None] | None = None
              ) -> tuple[np.ndarray, np.ndarray]:
    """Exact kNN with torch matrix products on ``device`` (the GPU path when no FAISS GPU build
    is installed: torch comes with sentence-transformers, FAISS's GPU wheels need their own CUDA).

    The vectors go to the device in database shards (the whole matrix when it fits in a quarter
    of the free device memory, else ``shard_rows`` rows); query blocks of ``max_block_bytes`` of
    similarities (default: an eighth of the free GPU memory up to 4 GiB; 256 MiB on the CPU)
    are multiplied against every shard in full float32 precision (no TF32), the
    per-shard top-(k+1) are merged, the row itself is dropped, and each row is sorted on the
    device by (similarity descending, index) like :func:`knn`; the results stay on the device
    until the end when they fit in a quarter of its free memory (no host sync per block). Ties at the k-th similarity
    (duplicate passages) may keep another, equally near, index than :func:`knn` does.
    """
    import torch
    x = np.ascontiguousarray(vectors, dtype=np.float32)
    n, d = x.shape
    kk = max(0, min(k, n - 1))
    idx = np.empty((n, kk), dtype=np.int32)
    sims = np.empty((n, kk), dtype=np.float32)
    if n == 0 or kk == 0:
        return idx, sims
    dev = torch.device(device)
    free = torch.cuda.mem_get_info(dev)[0] if dev.type == "cuda" else None
    if shard_rows is None:
        shard_rows = n if free is None else max(kk + 1, min(n, int(free // 4 // (4 * d))))
    if max_block_bytes is None:
        max_block_bytes = 256 << 20 if free is None else max(64 << 20, min(4 << 30, free // 8))
    shard_rows = max(1, int(shard_rows))
    shards = [(a, torch.from_numpy(x[a:a + shard_rows]).to(dev)) for a in range(0, n, shard_rows)]
    block = max(1, int(max_block_bytes // (4 * min(n, shard_rows))))
    # results stay on the device until the end (no host sync per block) when they fit there
    on_device = free is not None and n * kk * 8 <= free // 4
    if on_device:
        out_i = torch.empty((n, kk), dtype=torch.int32, device=dev)
        out_v = torch.empty((n, kk), dtype=torch.float32, device=dev)
    precision = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")
    try:
        with torch.no_grad():
            for start in range(0, n, block):
                stop = min(n, start + block)
                if len(shards) == 1:
                    q = shards[0][1][start:stop]          # a view of the vectors already there
                else:
                    q = torch.from_numpy(x[start:stop]).to(dev)
                best_v = best_i = None
                for a, db in shards:
                    s = q @ db.T
                    lo, hi = max(start, a), min(stop, a + len(db))
                    if lo < hi:                          # drop each row's own column
                        r = torch.arange(lo, hi, device=dev)
                        s[r - start, r - a] = -torch.inf
                    v, i = torch.topk(s, min(kk + 1, s.shape[1]), dim=1)
                    i = i + a
                    if best_v is not None:
                        v, j = torch.topk(torch.cat([best_v, v], 1), min(kk + 1, best_v.shape[1] + v.shape[1]), dim=1)
                        i = torch.gather(torch.cat([best_i, i], 1), 1, j)
                    best_v, best_i = v, i
                bv, bi = best_v[:, :kk], best_i[:, :kk]
                # order by (similarity descending, index): by index, then stably by similarity
                o = torch.argsort(bi, dim=1, stable=True)
                bv, bi = torch.gather(bv, 1, o), torch.gather(bi, 1, o)
                o = torch.argsort(-bv, dim=1, stable=True)
                bv, bi = torch.gather(bv, 1, o), torch.gather(bi, 1, o).to(torch.int32)
                if on_device:
                    out_i[start:stop], out_v[start:stop] = bi, bv
                else:
                    idx[start:stop], sims[start:stop] = bi.cpu().numpy(), bv.cpu().numpy()
                if progress:
                    progress(stop - start)
        if on_device:
            idx[:], sims[:] = out_i.cpu().numpy(), out_v.cpu().numpy()
    finally:
        torch.set_float32_matmul_precision(precision)
    return idx, sims


def torch_cuda_available() -> bool:
    try:
        import torch
        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001 - no torch or a broken CUDA setup
        return False


def gpu_available() -> bool:
    try:
        import faiss
        return hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0
    except Exception:  # noqa: BLE001 - no usable FAISS GPU build
        return False


@dataclass
class KnnGraph:
    neighbors: np.ndarray          # int32 [N, k], -1 = none
    method: str                    # exact | ivf | gpu-exact (params['backend']: faiss | torch)
    params: dict[str, Any] = field(default_factory=dict)
    ivf: IVF | None = None
    loaded: bool = False           # read back from a persisted graph


def build_knn(vectors: np.ndarray, k: int = 100, *, exact_max: int = 20000, nlist: int | None = None,
              nprobe: int | str = "auto", seed: int = 0, device: str = "auto",
              max_block_bytes: int = 256 * 1024 * 1024, progress: Callable[[int], None] | None = None,
              target_recall: float = 0.95) -> KnnGraph:
    """Exact search up to ``exact_max`` vectors, then FAISS (GPU exact when available and
    ``device`` is ``auto``/``cuda``, else the CPU IVF self-join; ``nprobe="auto"``: calibrated
    to ``target_recall``, the chosen ``nprobe`` and the sample's recall in ``params``)."""
    n = len(vectors)
    if device == "cuda" and not (gpu_available() or torch_cuda_available()):
        raise RuntimeError("cluster.device is 'cuda' but neither FAISS nor torch sees a GPU: no GPU "
                           "(install a CUDA build of torch or faiss-gpu, and the CUDA drivers)")
    if n <= exact_max:
        idx, _ = knn(vectors, k=k, max_block_bytes=max_block_bytes, progress=progress)
        return KnnGraph(idx, "exact", {"k": k})
    if device in ("auto", "cuda"):
        if gpu_available():
            idx, _ = gpu_knn(vectors, k=k, progress=progress)
            return KnnGraph(idx, "gpu-exact", {"k": k, "backend": "faiss"})
        if torch_cuda_available():
            idx, _ = torch_knn(vectors, k=k, device="cuda", progress=progress)
            return KnnGraph(idx, "gpu-exact", {"k": k, "backend": "torch"})
    idx, _, ivf = ivf_knn(vectors, k=k, nlist=nlist, nprobe=nprobe, seed=seed, progress=progress,
                          target_recall=target_recall)
    params = {"k": k, "nlist": len(ivf.centroids), "nprobe": int(ivf.nprobe if nprobe == "auto" else nprobe),
              "seed": seed}
    if ivf.calibration is not None:
        params.update(ivf.calibration.params())
    return KnnGraph(idx, "ivf", params, ivf)


def save_knn(directory: str | os.PathLike, graph: KnnGraph, key: dict[str, Any]) -> None:
    """Persist the graph (and the IVF quantizer + cell assignment) under ``directory``.

    Files are written to temporary names and renamed; ``meta.json`` (the key) goes last, so
    a kill leaves either a complete graph or one that :func:`load_knn` ignores.
    """
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    (d / "meta.json").unlink(missing_ok=True)

    def put(name: str, arr: np.ndarray) -> None:
        tmp = d / f".{name}.tmp.npy"
        np.save(tmp, arr)
        os.replace(tmp, d / name)

    put("neighbors.npy", np.ascontiguousarray(graph.neighbors, dtype=np.int32))
    for name in ("ivf_centroids.npy", "ivf_assign.npy"):
        (d / name).unlink(missing_ok=True)
    if graph.ivf is not None:
        put("ivf_centroids.npy", graph.ivf.centroids)
        put("ivf_assign.npy", graph.ivf.assign)
    meta = {"key": key, "method": graph.method, "params": graph.params, "shape": list(graph.neighbors.shape),
            "search": IVF_SEARCH}
    tmp = d / ".meta.json.tmp"
    tmp.write_text(json.dumps(meta, sort_keys=True))
    os.replace(tmp, d / "meta.json")


def load_knn(directory: str | os.PathLike, key: dict[str, Any]) -> KnnGraph | None:
    """The persisted graph when its key matches (neighbours memory-mapped), else None."""
    d = Path(directory)
    try:
        meta = json.loads((d / "meta.json").read_text())
    except (FileNotFoundError, ValueError):
        return None
    if meta.get("key") != json.loads(json.dumps(key, sort_keys=True)):
        return None
    if meta.get("method") == "ivf" and meta.get("search") != IVF_SEARCH:
        return None          # built by an earlier IVF search: same settings, different graph
    try:
        nbr = np.load(d / "neighbors.npy", mmap_mode="r")
        ivf = None
        if (d / "ivf_centroids.npy").exists():
            ivf = IVF(np.load(d / "ivf_centroids.npy"), np.load(d / "ivf_assign.npy", mmap_mode="r"),
                      int(meta["params"].get("nprobe", 8)))
    except (OSError, ValueError):
        return None
    if list(nbr.shape) != meta.get("shape"):
        return None
    return KnnGraph(nbr, meta["method"], meta.get("params", {}), ivf, loaded=True)
