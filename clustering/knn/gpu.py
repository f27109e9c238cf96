"""Exact cosine kNN on the GPU: :func:`gpu_knn` (a FAISS GPU flat index, sharded over every GPU),
used when ``faiss.get_num_gpus() > 0`` and ``cluster.device`` allows it (untested: no FAISS GPU
wheel could be taken to the lent GPU machine, it needs CUDA 12 libraries of several 100 MB), and
:func:`torch_knn` (torch matrix products, blocked, sharded when the vectors do not fit), used
when torch sees CUDA and no FAISS GPU build is installed (measured on an H200 by
``benchmarks/gpu.py``, README; tested on the CPU against :func:`clustering.knn.exact.knn`).
"""
from __future__ import annotations

from typing import Callable

import numpy as np


def gpu_knn(vectors: np.ndarray, k: int = 100, query_batch: int = 65536,
            progress: Callable[[int], None] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Exact kNN on every visible GPU (FAISS flat index, sharded). Needs a FAISS GPU build."""
    import faiss   # costly: faiss
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
    import torch   # costly: torch
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
        import torch   # costly: torch
        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001 - no torch or a broken CUDA setup
        return False


def gpu_available() -> bool:
    try:
        import faiss   # costly: faiss
        return hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0
    except Exception:  # noqa: BLE001 - no usable FAISS GPU build
        return False
