"""Shared retrieval types and the trec_eval ranking rule.

Every retriever in this package has the same interface::

    retriever.index(docs)                  # docs: sequence of (doc_id, text)
    run = retriever.search(queries, k)     # queries: {qid: text}; run: {qid: {doc_id: score}}

``Run`` has the pytrec_eval shape. A query that retrieves nothing maps to ``{}`` (it is kept
in the run so that callers can score it 0). Rankings inside a run follow trec_eval: score
descending, ties broken by doc id **descending** (plain string comparison, which equals
trec_eval's byte-wise ``strcmp`` on UTF-8). When a retriever cuts a list to ``k`` it applies
that same order, so the top-k set at a tied cut-off is the set trec_eval would rank first.
"""
from __future__ import annotations

import hashlib
import json
from typing import Iterable, Mapping, Protocol, Sequence, runtime_checkable

import numpy as np

from common.types import Run

Doc = tuple[str, str]


class RetrievalError(RuntimeError):
    """A retriever was used wrongly (not indexed, bad parameters, bad input)."""


@runtime_checkable
class Retriever(Protocol):
    def index(self, docs: Sequence[Doc]) -> "Retriever": ...

    def search(self, queries: Mapping[str, str], k: int = 10) -> Run: ...


def check_docs(docs: Iterable[Doc]) -> tuple[list[str], list[str]]:
    """Split ``(doc_id, text)`` pairs into id and text lists; ids must be unique strings."""
    ids: list[str] = []
    texts: list[str] = []
    for i, item in enumerate(docs):
        try:
            doc_id, text = item
        except (TypeError, ValueError) as exc:
            raise RetrievalError(f"docs[{i}] is not a (doc_id, text) pair: {item!r:.80}") from exc
        if not isinstance(doc_id, str) or not isinstance(text, str):
            raise RetrievalError(f"docs[{i}]: doc_id and text must be str, got "
                                 f"{type(doc_id).__name__}, {type(text).__name__}")
        ids.append(doc_id)
        texts.append(text)
    if not ids:
        raise RetrievalError("cannot index an empty corpus")
    if len(set(ids)) != len(ids):
        seen: set[str] = set()
        dup = next(d for d in ids if d in seen or seen.add(d))
        raise RetrievalError(f"duplicate doc_id {dup!r} in corpus")
    return ids, texts


def check_k(k: int) -> int:
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 1:
        raise RetrievalError(f"k must be a positive integer, got {k!r}")
    return int(k)


def check_queries(queries: Mapping[str, str], k: int) -> tuple[list[str], list[str], int]:
    """The checks every ``search`` starts with: ``(qids, texts, k)``, ``k`` a positive integer
    and every query text a str (:class:`RetrievalError` otherwise)."""
    k = check_k(k)
    qids = list(queries)
    texts = [queries[q] for q in qids]
    for q, t in zip(qids, texts):
        if not isinstance(t, str):
            raise RetrievalError(f"query {q!r}: text must be str, got {type(t).__name__}")
    return qids, texts, k


def corpus_fingerprint(ids: Sequence[str], texts: Sequence[str], params: Mapping | None = None) -> str:
    """sha256 over the parameters and every (doc_id, text), length-prefixed (unambiguous)."""
    h = hashlib.sha256()
    h.update(json.dumps(dict(params or {}), sort_keys=True, default=str).encode("utf-8"))
    for d, t in zip(ids, texts):
        db = d.encode("utf-8")
        tb = t.encode("utf-8", "surrogatepass")
        h.update(b"%d:%s%d:" % (len(db), db, len(tb)))
        h.update(tb)
    return h.hexdigest()


def id_ranks(ids: Sequence[str]) -> np.ndarray:
    """rank[i] = position of ids[i] in ascending string order (for the doc-id tie rule)."""
    order = sorted(range(len(ids)), key=ids.__getitem__)
    rank = np.empty(len(ids), dtype=np.int64)
    rank[np.asarray(order, dtype=np.int64)] = np.arange(len(ids), dtype=np.int64)
    return rank


def trec_sort(idx: np.ndarray, scores: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """Permutation ordering ``idx`` by score desc, then doc id desc (``rank`` = id order)."""
    return np.lexsort((-rank[idx], -scores))


def topk_trec(scores: np.ndarray, k: int, rank: np.ndarray,
              min_score: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Top-k of a 1-D score vector under the trec_eval order.

    Returns (indices, scores) sorted best first. Ties at the cut-off are resolved by doc id
    descending (via ``rank``), exactly as trec_eval would rank the full list. With
    ``min_score`` only entries with ``score > min_score`` are eligible.
    """
    n = scores.shape[0]
    if min_score is not None:
        cand = np.flatnonzero(scores > min_score)
        if cand.size == 0:
            return cand, scores[cand]
    else:
        cand = None
    if cand is not None and cand.size <= k:
        sel = cand
    elif cand is None and n <= k:
        sel = np.arange(n)
    else:
        sub = scores if cand is None else scores[cand]
        kth = np.partition(sub, sub.size - k)[sub.size - k]
        sel_local = np.flatnonzero(sub >= kth)
        sel = sel_local if cand is None else cand[sel_local]
    s = scores[sel]
    order = trec_sort(sel, s, rank)[:k]
    return sel[order], s[order]


def trec_ranking(doc_scores: Mapping[str, float]) -> list[tuple[str, float]]:
    """(doc_id, score) pairs in trec_eval order: score desc, ties by doc id desc."""
    return sorted(doc_scores.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)


def cut_run(run: Mapping[str, Mapping[str, float]], k: int | None) -> Run:
    """Keep each query's top ``k`` (trec_eval order); ``None`` keeps everything."""
    out: Run = {}
    for qid, ds in run.items():
        ranked = trec_ranking(ds)
        if k is not None:
            ranked = ranked[:k]
        out[qid] = {d: float(s) for d, s in ranked}
    return out
