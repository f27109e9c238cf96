"""Offline heuristic judges: deterministic stand-ins for LLM judges when no endpoint is
configured. They are lexical and retrieval signals, **not** judgments of meaning, and every
audit report that contains them says so. Each is position-invariant (ties between candidate
passages are broken by doc id, never by position), so its reversed-order pass agrees with
its forward pass by construction.

* ``overlap`` — IDF-weighted term coverage:
  alignment = share of the question's weighted terms (in context, see
  :func:`~evaluation.audit.text.query_weights`) found in the passage; distinguishability =
  the candidate with the highest such share; faithfulness = share of the answer's weighted
  terms found in the gold passages; quality = 0.4 x question terms echoed by the answer +
  0.4 x answer terms found in the passages + 0.2 x completeness (answer length, 12 content
  terms = complete).
* ``support`` — sentence-level support:
  alignment = best coverage of the question by one window of two consecutive passage
  sentences; distinguishability = the candidate with the best window; faithfulness = share of
  answer sentences (claims) with >= 70% of their weighted terms inside one passage window;
  quality = 0.5 x supported-claim share + 0.3 x question relevance + 0.2 x completeness.
* ``retrieval`` — BM25 scores over the benchmark's whole corpus:
  alignment = rank of the passage for the turn's query (1 -> 5, <=3 -> 4, <=10 -> 3,
  <=50 -> 2, else 1); distinguishability = the candidate with the highest BM25 score for
  the query; faithfulness = best rank of a gold passage when the *answer* is the query;
  quality = best gold rank for the query "question + answer" (a topicality proxy only).

Shares in [0, 1] map to ratings with :func:`~evaluation.audit.text.to_rating` (cuts 0.2,
0.4, 0.6, 0.8). Every output has a rationale stating the numbers behind it.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable, Mapping

import numpy as np

from common.text import sentences
from evaluation.audit.base import Choice, Rating
from evaluation.audit.candidates import corpus_docs, corpus_docs_key
from evaluation.audit.text import TermStats, content_terms, coverage, query_weights, to_rating
from retrieval.corpus_index import persisted_retriever
from retrieval.registry import indexed_retriever
from storage.records import Document

HEURISTICS = ("overlap", "support", "retrieval")
COMPLETE_TERMS = 12
CLAIM_SUPPORT = 0.7


class EvidenceIndex:
    """Per-benchmark statistics the heuristic judges share: IDF over the corpus, cached term
    sets of passages and a lazily built BM25 index (full-corpus score vectors, cached).

    Args:
        corpus: the benchmark corpus.
        bm25: an indexed ``BM25Retriever`` over :func:`~evaluation.audit.candidates.corpus_docs`
            (built on first use when None).
        index_dir: the audit run's persisted index folder (``<run>/cache/index``): without
            ``bm25``, the BM25 is opened from there (built once per run and corpus, memory-mapped:
            :func:`retrieval.corpus_index.persisted_retriever`, the hard-negative miner's own
            component) instead of built in memory.
    """

    def __init__(self, corpus: Mapping[str, Document], bm25=None, index_dir=None) -> None:
        self.corpus = corpus
        self._bm25 = bm25
        self._index_dir = index_dir
        self._stats: TermStats | None = None
        self._terms: dict[str, frozenset[str]] = {}
        self._scores: OrderedDict[str, np.ndarray] = OrderedDict()
        self._pos: dict[str, int] | None = None

    @property
    def stats(self) -> TermStats:
        if self._stats is None:
            self._stats = TermStats(f"{d.title}\n{d.text}" for d in self.corpus.values())
        return self._stats

    @property
    def bm25(self):
        if self._bm25 is None:
            docs = corpus_docs(self.corpus)
            if self._index_dir is not None:
                self._bm25 = persisted_retriever("bm25", self._index_dir, corpus_docs_key(docs),
                                                 [d for d, _ in docs], [t for _, t in docs])
            else:
                self._bm25 = indexed_retriever("bm25", docs)
        return self._bm25

    def terms(self, p: Mapping[str, Any]) -> frozenset[str]:
        """Content terms of a passage dict (title + text), cached by doc id."""
        key = p.get("doc_id")
        if key is not None and key in self._terms:
            return self._terms[key]
        t = frozenset(content_terms(f"{p.get('title') or ''}\n{p['text']}"))
        if key is not None:
            self._terms[key] = t
        return t

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every corpus passage for ``query`` (LRU-cached)."""
        if query in self._scores:
            self._scores.move_to_end(query)
            return self._scores[query]
        bm = self.bm25
        ids = bm.query_token_ids(query)
        s = bm.score_ids(ids) if ids else np.zeros(len(bm.doc_ids))
        self._scores[query] = s
        if len(self._scores) > 256:
            self._scores.popitem(last=False)
        return s

    def position(self, doc_id: str) -> int | None:
        if self._pos is None:
            self._pos = {d: i for i, d in enumerate(self.bm25.doc_ids)}
        return self._pos.get(doc_id)

    def rank(self, query: str, doc_id: str) -> int:
        """1-based rank of ``doc_id`` among the corpus for ``query`` (ties count against it);
        ``len(corpus) + 1`` when it does not match at all or is not indexed."""
        s = self.scores(query)
        i = self.position(doc_id)
        if i is None or s[i] <= 0:
            return len(s) + 1
        return int((s > s[i]).sum() + (s[i] == s).sum())

    def score(self, query: str, doc_id: str) -> float:
        i = self.position(doc_id)
        return float(self.scores(query)[i]) if i is not None else 0.0


