"""Shared type aliases for retrieval runs and relevance judgments (ground floor: imports nothing of ours).

``Run`` maps a query id to ``{doc_id: score}`` (higher scores rank first); ``Qrels`` maps a query
id to ``{doc_id: graded relevance}``. The same shapes as ``pytrec_eval`` / TREC files.
"""
from __future__ import annotations

Run = dict[str, dict[str, float]]
Qrels = dict[str, dict[str, int]]

__all__ = ["Qrels", "Run"]
