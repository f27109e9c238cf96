"""Step 1: the retriever ladder, from weak to strong, with nDCG@10 per rung.

Rungs (any number, in the order given; weakest first):

* ``bm25-turn``: BM25 on the current user turn only.
* ``bm25-history``: BM25 on the current turn plus the conversation history (user and
  assistant turns, oldest first; :mod:`retrieval.queries` ``full_history``).
* ``bm25-rewrite``: BM25 on the benchmark's standalone rewrite (the turn when none).
* ``fusion``: ``n_expansions`` expansions of the query (an LLM's, the first a hypothetical
  answer passage, HyDE-style; offline: RM3 pseudo-relevance feedback, see
  :mod:`retrieval.expansion`) each run through BM25; in each list the scores are min-max
  scaled to [0, 1] over that list's candidates (max -> 1, min -> 0; a list whose scores are
  all equal, e.g. a single candidate, gives 1.0 to each) and the per-document sum ranks the
  fused list (:func:`retrieval.fusion.minmax_fusion`).
* ``hybrid``: the fusion lists plus one dense list, in the same normalise-and-sum scheme.
* ``dense``: the dense retriever alone (``dense_query``).
* ``<retriever>:<mode>``: any retriever of :func:`retrieval.build_retriever` (``bm25``,
  ``dense``, ``hybrid``, ``rrf``) with any query mode of :mod:`retrieval.queries`
  (``last_turn``, ``all_user_turns``, ``full_history``, ``rewrite``), e.g. ``rrf:rewrite``.

One BM25 index and (when needed) one dense index serve every rung. Each rung's run holds
the top ``eval_k`` documents per turn in trec_eval order.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from common.types import Run
from evaluation.abstention.config import AbstentionConfig
from evaluation.metrics import evaluate
from retrieval.base import cut_run
from retrieval.expansion import QueryExpander
from retrieval.fusion import minmax_fusion
from retrieval.queries import QueryBuilder
from retrieval.registry import indexed_retriever
from storage.benchmark import Benchmark, BenchTurn

NAMED_RUNGS = {
    "bm25-turn": "BM25 on the current turn",
    "bm25-history": "BM25 on the current turn plus the conversation history",
    "bm25-rewrite": "BM25 on the benchmark's standalone rewrite",
    "fusion": "BM25 over {n} query expansions ({backend}), per-list min-max + sum",
    "hybrid": "fusion lists + one dense list ({model}), per-list min-max + sum",
    "dense": "dense retriever ({model}) on the {query} query",
}
GENERIC_RETRIEVERS = ("bm25", "dense", "hybrid", "rrf")
QUERY_MODES = ("last_turn", "all_user_turns", "full_history", "rewrite")


class LadderError(ValueError):
    """A rung name or setting is invalid."""


@dataclass(frozen=True, slots=True)
class RungSpec:
    name: str
    retriever: str        # bm25 | dense | fusion | hybrid | rrf | hybrid-minmax
    query_mode: str | None = None

    @property
    def needs_dense(self) -> bool:
        return self.retriever in ("dense", "hybrid", "rrf", "hybrid-generic")

    @property
    def needs_expansions(self) -> bool:
        return self.name in ("fusion", "hybrid")


def parse_rung(name: str) -> RungSpec:
    """The :class:`RungSpec` of a rung name (see module docstring).

    Raises:
        LadderError: unknown rung.
    """
    n = name.strip()
    if n in ("bm25-turn", "bm25-history", "bm25-rewrite"):
        return RungSpec(n, "bm25", {"bm25-turn": "last_turn", "bm25-history": "full_history",
                                    "bm25-rewrite": "rewrite"}[n])
    if n == "fusion":
        return RungSpec(n, "fusion")
    if n == "hybrid":
        return RungSpec(n, "hybrid")
    if n == "dense":
        return RungSpec(n, "dense")
    if ":" in n:
        r, _, mode = n.partition(":")
        if r in GENERIC_RETRIEVERS and mode in QUERY_MODES:
            return RungSpec(n, "hybrid-generic" if r == "hybrid" else r, mode)
    raise LadderError(f"unknown retriever {name!r}; use {', '.join(NAMED_RUNGS)} or "
                      f"<{'|'.join(GENERIC_RETRIEVERS)}>:<{'|'.join(QUERY_MODES)}>")


@dataclass
class LadderResult:
    """Runs and effectiveness of every rung.

    Attributes:
        runs: ``{rung: {sample_id: {doc_id: score}}}``, top ``eval_k`` each.
        ndcg: ``{rung: mean nDCG@eval_k}`` over the analysed turns that have qrels.
        recall: ``{rung: mean Recall@context_k}`` over the same turns.
        n_queries: turns scored for nDCG.
        descriptions: one line per rung.
        expansions: ``{sample_id: [expansion, ...]}`` used by fusion/hybrid (empty otherwise).
        expansion_backend: ``prf`` or ``llm:<name>``.
    """

    runs: dict[str, Run]
    ndcg: dict[str, float]
    recall: dict[str, float]
    n_queries: int
    descriptions: dict[str, str]
    expansions: dict[str, list[str]] = field(default_factory=dict)
    expansion_backend: str | None = None


def query_text(turn: BenchTurn, mode: str) -> str:
    """The query of ``turn`` for a query mode (``rewrite`` falls back to ``full_history``)."""
    if mode == "history":
        mode = "full_history"
    if mode == "rewrite" and not turn.rewrite:
        mode = "full_history"
    return QueryBuilder(mode=mode).build(turn.messages(), rewrite=turn.rewrite if mode == "rewrite" else None)


def _queries(turns: Sequence[BenchTurn], mode: str) -> dict[str, str]:
    return {t.sample_id: query_text(t, mode) for t in turns}


class Ladder:
    """Builds the shared indexes once and runs rungs on the analysed turns.

    Args:
        benchmark: the benchmark (its whole corpus is indexed).
        turns: the turns to retrieve for.
        config: the analysis config.
        cache_dir: embedding cache folder (dense rungs).
    """

    def __init__(self, benchmark: Benchmark, turns: Sequence[BenchTurn], config: AbstentionConfig,
                 cache_dir: str | Path | None = None) -> None:
        self.benchmark = benchmark
        self.turns = list(turns)
        self.config = config
        self.cache_dir = cache_dir
        self.docs = [(d, doc.default_text()) for d, doc in benchmark.corpus.items()]
        self._bm25 = None
        self._dense = None
        self._dense_queries: dict[str, str] | None = None
        self.specs = [parse_rung(r) for r in config.retrievers]

    @property
    def bm25(self):
        if self._bm25 is None:
            self._bm25 = indexed_retriever("bm25", self.docs)
        return self._bm25

    @property
    def dense(self):
        if self._dense is None:
            self._dense = indexed_retriever("dense", self.docs, model=self.config.dense_model,
                                            cache_dir=self.cache_dir)
        return self._dense

    def dense_queries(self) -> dict[str, str]:
        if self._dense_queries is None:
            mode = self.config.dense_query
            if mode == "history":
                qb = QueryBuilder.for_encoder("full_history", self.config.dense_model)
                self._dense_queries = {t.sample_id: qb.build(t.messages()) for t in self.turns}
            else:
                self._dense_queries = _queries(self.turns, mode)
        return self._dense_queries

    @property
    def needs_expansions(self) -> bool:
        return any(s.needs_expansions for s in self.specs)

    def prf_expansions(self) -> dict[str, list[str]]:
        """Offline expansions: RM3 pseudo-relevance feedback from the ``prf_query``."""
        exp = QueryExpander(n_expansions=self.config.n_expansions, feedback_retriever=self.bm25)
        exp.index(self.docs, feedback_retriever=self.bm25)
        return exp.expand(_queries(self.turns, self.config.prf_query))

    def expansion_runs(self, expansions: Mapping[str, Sequence[str]]) -> list[Run]:
        """One BM25 list per expansion slot (a turn with fewer expansions is absent from later slots)."""
        n = max((len(v) for v in expansions.values()), default=0)
        runs: list[Run] = []
        for j in range(n):
            qs = {q: e[j] for q, e in expansions.items() if len(e) > j and e[j].strip()}
            runs.append(self.bm25.search(qs, self.config.depth) if qs else {})
        return runs

    def run(self, expansions: Mapping[str, Sequence[str]] | None = None,
            expansion_backend: str = "prf") -> LadderResult:
        """Run every rung; ``expansions`` (LLM-written) are required for fusion/hybrid unless
        the backend is ``prf``."""
        cfg = self.config
        k = cfg.eval_k
        exp_runs: list[Run] = []
        used: dict[str, list[str]] = {}
        if self.needs_expansions:
            if expansions is None:
                if expansion_backend != "prf":
                    raise LadderError("fusion/hybrid need LLM expansions; none were given")
                expansions = self.prf_expansions()
            used = {q: list(v) for q, v in expansions.items()}
            missing = [t.sample_id for t in self.turns if t.sample_id not in used]
            if missing:
                raise LadderError(f"no expansions for {len(missing)} turns (e.g. {missing[0]!r})")
            exp_runs = self.expansion_runs(used)
        model_name = cfg.dense_model or "bundled MiniLM"
        runs: dict[str, Run] = {}
        desc: dict[str, str] = {}
        for spec in self.specs:
            if spec.name in ("fusion", "hybrid"):
                lists = list(exp_runs)
                if spec.name == "hybrid":
                    lists.append(self.dense.search(self.dense_queries(), cfg.depth))
                run = minmax_fusion(lists, depth=k) if lists else {}
            elif spec.name == "dense":
                run = self.dense.search(self.dense_queries(), k)
            elif spec.retriever == "bm25":
                run = self.bm25.search(_queries(self.turns, spec.query_mode), k)
            elif spec.retriever == "dense":
                run = self.dense.search(_queries(self.turns, spec.query_mode), k)
            else:  # hybrid-generic (min-max) or rrf over BM25 + dense
                h = indexed_retriever(spec.retriever, self.docs, bm25=self.bm25, dense=self.dense, depth=cfg.depth)
                run = h.search(_queries(self.turns, spec.query_mode), k)
            for t in self.turns:
                run.setdefault(t.sample_id, {})
            runs[spec.name] = cut_run(run, k)
            template = NAMED_RUNGS.get(spec.name)
            desc[spec.name] = (template.format(n=cfg.n_expansions, backend=expansion_backend, model=model_name,
                                               query=cfg.dense_query)
                               if template else f"{spec.retriever} on {spec.query_mode} queries")
        qrels = {t.sample_id: {d: g for d, g in t.gold.items()} for t in self.turns
                 if any(g >= 1 for g in t.gold.values())}
        ndcg: dict[str, float] = {}
        recall: dict[str, float] = {}
        m_ndcg, m_rec = f"ndcg_cut_{k}", f"recall_{cfg.context_k}"
        for name, run in runs.items():
            if qrels:
                res = evaluate(qrels, run, metrics=[m_ndcg, m_rec], ks=[k])
                means = res.means()
                ndcg[name], recall[name] = means[m_ndcg], means[m_rec]
            else:
                ndcg[name] = recall[name] = float("nan")
        return LadderResult(runs=runs, ndcg=ndcg, recall=recall, n_queries=len(qrels), descriptions=desc,
                            expansions=used, expansion_backend=expansion_backend if used else None)


__all__ = ["Ladder", "LadderError", "LadderResult", "RungSpec", "parse_rung", "query_text"]
