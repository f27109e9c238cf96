"""The Parquet tables of an abstention run, written in one place (schemas: :mod:`.schemas`).

:func:`write_tables` writes ``ladder``, ``contexts``, ``content_labels``, ``judge_calls``,
``rule_metrics``, ``per_retriever``, ``agreement``, ``negative_control``, ``near_duplicates``,
``detector_scores``, ``auroc``, ``provenance``, ``comparisons``, ``flips`` and (when the answer
check ran) ``answer_check``. Each table has one row-building function, so a table can be
checked without running the analysis.
"""
from __future__ import annotations

from typing import Sequence

from evaluation.abstention import schemas
from evaluation.abstention.result import AbstentionResult
from storage.store import RunStore


def ladder_rows(res: AbstentionResult) -> list[dict]:
    """One row per rung: position, description, nDCG and recall at the context depth."""
    lad = res.ladder
    return [{"position": i + 1, "retriever": r, "description": lad.descriptions[r], "ndcg": lad.ndcg[r],
             "recall_at_context_k": lad.recall[r], "n_queries": lad.n_queries} for i, r in enumerate(lad.runs)]


def context_table_rows(res: AbstentionResult) -> list[dict]:
    """One row per (retriever, turn) context with its rule label."""
    return [{"retriever": c.retriever, "sample_id": c.sample_id, "conv_id": c.conv_id, "turn": c.turn,
             "answerability": c.answerability, "doc_ids": list(c.doc_ids), "scores": list(c.scores),
             "gold": sorted(c.gold), "rule_unanswerable": c.rule_unanswerable, "top1": c.top1}
            for c in res.contexts]


def content_label_rows(res: AbstentionResult, judge_names: Sequence[str]) -> list[dict]:
    """One row per (context, judge) that has a content label."""
    return [{"retriever": c.retriever, "sample_id": c.sample_id, "judge": j, "label": jm.label,
             "supporting": list(jm.supporting), "reason": jm.reason, "backend": jm.backend, "model": jm.model,
             "failure": jm.failure}
            for c in res.contexts for j in judge_names for jm in [res.judgments[j].get(c.key)] if jm is not None]


def near_duplicate_rows(res: AbstentionResult) -> list[dict]:
    """One row per (retriever, turn, near-duplicate passage)."""
    return [{"retriever": f.retriever, "sample_id": sid, "doc_id": d.doc_id, "qrels_doc": d.qrels_doc,
             "jaccard": d.jaccard} for f in res.near_dup.values() for sid, d in f.pairs]


def detector_score_rows(res: AbstentionResult) -> list[dict]:
    """One row per (detector, retriever, turn); answer-model detectors add P(answerable) and
    the abstain decision."""
    rows = []
    for d, scores in res.detector_scores.items():
        for (r, sid), s in scores.items():
            p = None
            abstains = None
            if d in res.abstain:
                abstains = res.abstain[d].get((r, sid))
                p = 1.0 - s
            rows.append({"retriever": r, "sample_id": sid, "detector": d, "score": s, "p_answerable": p,
                         "abstain": abstains})
    return rows


def provenance_rows(res: AbstentionResult) -> list[dict]:
    """One row per classified passage of a false-miss context."""
    return [{"retriever": p.retriever, "sample_id": p.sample_id, "doc_id": p.doc_id, "cls": p.cls,
             "supporting": p.supporting} for p in res.provenance]


def write_tables(store: RunStore, res: AbstentionResult, judge_names: Sequence[str],
                 call_rows: Sequence[dict]) -> None:
    """Write every Parquet table of ``res`` (module docstring) into ``store``.

    Args:
        store: the run directory.
        res: the analysis result.
        judge_names: the judges, primary first.
        call_rows: one row per LLM call (``judge_calls``).
    """
    def write(name: str, rows: Sequence[dict], schema) -> None:
        store.write_table(name, schemas.to_table(list(rows), schema), schema)

    write("ladder", ladder_rows(res), schemas.LADDER)
    write("contexts", context_table_rows(res), schemas.CONTEXTS)
    write("content_labels", content_label_rows(res, judge_names), schemas.CONTENT_LABELS)
    write("judge_calls", call_rows, schemas.JUDGE_CALLS)
    write("rule_metrics", [{"retriever": r, "judge": j, **m.to_dict()} for (r, j), m in res.rule_metrics.items()],
          schemas.RULE_METRICS)
    write("per_retriever", res.per_retriever, schemas.per_retriever_schema(res.auroc_columns))
    write("agreement", [{"retriever": r, **a.to_dict()} for r, a in res.agreements], schemas.AGREEMENT)
    write("negative_control", [r.to_dict() for r in res.negative_control.values()], schemas.NEGATIVE_CONTROL)
    write("near_duplicates", near_duplicate_rows(res), schemas.NEAR_DUPLICATES)
    write("detector_scores", detector_score_rows(res), schemas.DETECTOR_SCORES)
    write("auroc", res.aurocs, schemas.AUROC)
    write("provenance", provenance_rows(res), schemas.PROVENANCE)
    write("comparisons", [c.to_dict() for c in res.comparisons], schemas.COMPARISONS)
    write("flips", [f.to_dict() for f in res.flips], schemas.FLIPS)
    if res.answer_check is not None:
        write("answer_check", [g.to_dict() for g in res.answer_check], schemas.ANSWER_CHECK)


__all__ = ["content_label_rows", "context_table_rows", "detector_score_rows", "ladder_rows", "near_duplicate_rows",
           "provenance_rows", "write_tables"]
