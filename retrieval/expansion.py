"""Query expansion: N expansions per query, from an LLM hook or offline pseudo-relevance feedback.

Two backends, and every result says which one produced it (``expansion_backend``):

* ``"llm"``: any callable ``llm(query) -> list[str]`` (e.g. the LLM layer in ``agents/``
  asked for a hypothetical answer passage first, then paraphrases); the first
  ``n_expansions`` non-empty strings are used.
* ``"prf"`` (offline, deterministic, the default when no LLM hook is given): RM3-style
  pseudo-relevance feedback. The query's top ``feedback_docs`` BM25 documents give term
  weights ``w(t) = sum_d score(d) * tf(t, d) / |d|`` (the relevance model with BM25 scores as
  document weights, as Anserini's RM3 does); English stopwords, one-character tokens and
  the query's own terms are skipped; terms are ranked by weight (ties alphabetically). The
  ``N * feedback_terms`` best terms are cut into ``N`` groups and expansion ``j`` is the
  original query followed by group ``j``.

:class:`ExpansionRetriever` searches the original query and each expansion with a base
retriever and fuses the lists (RRF by default) through :mod:`retrieval.fusion`.
"""
from __future__ import annotations

from collections import Counter
from typing import Callable, Mapping, Sequence

from common.text import bm25_stopwords
from common.types import Run

from .base import Doc, RetrievalError, Retriever, check_docs, check_k
from .bm25 import BM25Retriever
from .fusion import fuse
from .registry import indexed_retriever

LLMExpander = Callable[[str], list[str]]
_SEP = "\x1f"


class QueryExpander:
    """Produce ``n_expansions`` expansion strings per query.

    Args:
        n_expansions: expansions per query (N >= 1).
        llm: LLM hook ``llm(query) -> list[str]``; ``None`` selects the offline PRF backend.
        llm_name: label recorded for the LLM backend (default: the callable's name).
        feedback_docs: PRF: top BM25 documents used as feedback (m).
        feedback_terms: PRF: terms per expansion.
        feedback_retriever: PRF: a BM25Retriever to reuse (else one is built by :meth:`index`).
    """

    def __init__(self, n_expansions: int = 1, llm: LLMExpander | None = None, llm_name: str | None = None,
                 feedback_docs: int = 10, feedback_terms: int = 10, feedback_retriever=None):
        if n_expansions < 1:
            raise RetrievalError(f"n_expansions must be >= 1, got {n_expansions}")
        if llm is not None and not callable(llm):
            raise RetrievalError("llm must be a callable llm(query) -> list[str]")
        self.n_expansions = int(n_expansions)
        self.llm = llm
        self.llm_name = llm_name or (getattr(llm, "__name__", type(llm).__name__) if llm else None)
        self.feedback_docs = check_k(feedback_docs)
        self.feedback_terms = check_k(feedback_terms)
        self._fb = feedback_retriever
        self._texts: dict[str, str] | None = None
        self.stats = {"queries": 0, "expansions": 0, "short": 0}

    @property
    def backend(self) -> str:
        return "llm" if self.llm is not None else "prf"

    def describe(self) -> dict:
        d = {"expansion_backend": self.backend, "n_expansions": self.n_expansions, **self.stats}
        if self.llm is not None:
            d["llm"] = self.llm_name
        else:
            d.update(feedback_docs=self.feedback_docs, feedback_terms=self.feedback_terms,
                     feedback_model="rm3-bm25")
        return d

    def index(self, docs: Sequence[Doc], feedback_retriever=None) -> "QueryExpander":
        """PRF needs the corpus (feedback texts and a BM25 index); a no-op for the LLM backend."""
        if self.llm is not None:
            return self
        ids, texts = check_docs(docs)
        self._texts = dict(zip(ids, texts))
        if feedback_retriever is not None:
            self._fb = feedback_retriever
        if self._fb is None or not getattr(self._fb, "doc_ids", None) or set(self._fb.doc_ids) != set(ids):
            self._fb = indexed_retriever("bm25", list(zip(ids, texts)))
        return self

    # -- backends ------------------------------------------------------------------------
    def _expand_llm(self, qid: str, text: str) -> list[str]:
        try:
            out = self.llm(text)
        except Exception as exc:  # noqa: BLE001 - name the query, keep the cause
            raise RetrievalError(f"LLM expansion failed for query {qid!r}: {type(exc).__name__}: {exc}") from exc
        if isinstance(out, str) or not isinstance(out, (list, tuple)):
            raise RetrievalError(f"LLM expansion for {qid!r} returned {type(out).__name__}, expected list[str]")
        exps = [e.strip() for e in out if isinstance(e, str) and e.strip()]
        return exps[:self.n_expansions]

    def feedback_terms_for(self, text: str) -> list[tuple[str, float]]:
        """RM3 term weights from the top feedback documents, best first (PRF backend)."""
        if self._fb is None or self._texts is None:
            raise RetrievalError("PRF expansion needs the corpus: call index(docs) first")
        stop = bm25_stopwords()
        tok = self._fb.tokenizer
        qterms = set(tok(text))
        top = self._fb.search({"q": text}, self.feedback_docs)["q"]
        weights: Counter = Counter()
        for doc_id, score in top.items():
            toks = tok(self._texts[doc_id])
            if not toks:
                continue
            tf = Counter(toks)
            n = len(toks)
            for t, c in tf.items():
                if len(t) < 2 or t in stop or t in qterms:
                    continue
                weights[t] += score * c / n
        return sorted(weights.items(), key=lambda kv: (-kv[1], kv[0]))

    def _expand_prf(self, text: str) -> list[str]:
        terms = [t for t, _ in self.feedback_terms_for(text)[:self.n_expansions * self.feedback_terms]]
        T = self.feedback_terms
        groups = [terms[i:i + T] for i in range(0, len(terms), T)]
        return [f"{text} {' '.join(g)}" for g in groups if g]

    def expand(self, queries: Mapping[str, str]) -> dict[str, list[str]]:
        """``{qid: [expansion, ...]}`` (at most ``n_expansions`` each; fewer counted as ``short``)."""
        out: dict[str, list[str]] = {}
        for qid, text in queries.items():
            exps = self._expand_llm(qid, text) if self.llm is not None else self._expand_prf(text)
            out[qid] = exps
            self.stats["queries"] += 1
            self.stats["expansions"] += len(exps)
            self.stats["short"] += int(len(exps) < self.n_expansions)
        return out


