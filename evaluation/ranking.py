"""trec_eval ranking: turn a run and qrels into per-rank relevance arrays.

trec_eval ignores the rank column of a run. For each query it sorts the documents by score
descending and breaks ties by document id **descending** (string comparison), then looks up
each document's grade in the qrels (unjudged = 0). The metric modules work on the resulting
arrays, one row per query, so every metric is a vectorised numpy expression.

Relevance follows trec_eval's defaults: a document is relevant when its grade is >= 1
(``relevance_level`` 1); nDCG gains are the grades, negative grades count as 0.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

RELEVANCE_LEVEL = 1


@dataclass(frozen=True, slots=True)
class RankedJudgments:
    """Per-query relevance of the ranked documents, padded to a common depth.

    Attributes:
        qids: query ids, one per row.
        grades: ``(n_queries, depth)`` int array; ``grades[i, r]`` is the qrels grade of the
            document at rank ``r + 1`` of query ``i`` (0 when unjudged or past the list end).
        ideal: ``(n_queries, depth)`` float array; the query's positive grades sorted
            descending (the ideal ranking), padded with 0.
        num_rel: ``(n_queries,)`` number of relevant documents (grade >= 1) in the qrels.
        num_ret: ``(n_queries,)`` number of documents the run lists for the query (uncut).
        first_rel_rank: ``(n_queries,)`` rank of the first relevant document in the *whole*
            ranking (not cut at ``depth``); 0 when no relevant document is retrieved.
    """

    qids: tuple[str, ...]
    grades: np.ndarray
    ideal: np.ndarray
    num_rel: np.ndarray
    num_ret: np.ndarray
    first_rel_rank: np.ndarray

    @property
    def depth(self) -> int:
        return self.grades.shape[1]

    def relevant(self, k: int) -> np.ndarray:
        """``(n_queries, k)`` bool array: the document at each rank is relevant."""
        return self.grades[:, :k] >= RELEVANCE_LEVEL


def trec_ranking(doc_scores: Mapping[str, float], depth: int | None = None) -> list[str]:
    """Doc ids of one query in trec_eval order (score desc, ties by doc id desc).

    Args:
        doc_scores: ``{doc_id: score}``.
        depth: keep only the first ``depth`` ids (``None`` = all).

    Returns:
        The ranked doc ids.
    """
    key = lambda item: (item[1], item[0])  # noqa: E731
    if depth is None or depth >= len(doc_scores):
        items = sorted(doc_scores.items(), key=key, reverse=True)
    else:
        items = heapq.nlargest(depth, doc_scores.items(), key=key)
    return [doc_id for doc_id, _ in items]


def rank_judgments(qrels: Mapping[str, Mapping[str, int]], run: Mapping[str, Mapping[str, float]],
                   qids: Sequence[str], depth: int) -> RankedJudgments:
    """Build the per-rank grade arrays for ``qids`` (a qid absent from ``run`` gets an empty list).

    Args:
        qrels: ``{qid: {doc_id: grade}}``.
        run: ``{qid: {doc_id: score}}``.
        qids: queries to include, in output order.
        depth: number of ranks to keep (the largest cutoff needed).

    Returns:
        The :class:`RankedJudgments` for ``qids``.
    """
    if depth < 1:
        raise ValueError(f"depth must be >= 1, got {depth}")
    n = len(qids)
    grades = np.zeros((n, depth), dtype=np.int64)
    ideal = np.zeros((n, depth), dtype=np.float64)
    num_rel = np.zeros(n, dtype=np.int64)
    num_ret = np.zeros(n, dtype=np.int64)
    first_rel = np.zeros(n, dtype=np.int64)
    for i, qid in enumerate(qids):
        judged = qrels.get(qid, {})
        positive = sorted((g for g in judged.values() if g >= RELEVANCE_LEVEL), reverse=True)
        num_rel[i] = len(positive)
        ideal[i, :min(depth, len(positive))] = positive[:depth]
        docs = run.get(qid)
        if docs:
            ranked = trec_ranking(docs, depth)
            num_ret[i] = len(docs)
            grades[i, :len(ranked)] = [judged.get(doc_id, 0) for doc_id in ranked]
            # rank of the best-placed relevant document = 1 + documents ordered before it
            rel_keys = [(score, doc_id) for doc_id, score in docs.items()
                        if judged.get(doc_id, 0) >= RELEVANCE_LEVEL]
            if rel_keys:
                best = max(rel_keys)
                first_rel[i] = 1 + sum(1 for doc_id, score in docs.items() if (score, doc_id) > best)
    return RankedJudgments(qids=tuple(qids), grades=grades, ideal=ideal,
                           num_rel=num_rel, num_ret=num_ret, first_rel_rank=first_rel)
