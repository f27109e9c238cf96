"""MTR-Eval: audit a conversational retrieval benchmark with an ensemble of judges.

Four pointwise metrics, each judged on the **current** turn with its history:

* ``alignment`` (1-5) — :mod:`~evaluation.audit.alignment`: is the question answerable from
  one gold passage alone? (annotation noise)
* ``distinguishability`` (0/1) — :mod:`~evaluation.audit.distinguishability` with candidate
  lists from :mod:`~evaluation.audit.candidates`: does the judge pick the gold passage among
  retrieved hard negatives shuffled with a recorded seed? (annotation sparsity; the other
  picks are exported as candidate missing positives)
* ``faithfulness`` (1-5) — :mod:`~evaluation.audit.faithfulness`: is the reference answer
  supported by the gold passages?
* ``quality`` (1-5) — :mod:`~evaluation.audit.quality`: accuracy, completeness, relevance.

One concern per module: ``base`` (judge spec, output models, parsers), ``judges`` (name
resolution, roles, steps), ``heuristics`` (offline stand-ins), ``prepare`` (units and skips),
``aggregate`` (ensemble, tables), ``agreement`` (Krippendorff's alpha, Spearman), ``human``
(human ratings), ``report`` (heatmap, HTML, Markdown), ``schemas`` (tables), ``run`` (the
verb :func:`run_audit`). See ``docs/concepts/audit.md``.
"""
from evaluation.audit.agreement import krippendorff_alpha, mean_pairwise_agreement, mean_pairwise_spearman
from evaluation.audit.base import Choice, JudgeSpec, Rating, parse_choice, parse_rating
from evaluation.audit.candidates import CandidateSet, NegativeMiner, item_seed, shuffle_candidates
from evaluation.audit.config import METRICS, AuditConfig
from evaluation.audit.heuristics import HEURISTICS, EvidenceIndex
from evaluation.audit.human import human_agreement, load_human_ratings
from evaluation.audit.judges import JudgeConfigError, judge_config, make_step, resolve_judges
from evaluation.audit.prepare import PreparedBenchmark, Unit, prepare_benchmark
from evaluation.audit.run import (AuditResult, JudgeBatch, estimate_audit, finalize, human_agreement_from_run, judge_batch,
                                  judge_batches, plan_batches, run_audit)

__all__ = [
    "AuditConfig", "AuditResult", "CandidateSet", "Choice", "EvidenceIndex", "HEURISTICS", "JudgeBatch",
    "JudgeConfigError", "JudgeSpec", "METRICS", "NegativeMiner", "PreparedBenchmark", "Rating", "Unit", "estimate_audit",
    "finalize",
    "human_agreement", "human_agreement_from_run", "item_seed", "judge_batch", "judge_batches", "judge_config",
    "krippendorff_alpha", "load_human_ratings", "make_step", "mean_pairwise_agreement", "mean_pairwise_spearman",
    "parse_choice", "parse_rating", "plan_batches", "prepare_benchmark", "resolve_judges", "run_audit",
    "shuffle_candidates",
]