def rank_rating(rank: int) -> int:
    """1 -> 5, <=3 -> 4, <=10 -> 3, <=50 -> 2, else 1."""
    return 5 if rank <= 1 else 4 if rank <= 3 else 3 if rank <= 10 else 2 if rank <= 50 else 1


def _pick(scores: list[float], docs: list[str]) -> int:
    """1-based index of the best score; ties go to the smallest doc id (position-invariant)."""
    return min(range(len(scores)), key=lambda i: (-scores[i], docs[i])) + 1


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


class HeuristicJudge:
    """Base: one method per metric, each taking the metric's judge inputs."""

    name = ""

    def __init__(self, index: EvidenceIndex) -> None:
        self.index = index

    def _qw(self, x: Mapping[str, Any]) -> dict[str, float]:
        return query_weights(self.index.stats, x["question"], x.get("history") or (), x.get("rewrite"))

    def for_metric(self, metric: str) -> Callable[[Mapping[str, Any]], Rating | Choice]:
        return getattr(self, metric)

    def alignment(self, x: Mapping[str, Any]) -> Rating:
        raise NotImplementedError

    def distinguishability(self, x: Mapping[str, Any]) -> Choice:
        raise NotImplementedError

    def faithfulness(self, x: Mapping[str, Any]) -> Rating:
        raise NotImplementedError

    def quality(self, x: Mapping[str, Any]) -> Rating:
        raise NotImplementedError


class OverlapJudge(HeuristicJudge):
    """IDF-weighted term coverage (see module docstring)."""

    name = "overlap"

    def alignment(self, x: Mapping[str, Any]) -> Rating:
        w = self._qw(x)
        cov = coverage(w, self.index.terms(x["passage"]))
        missing = sorted((t for t in w if t not in self.index.terms(x["passage"])), key=lambda t: -w[t])[:5]
        r = to_rating(cov)
        return Rating(rationale=f"overlap heuristic: {_pct(cov)} of the question's IDF-weighted terms occur in "
                                f"the passage (missing: {', '.join(missing) or 'none'}) -> {r}.", rating=r)

    def distinguishability(self, x: Mapping[str, Any]) -> Choice:
        w = self._qw(x)
        cands = x["candidates"]
        covs = [coverage(w, self.index.terms(c)) for c in cands]
        k = _pick(covs, [c["doc_id"] for c in cands])
        return Choice(rationale=f"overlap heuristic: candidate [{k}] covers {_pct(covs[k - 1])} of the question's "
                                f"weighted terms (others: {', '.join(_pct(c) for i, c in enumerate(covs) if i != k - 1)}).",
                      choice=k)

    def _answer_cov(self, x: Mapping[str, Any]) -> float:
        present = frozenset().union(*(self.index.terms(p) for p in x["passages"]))
        return coverage(self.index.stats.weights(content_terms(x["answer"])), present)

    def faithfulness(self, x: Mapping[str, Any]) -> Rating:
        cov = self._answer_cov(x)
        r = to_rating(cov)
        return Rating(rationale=f"overlap heuristic: {_pct(cov)} of the answer's IDF-weighted terms occur in the "
                                f"gold passage(s) -> {r}.", rating=r)

    def quality(self, x: Mapping[str, Any]) -> Rating:
        ans = content_terms(x["answer"])
        rel = coverage(self.index.stats.weights(content_terms(x["question"])), frozenset(ans))
        sup = self._answer_cov(x)
        comp = min(1.0, len(set(ans)) / COMPLETE_TERMS)
        s = 0.4 * rel + 0.4 * sup + 0.2 * comp
        r = to_rating(s)
        return Rating(rationale=f"overlap heuristic: question terms echoed {_pct(rel)}, answer terms in passages "
                                f"{_pct(sup)}, completeness {_pct(comp)} -> score {s:.2f} -> {r}.", rating=r)


def _windows(text: str, size: int = 2) -> list[frozenset[str]]:
    sents = [frozenset(content_terms(s)) for s in sentences(text)] or [frozenset()]
    if len(sents) <= size:
        return [frozenset().union(*sents)]
    return [frozenset().union(*sents[i:i + size]) for i in range(len(sents) - size + 1)]


