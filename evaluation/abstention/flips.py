"""Step 9: the comparisons a study would report, recomputed under each labelling, and how
many change direction or significance when the labels change.

A *labelling* gives each context 1 (unanswerable), 0 (answerable) or None (left out: e.g.
``partial`` under ``partial="exclude"``, or a failed judge call). Rule labels and every
judge's content labels are labellings. Comparisons (positive class: unanswerable; detector
scores: higher = more likely unanswerable; answer models abstain or answer):

* ``auroc>0.5`` per (retriever, detector): estimate AUROC - 0.5; one-sided Mann-Whitney p.
* ``auroc:retrievers`` per detector and retriever pair: AUROC(r1) - AUROC(r2) on the turns
  both label; paired bootstrap over turns (two-sided p = 2 min(P(d <= 0), P(d >= 0))).
* ``auroc:detectors`` per retriever and detector pair: AUROC(d1) - AUROC(d2) on the same
  contexts; paired bootstrap over contexts.
* ``abstention:retrievers`` per answer model and retriever pair: abstention accuracy
  (abstained iff unanswerable) of r1 - r2 on the turns both label; paired randomisation test
  (:func:`evaluation.significance.paired_randomization_test`).
* ``abstention:models`` per retriever and answer-model pair: accuracy difference, same test.
* ``abstention-gap`` per (retriever, answer model): abstention rate on unanswerable minus on
  answerable contexts; two-sided Fisher exact test.

A comparison is *significant* at ``p < alpha``. Between two labellings a comparison
**changes direction** when the signs of its estimates differ (both defined), and **changes
significance** when it is significant under one and not the other. No multiple-testing
correction is applied: the counts show the reach of the label change, not a finding each.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass, field
from typing import Mapping, Sequence

import numpy as np

from evaluation.abstention.auroc import auroc, auroc_test, rank_auroc


@dataclass
class ContextRow:
    """One context as the comparisons see it."""

    retriever: str
    sample_id: str
    labels: dict[str, int | None] = field(default_factory=dict)
    scores: dict[str, float | None] = field(default_factory=dict)
    abstain: dict[str, bool | None] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Comparison:
    comparison: str       # stable id, the same under every labelling
    kind: str
    labelling: str
    estimate: float
    p_value: float
    significant: bool
    n: int

    def to_dict(self) -> dict:
        return asdict(self)


def _bootstrap_p(diffs: np.ndarray) -> float:
    d = diffs[np.isfinite(diffs)]
    if d.size == 0:
        return math.nan
    return float(min(1.0, 2.0 * min((d <= 0).mean(), (d >= 0).mean())))


def paired_auroc_bootstrap(y1, s1, y2, s2, n_resamples: int, seed: int) -> tuple[float, float]:
    """(AUROC(1) - AUROC(2), bootstrap p) resampling aligned units (turns or contexts)."""
    y1, s1, y2, s2 = (np.asarray(a, dtype=float) for a in (y1, s1, y2, s2))
    est = auroc(y1, s1) - auroc(y2, s2)
    if not math.isfinite(est):
        return est, math.nan
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, y1.size, size=(n_resamples, y1.size))
    diffs = rank_auroc(y1[idx], s1[idx]) - rank_auroc(y2[idx], s2[idx])
    return est, _bootstrap_p(diffs)


def _accuracy(abstain: Sequence[bool], labels: Sequence[int]) -> list[float]:
    return [float(bool(a) == bool(y)) for a, y in zip(abstain, labels)]


def comparisons(rows: Sequence[ContextRow], labelling: str, retrievers: Sequence[str], detectors: Sequence[str],
                models: Sequence[str], alpha: float = 0.05, n_resamples: int = 1000,
                seed: int = 0) -> list[Comparison]:
    """Every comparison of the module docstring under one labelling."""
    from scipy.stats import fisher_exact   # costly: scipy

    from evaluation.significance import paired_randomization_test   # costly: scipy

    by_r: dict[str, dict[str, ContextRow]] = {r: {} for r in retrievers}
    for row in rows:
        if row.retriever in by_r:
            by_r[row.retriever][row.sample_id] = row
    out: list[Comparison] = []

    def add(cid: str, kind: str, est: float, p: float, n: int) -> None:
        out.append(Comparison(cid, kind, labelling, float(est), float(p),
                              bool(math.isfinite(p) and p < alpha), int(n)))

    def scored(r: str, det: str) -> dict[str, tuple[int, float]]:
        return {s: (row.labels[labelling], row.scores[det]) for s, row in by_r[r].items()
                if row.labels.get(labelling) is not None and row.scores.get(det) is not None}

    def decided(r: str, m: str) -> dict[str, tuple[int, bool]]:
        return {s: (row.labels[labelling], row.abstain[m]) for s, row in by_r[r].items()
                if row.labels.get(labelling) is not None and row.abstain.get(m) is not None}

    for r in retrievers:
        for det in detectors:
            v = list(scored(r, det).values())
            res = auroc_test([y for y, _ in v], [x for _, x in v])
            add(f"auroc>0.5|{r}|{det}", "auroc>0.5", res.auroc - 0.5, res.p_value, len(v))
    for det in detectors:
        for r1, r2 in itertools.combinations(retrievers, 2):
            a, b = scored(r1, det), scored(r2, det)
            common = [s for s in a if s in b]
            est, p = paired_auroc_bootstrap([a[s][0] for s in common], [a[s][1] for s in common],
                                            [b[s][0] for s in common], [b[s][1] for s in common], n_resamples, seed)
            add(f"auroc:retrievers|{det}|{r1}|{r2}", "auroc:retrievers", est, p, len(common))
    for r in retrievers:
        for d1, d2 in itertools.combinations(detectors, 2):
            a, b = scored(r, d1), scored(r, d2)
            common = [s for s in a if s in b]
            y = [a[s][0] for s in common]
            est, p = paired_auroc_bootstrap(y, [a[s][1] for s in common], y, [b[s][1] for s in common],
                                            n_resamples, seed)
            add(f"auroc:detectors|{r}|{d1}|{d2}", "auroc:detectors", est, p, len(common))
    for m in models:
        for r1, r2 in itertools.combinations(retrievers, 2):
            a, b = decided(r1, m), decided(r2, m)
            common = [s for s in a if s in b]
            if not common:
                add(f"abstention:retrievers|{m}|{r1}|{r2}", "abstention:retrievers", math.nan, math.nan, 0)
                continue
            xa = _accuracy([a[s][1] for s in common], [a[s][0] for s in common])
            xb = _accuracy([b[s][1] for s in common], [b[s][0] for s in common])
            t = paired_randomization_test(xa, xb, n_resamples=n_resamples, seed=seed)
            add(f"abstention:retrievers|{m}|{r1}|{r2}", "abstention:retrievers", t.mean_diff, t.p_value, len(common))
    for r in retrievers:
        for m1, m2 in itertools.combinations(models, 2):
            a, b = decided(r, m1), decided(r, m2)
            common = [s for s in a if s in b]
            if not common:
                add(f"abstention:models|{r}|{m1}|{m2}", "abstention:models", math.nan, math.nan, 0)
                continue
            xa = _accuracy([a[s][1] for s in common], [a[s][0] for s in common])
            xb = _accuracy([b[s][1] for s in common], [b[s][0] for s in common])
            t = paired_randomization_test(xa, xb, n_resamples=n_resamples, seed=seed)
            add(f"abstention:models|{r}|{m1}|{m2}", "abstention:models", t.mean_diff, t.p_value, len(common))
        for m in models:
            v = list(decided(r, m).values())
            un = [ab for y, ab in v if y == 1]
            an = [ab for y, ab in v if y == 0]
            if not un or not an:
                add(f"abstention-gap|{r}|{m}", "abstention-gap", math.nan, math.nan, len(v))
                continue
            est = sum(un) / len(un) - sum(an) / len(an)
            p = fisher_exact([[sum(un), len(un) - sum(un)], [sum(an), len(an) - sum(an)]]).pvalue
            add(f"abstention-gap|{r}|{m}", "abstention-gap", est, float(p), len(v))
    return out


@dataclass(frozen=True, slots=True)
class Flip:
    comparison: str
    kind: str
    labelling_a: str
    labelling_b: str
    estimate_a: float
    estimate_b: float
    significant_a: bool
    significant_b: bool
    direction_changed: bool
    significance_changed: bool

    @property
    def changed(self) -> bool:
        return self.direction_changed or self.significance_changed

    def to_dict(self) -> dict:
        return asdict(self) | {"changed": self.changed}


@dataclass(frozen=True, slots=True)
class FlipSummary:
    labelling_a: str
    labelling_b: str
    n_comparisons: int
    n_changed: int
    n_direction: int
    n_significance: int
    n_reversed_significant: int   # direction changed and significant under both

    def to_dict(self) -> dict:
        return asdict(self)


def flips(a: Sequence[Comparison], b: Sequence[Comparison]) -> tuple[list[Flip], FlipSummary]:
    """Per-comparison changes between two labellings (comparisons with an undefined estimate
    under either are left out) and their counts."""
    if not a or not b:
        la = a[0].labelling if a else ""
        lb = b[0].labelling if b else ""
        return [], FlipSummary(la, lb, 0, 0, 0, 0, 0)
    bm: Mapping[str, Comparison] = {c.comparison: c for c in b}
    rows: list[Flip] = []
    for ca in a:
        cb = bm.get(ca.comparison)
        if cb is None or not (math.isfinite(ca.estimate) and math.isfinite(cb.estimate)):
            continue
        direction = bool(np.sign(ca.estimate) != np.sign(cb.estimate))
        sig = ca.significant != cb.significant
        rows.append(Flip(ca.comparison, ca.kind, ca.labelling, cb.labelling, ca.estimate, cb.estimate,
                         ca.significant, cb.significant, direction, sig))
    summary = FlipSummary(a[0].labelling, b[0].labelling, len(rows), sum(f.changed for f in rows),
                          sum(f.direction_changed for f in rows), sum(f.significance_changed for f in rows),
                          sum(f.direction_changed and f.significant_a and f.significant_b for f in rows))
    return rows, summary


__all__ = ["Comparison", "ContextRow", "Flip", "FlipSummary", "comparisons", "flips", "paired_auroc_bootstrap"]