class ExpansionRetriever:
    """Search the original query plus its expansions with ``base`` and fuse the lists.

    Args:
        base: the retriever used for every variant.
        expander: a :class:`QueryExpander` (default: PRF with one expansion).
        fusion: ``"rrf"`` (default) or ``"minmax"``.
        include_original: also search the unexpanded query.
        depth: documents per variant before fusion (at least ``k``).
    """

    name = "expansion"

    def __init__(self, base: Retriever, expander: QueryExpander | None = None, fusion: str = "rrf",
                 include_original: bool = True, depth: int = 100, rrf_k: int = 60):
        self.base = base
        self.expander = expander or QueryExpander()
        if fusion not in ("rrf", "minmax"):
            raise RetrievalError(f"unknown fusion {fusion!r}")
        self.fusion = fusion
        self.include_original = include_original
        self.depth = check_k(depth)
        self.rrf_k = rrf_k
        self.last_expansions: dict[str, list[str]] = {}

    def describe(self) -> dict:
        return {"retriever": self.name, "fusion": self.fusion, "include_original": self.include_original,
                "depth": self.depth, **self.expander.describe(),
                "base": self.base.describe() if hasattr(self.base, "describe") else type(self.base).__name__}

    def index(self, docs: Sequence[Doc]) -> "ExpansionRetriever":
        docs = list(docs)
        self.base.index(docs)
        fb = self.base if isinstance(self.base, BM25Retriever) else None
        self.expander.index(docs, feedback_retriever=fb)
        return self

    def search(self, queries: Mapping[str, str], k: int = 10) -> Run:
        k = check_k(k)
        exps = self.expander.expand(queries)
        self.last_expansions = exps
        variants: list[dict[str, str]] = []
        if self.include_original:
            variants.append(dict(queries))
        n = max((len(v) for v in exps.values()), default=0)
        for j in range(n):
            variants.append({q: e[j] for q, e in exps.items() if len(e) > j})
        flat = {f"{q}{_SEP}{j}": t for j, v in enumerate(variants) for q, t in v.items()}
        big = self.base.search(flat, max(self.depth, k)) if flat else {}
        runs: list[Run] = [{} for _ in variants]
        for key, res in big.items():
            q, j = key.rsplit(_SEP, 1)
            runs[int(j)][q] = res
        fused = fuse(runs, method=self.fusion, depth=k, rrf_k=self.rrf_k) if runs else {}
        for q in queries:
            fused.setdefault(q, {})
        return fused
