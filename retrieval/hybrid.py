"""Hybrid retrieval: BM25 + dense (or any retrievers) fused through :mod:`retrieval.fusion`.

Each component retrieves ``depth`` documents per query (default 100, at least ``k``), the
lists are fused (``"minmax"`` = per-list min-max then weighted sum, or ``"rrf"``) and cut to
``k`` in trec_eval order.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from common.types import Run

from .base import Doc, RetrievalError, Retriever, check_k
from .bm25 import BM25Retriever
from .dense import DenseRetriever
from .fusion import fuse


class HybridRetriever:
    """Fuse the runs of several retrievers (default: ``BM25Retriever()`` + ``DenseRetriever()``).

    Args:
        retrievers: component retrievers (each with ``index`` / ``search``).
        fusion: ``"minmax"`` (default) or ``"rrf"``.
        weights: one weight per component (default equal).
        depth: documents retrieved per component before fusion (``max(depth, k)`` is used).
        rrf_k: the RRF constant.
    """

    def __init__(self, retrievers: Sequence[Retriever] | None = None, fusion: str = "minmax",
                 weights: Sequence[float] | None = None, depth: int = 100, rrf_k: int = 60):
        if retrievers is None:
            retrievers = [BM25Retriever(), DenseRetriever()]
        if not retrievers:
            raise RetrievalError("HybridRetriever needs at least one retriever")
        if fusion not in ("minmax", "rrf"):
            raise RetrievalError(f"unknown fusion {fusion!r} (use 'minmax' or 'rrf')")
        if weights is not None and len(weights) != len(retrievers):
            raise RetrievalError(f"{len(weights)} weights for {len(retrievers)} retrievers")
        self.retrievers = list(retrievers)
        self.fusion = fusion
        self.weights = list(weights) if weights is not None else None
        self.depth = check_k(depth)
        self.rrf_k = rrf_k
        self.last_component_runs: list[Run] = []

    @property
    def name(self) -> str:
        return "rrf" if self.fusion == "rrf" else "hybrid"

    def describe(self) -> dict:
        return {"retriever": self.name, "fusion": self.fusion, "weights": self.weights, "depth": self.depth,
                "rrf_k": self.rrf_k if self.fusion == "rrf" else None,
                "components": [r.describe() if hasattr(r, "describe") else type(r).__name__
                               for r in self.retrievers]}

    def index(self, docs: Sequence[Doc]) -> "HybridRetriever":
        docs = list(docs)
        for r in self.retrievers:
            r.index(docs)
        return self

    def search(self, queries: Mapping[str, str], k: int = 10) -> Run:
        k = check_k(k)
        depth = max(self.depth, k)
        runs = [r.search(queries, depth) for r in self.retrievers]
        self.last_component_runs = runs
        fused = fuse(runs, method=self.fusion, weights=self.weights, depth=k, rrf_k=self.rrf_k)
        for q in queries:  # keep queries that no component answered, as empty lists
            fused.setdefault(q, {})
        return fused
