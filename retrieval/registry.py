"""``build_retriever(name, **params)``: the retrievers by name (bm25, dense, hybrid, rrf).

* ``bm25``: :class:`~retrieval.bm25.BM25Retriever` (``method, k1, b, stemmer, stopwords,
  tokenizer, index_dir, n_threads, ...``).
* ``dense``: :class:`~retrieval.dense.DenseRetriever` (``model, cache_dir, batch_size,
  query_prefix, doc_prefix, use_faiss, max_block_bytes, ...``).
* ``hybrid`` (min-max fusion) and ``rrf`` (reciprocal rank fusion):
  :class:`~retrieval.hybrid.HybridRetriever` over BM25 + dense. Component parameters go in
  ``bm25={...}`` / ``dense={...}``, or flat (a flat key is routed to the component that
  takes it); fusion parameters: ``weights, depth, rrf_k``.

``indexed_retriever(name, docs, ...)`` is the one set-up every caller uses (evaluation, the
audit's negative miner and heuristic judges, the abstention ladder, query expansion, the
synthesis uniqueness check): storage locations are routed to the component that takes them,
and already indexed BM25 / dense components can be reused.
"""
from __future__ import annotations

import inspect
import os
from typing import Any, Sequence

from .base import Doc, RetrievalError, Retriever
from .bm25 import BM25Retriever
from .dense import DenseRetriever
from .hybrid import HybridRetriever

RETRIEVERS = ("bm25", "dense", "hybrid", "rrf")
PathLike = str | os.PathLike


def _params_of(cls) -> set[str]:
    return {p for p in inspect.signature(cls.__init__).parameters if p != "self"}


def build_retriever(name: str, **params: Any):
    """A new, un-indexed retriever called ``name`` with ``params`` (see module docstring)."""
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


def indexed_retriever(name: str, docs: Sequence[Doc], *, index_dir: PathLike | None = None,
                      cache_dir: PathLike | None = None, model: str | None = None, bm25: Retriever | None = None,
                      dense: Retriever | None = None, **fusion: Any) -> Retriever:
    """An indexed retriever called ``name`` (``bm25``, ``dense``, ``hybrid``, ``rrf``) over ``docs``.

    Args:
        name: the retriever (see :data:`RETRIEVERS`).
        docs: ``(doc_id, text)`` pairs to index.
        index_dir: BM25's on-disk index folder (reused when it holds this corpus); BM25 part only.
        cache_dir: the embedding cache folder; dense part only.
        model: the dense encoder (None = the bundled MiniLM); dense part only.
        bm25, dense: an already indexed component over the same ``docs``, used instead of
            building (and indexing) a new one.
        fusion: ``weights``, ``depth``, ``rrf_k`` of ``hybrid`` / ``rrf``.

    Raises:
        RetrievalError: unknown retriever, bad parameters, fusion parameters for a single retriever.
    """
    key = name.lower().strip()
    if key not in RETRIEVERS:
        raise RetrievalError(f"unknown retriever {name!r}; choose one of {', '.join(RETRIEVERS)}")
    if fusion and key not in ("hybrid", "rrf"):
        raise RetrievalError(f"retriever {name!r} takes no fusion parameters ({sorted(fusion)})")
    docs = list(docs)
    parts: list[Retriever] = []
    if key != "dense":
        if bm25 is None:
            bm25 = build_retriever("bm25", **({"index_dir": index_dir} if index_dir is not None else {})).index(docs)
        parts.append(bm25)
    if key != "bm25":
        if dense is None:
            params: dict[str, Any] = {}
            if cache_dir is not None:
                params["cache_dir"] = cache_dir
            if model is not None:
                params["model"] = model
            dense = build_retriever("dense", **params).index(docs)
        parts.append(dense)
    if key in ("bm25", "dense"):
        return parts[0]
    try:
        return HybridRetriever(parts, fusion="rrf" if key == "rrf" else "minmax", **fusion)
    except TypeError as exc:
        raise RetrievalError(f"bad parameters for retriever {name!r}: {exc}") from exc
