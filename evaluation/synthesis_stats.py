"""Statistics of one synthesis run for the grouping ablation (``benchmarks/grouping_ablation.py``).

Plain functions over a run's tables (``turns``, ``failures``, ``qrels``, ``conversations``,
``clusters``, ``embeddings``):

* :func:`verifier_failure_share`: share of attempted turns that failed because the verifier
  rejected them (a ``failures`` row with ``step == "verifier"`` for a failed turn);
* :func:`uniqueness_per_turn`: extra positives (``qrels`` with provenance ``uniqueness``) per
  successful answerable turn;
* :func:`group_cohesion`: per group of passages, the mean pairwise cosine similarity of its
  members, ``(||sum v||^2 - m) / (m (m - 1))`` for ``m`` unit vectors; averaged over groups
  with at least two members;
* :func:`switch_distances`: per conversation with a topic switch, the cosine distance
  ``1 - cos`` between the centroid of its group and the centroid of the group it switches to.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np


def verifier_failure_share(turns: Sequence[Mapping[str, Any]], failures: Sequence[Mapping[str, Any]]) -> float:
    """Failed-by-the-verifier turns / attempted turns (NaN without turns)."""
    if not turns:
        return math.nan
    rejected = {f["sample_id"] for f in failures if f.get("step") == "verifier"}
    return sum(t["status"] == "failed" and t["sample_id"] in rejected for t in turns) / len(turns)


def uniqueness_per_turn(turns: Sequence[Mapping[str, Any]], qrels: Sequence[Mapping[str, Any]]) -> float:
    """Uniqueness positives per successful answerable turn (NaN without such turns)."""
    ok = {t["sample_id"] for t in turns if t["status"] == "ok" and t.get("answerability") != "UNANSWERABLE"}
    if not ok:
        return math.nan
    return sum(q["provenance"] == "uniqueness" and q["sample_id"] in ok for q in qrels) / len(ok)


def _unit(v: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    return v / np.where(n == 0, 1, n)


def group_cohesion(groups: Sequence[Sequence[int]], vectors: np.ndarray) -> float:
    """Mean over groups (>= 2 members) of the mean pairwise cosine similarity (NaN if none)."""
    u = _unit(np.asarray(vectors, dtype=np.float64))
    vals = []
    for g in groups:
        m = len(g)
        if m < 2:
            continue
        s = u[list(g)].sum(axis=0)
        vals.append((float(s @ s) - m) / (m * (m - 1)))
    return float(np.mean(vals)) if vals else math.nan


def centroid(members: Sequence[int], vectors: np.ndarray) -> np.ndarray:
    """Unit-length mean of the members' unit vectors."""
    return _unit(_unit(np.asarray(vectors, dtype=np.float64)[list(members)]).mean(axis=0))


def switch_distances(conversations: Sequence[Mapping[str, Any]], groups: Mapping[int, Sequence[int]],
                     vectors: np.ndarray) -> list[float]:
    """``1 - cos(centroid(group), centroid(switch group))`` per conversation with a switch."""
    out = []
    for c in conversations:
        if c.get("switch_cluster_id") is None:
            continue
        a = centroid(groups[c["cluster_id"]], vectors)
        b = centroid(groups[c["switch_cluster_id"]], vectors)
        out.append(1.0 - float(a @ b))
    return out


def run_stats(run_dir: str) -> dict[str, Any]:
    """All of the above for a synthesis run directory (plus turn and conversation counts)."""
    from embedding.vectors import read_embeddings   # costly: pyarrow (this module is numpy-only)
    from storage.store import RunStore   # costly: pyarrow
    store = RunStore(run_dir)
    turns = store.read_table("turns").to_pylist()
    failures = store.read_table("failures").to_pylist() if store.has_table("failures") else []
    qrels = store.read_table("qrels").to_pylist()
    convs = store.read_table("conversations").to_pylist()
    ids, vecs = read_embeddings(store)
    pos = {c: i for i, c in enumerate(ids)}
    cl = store.read_table("clusters", columns=["cluster_id", "position", "chunk_id"]).to_pylist()
    groups: dict[int, list[int]] = {}
    for r in sorted(cl, key=lambda r: (r["cluster_id"], r["position"])):
        groups.setdefault(r["cluster_id"], []).append(pos[r["chunk_id"]])
    sw = switch_distances(convs, groups, vecs)
    used = sorted({c["cluster_id"] for c in convs})
    return {"conversations": len(convs), "turns": len(turns),
            "turns_ok": sum(t["status"] == "ok" for t in turns),
            "verifier_failed_share": verifier_failure_share(turns, failures),
            "uniqueness_per_turn": uniqueness_per_turn(turns, qrels),
            "cohesion_used_groups": group_cohesion([groups[c] for c in used], vecs),
            "n_switches": len(sw), "switch_distance_mean": float(np.mean(sw)) if sw else math.nan,
            "switch_distance_median": float(np.median(sw)) if sw else math.nan}
