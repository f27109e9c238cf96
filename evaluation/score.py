"""Verb layer: score an existing TREC run file against a qrels file (like trec_eval).

Used by ``mtr evaluate --run RUN.trec --qrels QRELS.tsv [--per-query OUT.jsonl]``; plain
functions only (no Prefect).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from evaluation.metrics import DEFAULT_KS, DEFAULT_METRICS, EvalResult, Missing, NoRelevant, evaluate
from storage.formats import PathLike, read_qrels, read_trec_run, write_per_query_jsonl


@dataclass(frozen=True)
class ScoreSummary:
    """What :func:`score_run_files` computed.

    Attributes:
        run_path: the run file scored.
        qrels_path: the qrels file used.
        result: per-query values and policies (:class:`evaluation.metrics.EvalResult`).
        per_query_path: where per-query values were written, if requested.
    """

    run_path: Path
    qrels_path: Path
    result: EvalResult
    per_query_path: Path | None = None

    @property
    def means(self) -> dict[str, float]:
        return self.result.means()

    @property
    def missing(self) -> str:
        return self.result.missing

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly summary (means, counts, policies, paths)."""
        r = self.result
        return {"run": str(self.run_path), "qrels": str(self.qrels_path), "missing": r.missing,
                "no_relevant": r.no_relevant, "n_queries": r.n_queries, "n_missing": len(r.missing_qids),
                "n_no_relevant": len(r.no_relevant_qids), "n_run_only": r.n_run_only,
                "means": self.means, "policy": r.policy_note(),
                "per_query": str(self.per_query_path) if self.per_query_path else None}


def score_run_files(run_path: PathLike, qrels_path: PathLike, metrics: Sequence[str] = DEFAULT_METRICS,
                    ks: Sequence[int] = DEFAULT_KS, missing: Missing = "zero",
                    per_query_out: PathLike | None = None, no_relevant: NoRelevant = "score") -> ScoreSummary:
    """Score a TREC run file against qrels with trec_eval semantics.

    Args:
        run_path: TREC run (``qid Q0 doc rank score tag``; ``.gz`` allowed).
        qrels_path: TREC qrels (4 columns) or BEIR qrels TSV (3 columns, header).
        metrics: families and/or measure names (see :func:`evaluation.metrics.expand_measures`).
        ks: cutoffs for the families.
        missing: ``"zero"`` (default; qrels queries absent from the run score 0) or ``"skip"``.
        per_query_out: write per-query values here as JSON lines: one object per scored
            query, ``{"qid", "in_run", <measure>: value, ...}`` with pytrec_eval names
            (``in_run`` is false for a qrels query the run does not list).
        no_relevant: ``"score"`` (trec_eval) or ``"skip"`` for queries without relevant docs.

    Returns:
        The :class:`ScoreSummary`.

    Raises:
        FileNotFoundError: a file does not exist.
        storage.formats.FormatError: a malformed line (message names file and line).
        ValueError: bad measures/policies, or run and qrels share no query id.
    """
    run = read_trec_run(run_path)
    qrels = read_qrels(qrels_path)
    result = evaluate(qrels, run, metrics=metrics, ks=ks, missing=missing, no_relevant=no_relevant)
    out = None
    if per_query_out is not None:
        absent = set(result.missing_qids)
        rows = {qid: {"in_run": qid not in absent, **values} for qid, values in result.per_query.items()}
        out = write_per_query_jsonl(rows, per_query_out)
    return ScoreSummary(run_path=Path(run_path), qrels_path=Path(qrels_path), result=result, per_query_path=out)
