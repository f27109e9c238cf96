"""Explicit pyarrow schemas of the tables ``mtr abstention`` writes into its run directory.

The per-retriever summary has one AUROC column per (detector, labelling) and is built with
:func:`per_retriever_schema`; every other table is fixed.
"""
from __future__ import annotations

from typing import Sequence

import pyarrow as pa

from storage.schemas import table_from_rows

LADDER = pa.schema([
    ("position", pa.int32()), ("retriever", pa.string()), ("description", pa.string()),
    ("ndcg", pa.float64()), ("recall_at_context_k", pa.float64()), ("n_queries", pa.int64()),
])

CONTEXTS = pa.schema([
    ("retriever", pa.string()), ("sample_id", pa.string()), ("conv_id", pa.string()), ("turn", pa.int32()),
    ("answerability", pa.string()), ("doc_ids", pa.list_(pa.string())), ("scores", pa.list_(pa.float64())),
    ("gold", pa.list_(pa.string())), ("rule_unanswerable", pa.bool_()), ("top1", pa.float64()),
])

CONTENT_LABELS = pa.schema([
    ("retriever", pa.string()), ("sample_id", pa.string()), ("judge", pa.string()), ("label", pa.string()),
    ("supporting", pa.list_(pa.string())), ("reason", pa.string()), ("backend", pa.string()),
    ("model", pa.string()), ("failure", pa.string()),
])

JUDGE_CALLS = pa.schema([
    ("purpose", pa.string()), ("judge", pa.string()), ("item_id", pa.string()), ("step", pa.string()),
    ("role", pa.string()), ("backend", pa.string()), ("prompt_version", pa.string()), ("model", pa.string()),
    ("endpoint", pa.string()), ("ok", pa.bool_()), ("output_json", pa.string()), ("failure_json", pa.string()),
    ("raw_prompt_json", pa.string()), ("raw_output", pa.string()), ("prompt_tokens", pa.int64()),
    ("completion_tokens", pa.int64()), ("cache_hit", pa.bool_()), ("call_ids", pa.list_(pa.string())),
])

RULE_METRICS = pa.schema([
    ("retriever", pa.string()), ("judge", pa.string()), ("n_contexts", pa.int64()), ("n_judged", pa.int64()),
    ("rule_unanswerable", pa.int64()), ("content_unanswerable", pa.int64()), ("content_partial", pa.int64()),
    ("rule_unanswerable_judged", pa.int64()), ("false_miss_yes", pa.float64()),
    ("false_miss_yes_partial", pa.float64()), ("precision", pa.float64()),
    ("precision_partial_answerable", pa.float64()), ("recall", pa.float64()), ("false_positive_rate", pa.float64()),
    ("youden_j", pa.float64()), ("youden_j_partial_answerable", pa.float64()), ("abstention_rule", pa.float64()),
    ("abstention_content", pa.float64()),
])

AGREEMENT = pa.schema([
    ("retriever", pa.string()), ("judge_a", pa.string()), ("judge_b", pa.string()), ("n", pa.int64()),
    ("raw_agreement", pa.float64()), ("kappa", pa.float64()), ("kappa_yes_vs_rest", pa.float64()),
])

NEGATIVE_CONTROL = pa.schema([
    ("judge", pa.string()), ("n", pa.int64()), ("n_yes", pa.int64()), ("n_partial", pa.int64()),
    ("n_no", pa.int64()), ("n_failed", pa.int64()), ("yes_rate", pa.float64()), ("yes_partial_rate", pa.float64()),
    ("ceiling", pa.float64()), ("unfit", pa.bool_()),
])

NEAR_DUPLICATES = pa.schema([
    ("retriever", pa.string()), ("sample_id", pa.string()), ("doc_id", pa.string()), ("qrels_doc", pa.string()),
    ("jaccard", pa.float64()),
])

DETECTOR_SCORES = pa.schema([
    ("retriever", pa.string()), ("sample_id", pa.string()), ("detector", pa.string()), ("score", pa.float64()),
    ("p_answerable", pa.float64()), ("abstain", pa.bool_()),
])

AUROC = pa.schema([
    ("retriever", pa.string()), ("detector", pa.string()), ("labelling", pa.string()), ("auroc", pa.float64()),
    ("n_pos", pa.int64()), ("n_neg", pa.int64()), ("p_value", pa.float64()),
])

PROVENANCE = pa.schema([
    ("retriever", pa.string()), ("sample_id", pa.string()), ("doc_id", pa.string()), ("cls", pa.string()),
    ("supporting", pa.bool_()),
])

COMPARISONS = pa.schema([
    ("comparison", pa.string()), ("kind", pa.string()), ("labelling", pa.string()), ("estimate", pa.float64()),
    ("p_value", pa.float64()), ("significant", pa.bool_()), ("n", pa.int64()),
])

FLIPS = pa.schema([
    ("comparison", pa.string()), ("kind", pa.string()), ("labelling_a", pa.string()), ("labelling_b", pa.string()),
    ("estimate_a", pa.float64()), ("estimate_b", pa.float64()), ("significant_a", pa.bool_()),
    ("significant_b", pa.bool_()), ("direction_changed", pa.bool_()), ("significance_changed", pa.bool_()),
    ("changed", pa.bool_()),
])

ANSWER_CHECK = pa.schema([
    ("group", pa.string()), ("n", pa.int64()), ("n_correct", pa.int64()), ("n_failed", pa.int64()),
    ("accuracy", pa.float64()),
])

PER_RETRIEVER_FIXED = [
    ("position", pa.int32()), ("retriever", pa.string()), ("judge", pa.string()), ("ndcg", pa.float64()),
    ("n_contexts", pa.int64()), ("rule_unanswerable", pa.int64()), ("content_unanswerable", pa.int64()),
    ("false_miss_yes", pa.float64()), ("false_miss_yes_partial", pa.float64()), ("precision", pa.float64()),
    ("precision_partial_answerable", pa.float64()), ("youden_j", pa.float64()),
    ("youden_j_partial_answerable", pa.float64()), ("near_dup_floor", pa.float64()),
    ("abstention_rule", pa.float64()), ("abstention_content", pa.float64()),
    ("model_abstention", pa.float64()), ("abstention_accuracy_rule", pa.float64()),
    ("abstention_accuracy_content", pa.float64()),
]


def per_retriever_schema(auroc_columns: Sequence[str]) -> pa.Schema:
    return pa.schema(PER_RETRIEVER_FIXED + [(c, pa.float64()) for c in auroc_columns])


def to_table(rows: Sequence[dict], schema: pa.Schema) -> pa.Table:
    """Rows -> table; unknown columns are refused, missing ones are null."""
    return table_from_rows(list(rows), schema)


__all__ = ["AGREEMENT", "ANSWER_CHECK", "AUROC", "COMPARISONS", "CONTENT_LABELS", "CONTEXTS", "DETECTOR_SCORES",
           "FLIPS", "JUDGE_CALLS", "LADDER", "NEAR_DUPLICATES", "NEGATIVE_CONTROL", "PER_RETRIEVER_FIXED",
           "PROVENANCE", "RULE_METRICS", "per_retriever_schema", "to_table"]
