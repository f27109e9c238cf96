"""The result type of the abstention analysis (its own module, so that :mod:`.run`, the
statistical steps of :mod:`.steps`, the table writer :mod:`.tables` and :mod:`.report` can all
use it without importing one another)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from evaluation.abstention.agreement import Agreement
from evaluation.abstention.answer_check import GroupAccuracy
from evaluation.abstention.config import AbstentionConfig
from evaluation.abstention.contexts import Context
from evaluation.abstention.detectors import DetectorStatus
from evaluation.abstention.flips import Comparison, Flip, FlipSummary
from evaluation.abstention.judges import Judgment
from evaluation.abstention.ladder import LadderResult
from evaluation.abstention.near_duplicates import NearDupFloor
from evaluation.abstention.negative_control import ControlResult
from evaluation.abstention.provenance import PassageClass
from evaluation.abstention.relabel import Suggestion
from evaluation.abstention.rule_metrics import RuleMetrics

DetectorScores = dict[str, dict[tuple[str, str], float]]
"""``{detector: {(retriever, sample_id): score}}``; higher = more likely unanswerable."""
AbstainDecisions = dict[str, dict[tuple[str, str], bool]]
"""``{answer-model detector: {(retriever, sample_id): abstains}}``."""


@dataclass
class AbstentionResult:
    """Everything :func:`~evaluation.abstention.run.run_abstention` computed (the same numbers
    as the files it wrote).

    Attributes:
        per_retriever: the main table (primary judge), one dict per rung, ladder order.
        auroc_columns: the AUROC columns of ``per_retriever`` (``auroc:<detector>:<labelling>``).
        offline_demo: True when any part is an offline stand-in.
        stand_ins: which parts are stand-ins.
        detector_scores: every detector's score per (retriever, sample_id).
        abstain: every answer model's abstain decision per (retriever, sample_id).
        notes: sentences shown in every report (skips, flags, failures).
        files: output paths by name.
        markdown: the summary (Prefect artifact).
    """

    out_dir: Path
    benchmark: str
    config: AbstentionConfig
    offline_demo: bool
    stand_ins: list[str]
    ladder: LadderResult
    contexts: list[Context]
    judgments: dict[str, dict[tuple, Judgment]]
    rule_metrics: dict[tuple[str, str], RuleMetrics]
    per_retriever: list[dict]
    auroc_columns: list[str]
    agreements: list[tuple[str, Agreement]]
    negative_control: dict[str, ControlResult]
    near_dup: dict[str, NearDupFloor]
    aurocs: list[dict]
    detectors: list[DetectorStatus]
    provenance: list[PassageClass]
    provenance_shares: dict[str, dict[str, dict[str, float]]]
    comparisons: list[Comparison]
    flips: list[Flip]
    flip_summaries: list[FlipSummary]
    answer_check: list[GroupAccuracy] | None
    suggestions: list[Suggestion]
    detector_scores: DetectorScores = field(default_factory=dict)
    abstain: AbstainDecisions = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    files: dict[str, Path] = field(default_factory=dict)
    markdown: str = ""


__all__ = ["AbstainDecisions", "AbstentionResult", "DetectorScores"]
