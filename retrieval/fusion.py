"""Rank fusion over any number of runs: min-max score fusion and reciprocal rank fusion.

Both take runs in the pytrec_eval shape (``{qid: {doc_id: score}}``), any number of them,
with optional per-run weights (default 1 each), and return a fused run. The output contains
the union of the queries; a query absent from one run simply gets nothing from it. A
document absent from a run contributes 0 from that run. With ``depth`` the fused lists are
cut to that many documents in trec_eval order (score desc, ties by doc id desc).

**Min-max fusion** (``minmax_fusion``): each query's list in each run is normalised to
``(s - min) / (max - min)`` over that list, then the normalised scores are summed
(weighted). **All-equal case:** when every score of a list is equal (including a list of a
single document) ``max - min = 0``; every document of that list then gets **1.0** (each is
at the top of its list), never a division by zero or NaN. Empty lists contribute nothing.

**Reciprocal rank fusion** (``rrf``): ``sum_i w_i / (k + rank_i(d))`` with ``k = 60`` by
default; ``rank_i`` is the 1-based position of ``d`` in run ``i`` ordered as trec_eval
orders it (score desc, ties by doc id desc), so tied scores get distinct, deterministic
ranks. The rank column of a TREC file plays no part, as in trec_eval.
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence

from common.types import Run

from .base import RetrievalError, cut_run, trec_ranking

RunLike = Mapping[str, Mapping[str, float]]


def _weights(runs: Sequence[RunLike], weights: Sequence[float] | None) -> list[float]:
    if not runs:
        raise RetrievalError("fusion needs at least one run")
    if weights is None:
        return [1.0] * len(runs)
    if len(weights) != len(runs):
        raise RetrievalError(f"{len(weights)} weights for {len(runs)} runs")
    w = [float(x) for x in weights]
    if any(not math.isfinite(x) or x < 0 for x in w):
        raise RetrievalError(f"weights must be finite and >= 0, got {weights}")
    return w


def _qids(runs: Sequence[RunLike]) -> list[str]:
    seen: dict[str, None] = {}
    for r in runs:
        for q in r:
            seen.setdefault(q, None)
    return list(seen)


def minmax_normalize(scores: Mapping[str, float]) -> dict[str, float]:
    """Min-max normalise one list to [0, 1]; an all-equal (or single-item) list maps to 1.0 each."""
    if not scores:
        return {}
    vals = [float(v) for v in scores.values()]
    if any(not math.isfinite(v) for v in vals):
        raise RetrievalError("cannot min-max normalise non-finite scores")
    lo, hi = min(vals), max(vals)
    if hi == lo:
        return {d: 1.0 for d in scores}
    span = hi - lo
    return {d: (float(s) - lo) / span for d, s in scores.items()}


def minmax_fusion(runs: Sequence[RunLike], weights: Sequence[float] | None = None,
                  depth: int | None = None) -> Run:
    """Per-list min-max normalisation, then the weighted sum over runs (see module docstring)."""
    w = _weights(runs, weights)
    out: Run = {}
    for q in _qids(runs):
        acc: dict[str, float] = {}
        for run, wi in zip(runs, w):
            for d, s in minmax_normalize(run.get(q, {})).items():
                acc[d] = acc.get(d, 0.0) + wi * s
        out[q] = acc
    return cut_run(out, depth) if depth is not None else out


def rrf(runs: Sequence[RunLike], k: int = 60, weights: Sequence[float] | None = None,
        depth: int | None = None) -> Run:
    """Reciprocal rank fusion: ``sum_i w_i / (k + rank_i)``, trec_eval ranks (see module docstring)."""
    if k < 0:
        raise RetrievalError(f"RRF constant k must be >= 0, got {k}")
    w = _weights(runs, weights)
    out: Run = {}
    for q in _qids(runs):
        acc: dict[str, float] = {}
        for run, wi in zip(runs, w):
            for rank, (d, _s) in enumerate(trec_ranking(run.get(q, {})), start=1):
                acc[d] = acc.get(d, 0.0) + wi / (k + rank)
        out[q] = acc
    return cut_run(out, depth) if depth is not None else out


reciprocal_rank_fusion = rrf

FUSIONS = {"minmax": minmax_fusion, "rrf": rrf}


def fuse(runs: Sequence[RunLike], method: str = "minmax", weights: Sequence[float] | None = None,
         depth: int | None = None, rrf_k: int = 60) -> Run:
    """Dispatch on ``method`` (``"minmax"`` or ``"rrf"``)."""
    if method == "minmax":
        return minmax_fusion(runs, weights=weights, depth=depth)
    if method == "rrf":
        return rrf(runs, k=rrf_k, weights=weights, depth=depth)
    raise RetrievalError(f"unknown fusion method {method!r} (use 'minmax' or 'rrf')")
