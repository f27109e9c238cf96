"""Retrieval metrics with trec_eval semantics: Recall@k, nDCG@k, MRR@k, P@k.

Measure names follow pytrec_eval so per-query values can be compared key by key:

=================  ==============================  ==========================================
name               meaning                         pytrec_eval equivalent
=================  ==============================  ==========================================
``recall_k``       Recall@k                        ``recall.k`` → ``recall_k``
``ndcg_cut_k``     nDCG@k (graded gains)           ``ndcg_cut.k`` → ``ndcg_cut_k``
``P_k``            Precision@k                     ``P.k`` → ``P_k``
``recip_rank_k``   MRR@k (reciprocal rank, top k)  ``recip_rank`` on the run cut to its top k
``recip_rank``     reciprocal rank, no cutoff      ``recip_rank``
=================  ==============================  ==========================================

Ranking: per query, documents are sorted by score descending with ties broken by doc id
descending (the run file's rank column is ignored); see :mod:`evaluation.ranking`.

Which queries are scored (and averaged):

* Queries are taken from the **qrels**; run queries without qrels are ignored.
* ``missing="zero"`` (default): a qrels query absent from the run scores 0 on every measure
  and counts in the means. This reproduces the official MTRAG numbers (queries that retrieved
  nothing cannot appear in a TREC run file but are in the official means).
  ``missing="skip"``: such queries are left out (pytrec_eval's behaviour).
* ``no_relevant="score"`` (default): a qrels query whose judgments are all below grade 1 is
  scored like any other (every measure is 0), exactly as trec_eval and pytrec_eval do when
  the run has the query. ``no_relevant="skip"`` leaves such queries out.

Every :class:`EvalResult` carries these choices and :meth:`EvalResult.policy_note` states them.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Literal, Mapping, Sequence

import numpy as np

from common.types import Qrels, Run
from evaluation.ndcg import ndcg_at_k
from evaluation.precision import precision_at_k
from evaluation.ranking import RELEVANCE_LEVEL, RankedJudgments, rank_judgments
from evaluation.recall import recall_at_k
from evaluation.reciprocal_rank import reciprocal_rank_at_k

Missing = Literal["zero", "skip"]
NoRelevant = Literal["score", "skip"]

DEFAULT_KS: tuple[int, ...] = (1, 3, 5, 10, 20)
#: Families expanded over ``ks`` by default (MRR@k is named ``recip_rank_k``).
DEFAULT_METRICS: tuple[str, ...] = ("recall", "ndcg_cut", "mrr", "P")
MISSING_POLICIES: tuple[str, ...] = ("zero", "skip")
NO_RELEVANT_POLICIES: tuple[str, ...] = ("score", "skip")

#: measure family -> function(ranked, k) -> per-query values
FAMILIES: dict[str, Callable[[RankedJudgments, int], np.ndarray]] = {
    "recall": recall_at_k,
    "ndcg_cut": ndcg_at_k,
    "recip_rank": reciprocal_rank_at_k,
    "P": precision_at_k,
}
#: names accepted in ``metrics`` that expand to one measure per k
FAMILY_ALIASES: dict[str, str] = {
    "recall": "recall", "r": "recall",
    "ndcg_cut": "ndcg_cut", "ndcg": "ndcg_cut",
    "mrr": "recip_rank", "recip_rank_cut": "recip_rank",
    "P": "P", "p": "P", "precision": "P",
}
FAMILY_LABELS: dict[str, str] = {"recall": "Recall", "ndcg_cut": "nDCG", "recip_rank": "MRR", "P": "P"}
_MEASURE_RE = re.compile(r"^(recall|ndcg_cut|recip_rank|P)_([1-9][0-9]*)$")


def parse_measure(name: str) -> tuple[str, int | None]:
    """Split a measure name into ``(family, k)``.

    Args:
        name: e.g. ``"ndcg_cut_5"``, ``"recip_rank_10"``, ``"recip_rank"``.

    Returns:
        ``(family, k)``; ``k`` is ``None`` for the uncut ``recip_rank``.

    Raises:
        ValueError: an unknown measure name.
    """
    if name == "recip_rank":
        return "recip_rank", None
    m = _MEASURE_RE.match(name)
    if not m:
        raise ValueError(f"unknown measure {name!r}; use recall_K, ndcg_cut_K, P_K, recip_rank_K "
                         f"or recip_rank, or a family ({', '.join(sorted(FAMILY_ALIASES))})")
    return m.group(1), int(m.group(2))


def measure_label(name: str) -> str:
    """Human label of a measure: ``ndcg_cut_5`` → ``nDCG@5``, ``recip_rank`` → ``MRR``."""
    family, k = parse_measure(name)
    return FAMILY_LABELS[family] + ("" if k is None else f"@{k}")


def expand_measures(metrics: Sequence[str] = DEFAULT_METRICS, ks: Sequence[int] = DEFAULT_KS) -> tuple[str, ...]:
    """Expand families over ``ks`` and validate exact names; duplicates are dropped.

    Args:
        metrics: families (``recall``, ``ndcg_cut``/``ndcg``, ``mrr``, ``P``/``precision``)
            and/or exact measure names (``ndcg_cut_5``, ``recip_rank``).
        ks: cutoffs for the families.

    Returns:
        Measure names in request order (families: in ``ks`` order).

    Raises:
        ValueError: unknown names or non-positive cutoffs.
    """
    if isinstance(metrics, str):
        metrics = [metrics]
    bad = [k for k in ks if not isinstance(k, (int, np.integer)) or k < 1]
    if bad:
        raise ValueError(f"cutoffs must be positive integers, got {bad}")
    out: list[str] = []
    for name in metrics:
        family = FAMILY_ALIASES.get(name)
        if family is not None and name != "recip_rank":
            names = [f"{family}_{int(k)}" for k in ks]
        else:
            parse_measure(name)
            names = [name]
        out.extend(n for n in names if n not in out)
    if not out:
        raise ValueError("no measures requested")
    return tuple(out)


@dataclass(frozen=True)
class EvalResult:
    """Per-query metric values of one run plus the choices that produced them.

    Attributes:
        qids: scored queries, in qrels order.
        measures: measure names, one column of ``values`` each.
        values: ``(n_queries, n_measures)`` float array.
        missing: the missing-query policy used (``zero`` or ``skip``).
        no_relevant: the policy for qrels queries without relevant documents.
        missing_qids: qrels queries absent from the run (scored 0 under ``zero``, left out
            under ``skip``).
        no_relevant_qids: qrels queries without any document of grade >= 1.
        n_run_only: run queries without qrels (always ignored).
    """

    qids: tuple[str, ...]
    measures: tuple[str, ...]
    values: np.ndarray
    missing: str
    no_relevant: str
    missing_qids: tuple[str, ...]
    no_relevant_qids: tuple[str, ...]
    n_run_only: int

    @property
    def n_queries(self) -> int:
        return len(self.qids)

    @cached_property
    def per_query(self) -> dict[str, dict[str, float]]:
        """pytrec_eval-shaped ``{qid: {measure: value}}`` (built once; do not mutate)."""
        return {qid: dict(zip(self.measures, map(float, row))) for qid, row in zip(self.qids, self.values)}

    def column(self, measure: str) -> np.ndarray:
        """Per-query values of one measure (aligned with :attr:`qids`)."""
        try:
            return self.values[:, self.measures.index(measure)]
        except ValueError:
            raise KeyError(f"measure {measure!r} was not computed (have: {', '.join(self.measures)})") from None

    def series(self, measure: str) -> dict[str, float]:
        """``{qid: value}`` of one measure."""
        return dict(zip(self.qids, map(float, self.column(measure))))

    def means(self) -> dict[str, float]:
        """Mean of every measure over the scored queries (NaN when no query was scored)."""
        if not self.qids:
            return {m: math.nan for m in self.measures}
        return dict(zip(self.measures, map(float, self.values.mean(axis=0))))

    def policy_note(self) -> str:
        """One sentence stating how missing and relevance-free queries were handled."""
        n_missing = len(self.missing_qids)
        if self.missing == "zero":
            text = (f"Queries missing from the run were scored 0 and included in the means "
                    f"(missing=\"zero\"; {n_missing} missing)")
        else:
            text = (f"Queries missing from the run were left out of the means "
                    f"(missing=\"skip\"; {n_missing} missing)")
        n_norel = len(self.no_relevant_qids)
        if n_norel:
            how = "scored (all measures 0)" if self.no_relevant == "score" else "left out"
            text += f"; {n_norel} qrels queries without relevant documents were {how}"
        return text + "."

    def subset(self, qids: Sequence[str]) -> "EvalResult":
        """The same result restricted to ``qids`` (unknown ids are ignored)."""
        index = {q: i for i, q in enumerate(self.qids)}
        rows = [index[q] for q in qids if q in index]
        keep = set(self.qids[i] for i in rows)
        return EvalResult(qids=tuple(self.qids[i] for i in rows), measures=self.measures,
                          values=self.values[rows], missing=self.missing, no_relevant=self.no_relevant,
                          missing_qids=tuple(q for q in self.missing_qids if q in keep),
                          no_relevant_qids=tuple(q for q in self.no_relevant_qids if q in keep),
                          n_run_only=self.n_run_only)


def evaluate(qrels: Mapping[str, Mapping[str, int]], run: Mapping[str, Mapping[str, float]],
             metrics: Sequence[str] = DEFAULT_METRICS, ks: Sequence[int] = DEFAULT_KS,
             missing: Missing = "zero", no_relevant: NoRelevant = "score") -> EvalResult:
    """Score a run against qrels with trec_eval semantics.

    Args:
        qrels: ``{qid: {doc_id: grade}}``.
        run: ``{qid: {doc_id: score}}`` (any order; ranks are derived from the scores).
        metrics: families and/or exact measure names, see :func:`expand_measures`.
        ks: cutoffs for the families.
        missing: ``"zero"`` (score qrels queries absent from the run as 0, included in
            means) or ``"skip"`` (leave them out, like pytrec_eval).
        no_relevant: ``"score"`` (trec_eval) or ``"skip"`` for qrels queries without a
            relevant document.

    Returns:
        The :class:`EvalResult`.

    Raises:
        ValueError: unknown measure or policy, or a non-empty run that shares no query with
            the qrels (almost always mismatched files or id formats).
    """
    if missing not in MISSING_POLICIES:
        raise ValueError(f"missing must be one of {MISSING_POLICIES}, got {missing!r}")
    if no_relevant not in NO_RELEVANT_POLICIES:
        raise ValueError(f"no_relevant must be one of {NO_RELEVANT_POLICIES}, got {no_relevant!r}")
    measures = expand_measures(metrics, ks)
    parsed = [parse_measure(m) for m in measures]

    if any(run.values()) and not any(q in qrels for q in run):
        sample_run = ", ".join(repr(q) for q in list(run)[:2])
        sample_qrels = ", ".join(repr(q) for q in list(qrels)[:2])
        raise ValueError(f"the run and the qrels share no query id (run: {sample_run}; qrels: {sample_qrels})")

    no_rel = tuple(q for q, docs in qrels.items() if not any(g >= RELEVANCE_LEVEL for g in docs.values()))
    skip = set(no_rel) if no_relevant == "skip" else set()
    missing_qids = tuple(q for q in qrels if q not in run and q not in skip)
    if missing == "skip":
        skip.update(missing_qids)
    qids = [q for q in qrels if q not in skip]

    depth = max((k for _, k in parsed if k is not None), default=1)
    ranked = rank_judgments(qrels, run, qids, depth)
    values = np.zeros((len(qids), len(measures)), dtype=np.float64)
    for j, (family, k) in enumerate(parsed):
        values[:, j] = FAMILIES[family](ranked, k)
    return EvalResult(qids=tuple(qids), measures=measures, values=values, missing=missing,
                      no_relevant=no_relevant, missing_qids=missing_qids, no_relevant_qids=no_rel,
                      n_run_only=sum(1 for q in run if q not in qrels))