class SupportJudge(HeuristicJudge):
    """Sentence-level support (see module docstring)."""

    name = "support"

    def __init__(self, index: EvidenceIndex) -> None:
        super().__init__(index)
        self._win: dict[str, list[frozenset[str]]] = {}

    def windows(self, p: Mapping[str, Any]) -> list[frozenset[str]]:
        key = p.get("doc_id")
        if key is not None and key in self._win:
            return self._win[key]
        title = frozenset(content_terms(p.get("title") or ""))
        w = [t | title for t in _windows(p["text"])]
        if key is not None:
            self._win[key] = w
        return w

    def _best(self, w: Mapping[str, float], p: Mapping[str, Any]) -> float:
        return max(coverage(w, win) for win in self.windows(p))

    def alignment(self, x: Mapping[str, Any]) -> Rating:
        b = self._best(self._qw(x), x["passage"])
        r = to_rating(b)
        return Rating(rationale=f"support heuristic: the best two-sentence window of the passage covers {_pct(b)} of "
                                f"the question's weighted terms -> {r}.", rating=r)

    def distinguishability(self, x: Mapping[str, Any]) -> Choice:
        w = self._qw(x)
        cands = x["candidates"]
        best = [self._best(w, c) for c in cands]
        k = _pick(best, [c["doc_id"] for c in cands])
        return Choice(rationale=f"support heuristic: candidate [{k}] has the best-supporting window "
                                f"({_pct(best[k - 1])} of the question's weighted terms).", choice=k)

    def _claims(self, x: Mapping[str, Any]) -> tuple[int, int]:
        claims = [c for c in sentences(x["answer"]) if content_terms(c)]
        if not claims:
            return 0, 0
        wins = [win for p in x["passages"] for win in self.windows(p)]
        ok = 0
        for c in claims:
            w = self.index.stats.weights(content_terms(c))
            if max(coverage(w, win) for win in wins) >= CLAIM_SUPPORT:
                ok += 1
        return ok, len(claims)

    def faithfulness(self, x: Mapping[str, Any]) -> Rating:
        ok, n = self._claims(x)
        frac = ok / n if n else 0.0
        r = 5 if n and ok == n else to_rating(frac, (0.01, 0.25, 0.5, 0.75))
        return Rating(rationale=f"support heuristic: {ok} of {n} answer sentence(s) have >= {_pct(CLAIM_SUPPORT)} of "
                                f"their weighted terms inside one passage window -> {r}.", rating=r)

    def quality(self, x: Mapping[str, Any]) -> Rating:
        ok, n = self._claims(x)
        frac = ok / n if n else 0.0
        ans = content_terms(x["answer"])
        rel = coverage(self.index.stats.weights(content_terms(x["question"])), frozenset(ans))
        comp = min(1.0, len(set(ans)) / COMPLETE_TERMS)
        s = 0.5 * frac + 0.3 * rel + 0.2 * comp
        r = to_rating(s)
        return Rating(rationale=f"support heuristic: supported claims {ok}/{n}, question relevance {_pct(rel)}, "
                                f"completeness {_pct(comp)} -> score {s:.2f} -> {r}.", rating=r)


class RetrievalJudge(HeuristicJudge):
    """BM25 scores over the whole corpus (see module docstring)."""

    name = "retrieval"

    def alignment(self, x: Mapping[str, Any]) -> Rating:
        rank = self.index.rank(x["query"], x["passage"]["doc_id"])
        r = rank_rating(rank)
        return Rating(rationale=f"retrieval heuristic: BM25 ranks the passage {rank} of "
                                f"{len(self.index.corpus)} for the turn's query -> {r}.", rating=r)

    def distinguishability(self, x: Mapping[str, Any]) -> Choice:
        cands = x["candidates"]
        sc = [self.index.score(x["query"], c["doc_id"]) for c in cands]
        k = _pick(sc, [c["doc_id"] for c in cands])
        return Choice(rationale=f"retrieval heuristic: candidate [{k}] has the highest BM25 score "
                                f"({sc[k - 1]:.2f}) for the turn's query.", choice=k)

    def _best_rank(self, query: str, x: Mapping[str, Any]) -> int:
        return min(self.index.rank(query, p["doc_id"]) for p in x["passages"])

    def faithfulness(self, x: Mapping[str, Any]) -> Rating:
        rank = self._best_rank(x["answer"], x)
        r = rank_rating(rank)
        return Rating(rationale=f"retrieval heuristic: with the answer as the query, the best gold passage ranks "
                                f"{rank} of {len(self.index.corpus)} -> {r}.", rating=r)

    def quality(self, x: Mapping[str, Any]) -> Rating:
        rank = self._best_rank(f"{x['query']}\n{x['answer']}", x)
        r = rank_rating(rank)
        return Rating(rationale=f"retrieval heuristic (topicality proxy): with question + answer as the query, the "
                                f"best gold passage ranks {rank} of {len(self.index.corpus)} -> {r}.", rating=r)


_CLASSES = {"overlap": OverlapJudge, "support": SupportJudge, "retrieval": RetrievalJudge}


def make_heuristic(name: str, index: EvidenceIndex) -> HeuristicJudge:
    """The heuristic judge called ``name`` (one of :data:`HEURISTICS`) over ``index``."""
    try:
        return _CLASSES[name](index)
    except KeyError:
        raise ValueError(f"unknown heuristic judge {name!r}; choose one of {', '.join(HEURISTICS)}") from None
