"""Arrow schemas of the audit's tables (``<out>/<name>.parquet``).

* ``audit_scores`` — one row per judgment (judge x unit x metric variant): score, rationale,
  status (``ok`` | ``parse_failure`` | ``failed`` | ``excluded_self``), raw prompt/output,
  model, usage; distinguishability rows also hold the candidate order, gold position,
  chosen position and the seeds.
* ``audit_items`` — the ensemble per unit (mean of 1-5 ratings / majority of 0/1 scores over
  the judges that gave a valid, non-self judgment).
* ``audit_summary`` — per benchmark x metric variant x judge (and ``ensemble``): mean,
  bootstrap CI, n, parse failures, other failures, self exclusions, skipped items.
* ``audit_agreement`` — inter-judge agreement per benchmark x metric variant.
* ``audit_position`` — position bias of the distinguishability test per judge (accuracy by
  gold slot, first / last pick rates, chi-square tests).
* ``audit_candidates`` — every candidate list shown (order, gold position, position design,
  seeds, query).
* ``audit_missing_positives`` — passages judges chose over the gold one (for human review).
* ``audit_skipped`` — turns not judged for a metric, with the reason.
* ``audit_human`` — correlation of each judge and the ensemble with human ratings.
* ``audit_generator_judge`` — per generator x judge: agreement with the other judges and with
  people, self-judging marked (:mod:`evaluation.audit.generator_judge`).
* ``audit_human_checks`` — annotators' verdicts on the candidate missing positives
  (:mod:`evaluation.audit.missing_check`).
"""
from __future__ import annotations

import pyarrow as pa

S, I, F, B = pa.string(), pa.int64(), pa.float64(), pa.bool_()

AUDIT_SCORES = pa.schema([
    ("benchmark", S), ("sample_id", S), ("unit_id", S), ("doc_id", S), ("metric", S), ("variant", S),
    ("judge", S), ("judge_kind", S), ("model", S), ("backend", S), ("status", S), ("failure_kind", S),
    ("failure_message", S), ("score", F), ("rating", I), ("rationale", S), ("raw_output", S),
    ("raw_prompt_json", S), ("prompt_version", S), ("cache_hit", B), ("prompt_tokens", I),
    ("completion_tokens", I), ("generator", S),
    ("candidate_source", S), ("pass", S), ("candidates", pa.list_(S)), ("gold_doc", S), ("gold_position", I),
    ("chosen_position", I), ("chosen_doc", S), ("seed", I), ("item_seed", I),
])

AUDIT_ITEMS = pa.schema([
    ("benchmark", S), ("sample_id", S), ("unit_id", S), ("doc_id", S), ("metric", S), ("variant", S),
    ("ensemble", F), ("n_judges", I), ("n_votes_gold", I), ("judge_min", F), ("judge_max", F),
    ("judge_std", F), ("judge_scores_json", S), ("gold_position", I), ("majority_choice", S),
])

AUDIT_SUMMARY = pa.schema([
    ("benchmark", S), ("metric", S), ("variant", S), ("judge", S), ("judge_kind", S), ("scale", S),
    ("mean", F), ("ci_low", F), ("ci_high", F), ("confidence", F), ("n", I), ("n_attempted", I),
    ("n_parse_failures", I), ("n_failures", I), ("n_excluded_self", I), ("n_skipped", I),
    ("parse_failure_rate", F),
])

AUDIT_AGREEMENT = pa.schema([
    ("benchmark", S), ("metric", S), ("variant", S), ("n_judges", I), ("n_units", I), ("alpha", F),
    ("alpha_level", S), ("mean_pairwise_spearman", F), ("mean_pairwise_agreement", F), ("choice_alpha", F),
])

AUDIT_POSITION = pa.schema([
    ("benchmark", S), ("source", S), ("judge", S), ("n_items", I), ("accuracy_forward", F),
    ("accuracy_reversed", F), ("n_both", I), ("consistency", F), ("first_position_rate", F),
    ("last_position_rate", F), ("chosen_position_hist", pa.list_(I)), ("gold_position_hist", pa.list_(I)),
    ("n_tested", I), ("accuracy_by_gold_position", pa.list_(F)), ("position_chi2", F), ("position_df", I),
    ("position_p", F), ("slot_accuracy_chi2", F), ("slot_accuracy_df", I), ("slot_accuracy_p", F),
])

AUDIT_CANDIDATES = pa.schema([
    ("benchmark", S), ("sample_id", S), ("source", S), ("gold_doc", S), ("order", pa.list_(S)),
    ("gold_position", I), ("reversed_gold_position", I), ("n_negatives", I), ("seed", I), ("item_seed", I),
    ("query", S), ("query_source", S), ("position_design", S), ("design_seed", I),
])

AUDIT_MISSING_POSITIVES = pa.schema([
    ("benchmark", S), ("sample_id", S), ("conv_id", S), ("turn", I), ("source", S), ("question", S),
    ("rewrite", S), ("gold_doc", S), ("gold_text", S), ("candidate_doc", S), ("candidate_title", S),
    ("candidate_text", S), ("n_picks", I), ("n_judgments", I), ("picked_by", pa.list_(S)),
    ("ensemble_flagged", B), ("rationales_json", S),
])

AUDIT_SKIPPED = pa.schema([
    ("benchmark", S), ("sample_id", S), ("metric", S), ("variant", S), ("reason", S), ("detail", S),
])

AUDIT_HUMAN = pa.schema([
    ("metric", S), ("rater", S), ("n", I), ("pearson", F), ("pearson_p", F), ("spearman", F), ("spearman_p", F),
])

AUDIT_HUMAN_CHECKS = pa.schema([
    ("benchmark", S), ("sample_id", S), ("source", S), ("candidate_doc", S), ("gold_doc", S),
    ("ensemble_flagged", B), ("n_ratings", I), ("n_relevant", I), ("majority", I), ("confirmed", B),
    ("verdicts", pa.list_(S)),
])

AUDIT_GENERATOR_JUDGE = pa.schema([
    ("metric", S), ("variant", S), ("generator", S), ("judge", S), ("n", I), ("n_self", I), ("self", B),
    ("n_vs_ensemble", I), ("ensemble_agreement", F), ("ensemble_mad", F), ("ensemble_within_1", F),
    ("n_vs_human", I), ("human_agreement", F), ("human_mad", F), ("human_within_1", F),
])

SCHEMAS = {"audit_scores": AUDIT_SCORES, "audit_items": AUDIT_ITEMS, "audit_summary": AUDIT_SUMMARY,
           "audit_agreement": AUDIT_AGREEMENT, "audit_position": AUDIT_POSITION,
           "audit_candidates": AUDIT_CANDIDATES, "audit_missing_positives": AUDIT_MISSING_POSITIVES,
           "audit_skipped": AUDIT_SKIPPED, "audit_human": AUDIT_HUMAN, "audit_human_checks": AUDIT_HUMAN_CHECKS,
           "audit_generator_judge": AUDIT_GENERATOR_JUDGE}


def table(name: str, rows: list[dict]) -> pa.Table:
    """Rows (dicts; missing keys are null) as a table of schema ``name``."""
    schema = SCHEMAS[name]
    return pa.Table.from_pylist([{f: r.get(f) for f in schema.names} for r in rows], schema=schema)
