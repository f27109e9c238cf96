"""``build_retriever(name, **params)``: the retrievers by name (bm25, dense, hybrid, rrf).

* ``bm25``: :class:`~retrieval.bm25.BM25Retriever` (``method, k1, b, stemmer, stopwords,
  tokenizer, index_dir, n_threads, ...``).
* ``dense``: :class:`~retrieval.dense.DenseRetriever` (``model, cache_dir, batch_size,
  query_prefix, doc_prefix, use_faiss, max_block_bytes, ...``).
* ``hybrid`` (min-max fusion) and ``rrf`` (reciprocal rank fusion):
  :class:`~retrieval.hybrid.HybridRetriever` over BM25 + dense. Component parameters go in
  ``bm25={...}`` / ``dense={...}``, or flat (a flat key is routed to the component that
  takes it); fusion parameters: ``weights, depth, rrf_k``.
"""
from __future__ import annotations

import inspect
from typing import Any

from .base import RetrievalError

RETRIEVERS = ("bm25", "dense", "hybrid", "rrf")


def _params_of(cls) -> set[str]:
    return {p for p in inspect.signature(cls.__init__).parameters if p != "self"}


def build_retriever(name: str, **params: Any):
    """A new, un-indexed retriever called ``name`` with ``params`` (see module docstring)."""
    from .bm25 import BM25Retriever
    from .dense import DenseRetriever
    from .hybrid import HybridRetriever

    key = name.lower().strip()
    try:
        if key == "bm25":
            return BM25Retriever(**params)
        if key == "dense":
            return DenseRetriever(**params)
    except TypeError as exc:
        raise RetrievalError(f"bad parameters for retriever {name!r}: {exc}") from exc
    if key in ("hybrid", "rrf"):
        bm25_p = dict(params.pop("bm25", None) or {})
        dense_p = dict(params.pop("dense", None) or {})
        fusion_p = {k: params.pop(k) for k in ("weights", "depth", "rrf_k") if k in params}
        if "fusion" in params:
            fusion = params.pop("fusion")
            if key == "rrf" and fusion != "rrf":
                raise RetrievalError("retriever 'rrf' always uses fusion='rrf'")
        else:
            fusion = "rrf" if key == "rrf" else "minmax"
        bm25_keys, dense_keys = _params_of(BM25Retriever), _params_of(DenseRetriever)
        for k in list(params):
            if k in bm25_keys:
                bm25_p.setdefault(k, params.pop(k))
            elif k in dense_keys:
                dense_p.setdefault(k, params.pop(k))
        if params:
            raise RetrievalError(f"unknown parameters for retriever {name!r}: {sorted(params)}")
        return HybridRetriever([BM25Retriever(**bm25_p), DenseRetriever(**dense_p)], fusion=fusion, **fusion_p)
    raise RetrievalError(f"unknown retriever {name!r}; choose one of {', '.join(RETRIEVERS)}")
