"""Cosine k-nearest-neighbour graphs: which search builds one, and its persistence.

Vectors must be L2-normalised (cosine = inner product). The row itself is excluded from its
own neighbour list; rows are sorted by similarity descending (exact path: ties by the lower index).

* :mod:`.exact` - exact search in memory-bounded blocks (numpy), up to ``cluster.exact_max`` vectors.
* :mod:`.ivf` - approximate all-pairs kNN over a FAISS IVF partition (cell-batched), with
  ``nprobe`` calibrated to a target recall.
* :mod:`.gpu` - exact search on the GPU (FAISS GPU flat index, or torch matrix products).
* here: :func:`build_knn` picks one of them; :func:`save_knn` / :func:`load_knn` persist the graph
  (``neighbors.npy``, memory-mapped on reload) and the trained IVF quantizer with the cell
  of every vector, keyed by the embeddings' content hash and the kNN parameters.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from clustering.knn.exact import knn
from clustering.knn.gpu import gpu_available, gpu_knn, torch_cuda_available, torch_knn
from clustering.knn.ivf import IVF, IVF_SEARCH, ivf_knn


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
