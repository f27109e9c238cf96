"""Retrievers (BM25, dense, fusion, hybrid, query expansion) and conversational query builders.

All retrievers share ``index(docs)`` / ``search(queries, k) -> Run`` (see :mod:`retrieval.base`).
"""
from common.types import Run

from .base import RetrievalError, Retriever, cut_run, trec_ranking
from .registry import RETRIEVERS, build_retriever, indexed_retriever

__all__ = ["RETRIEVERS", "RetrievalError", "Retriever", "Run", "build_retriever", "cut_run", "indexed_retriever",
           "trec_ranking"]
