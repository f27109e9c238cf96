"""Step 9: comparisons under one labelling (hand-computed estimates) and flips between two."""
import math

import pytest

from evaluation.abstention.flips import Comparison, ContextRow, comparisons, flips


def rows():
    out = []
    r1 = dict(labels=[1, 1, 0, 0], scores=[0.9, 0.2, 0.3, 0.1], abstain=[True, False, False, False])
    r2 = dict(labels=[1, 0, 1, 0], scores=[0.8, 0.6, 0.5, 0.7], abstain=[True, True, False, False])
    for name, d in (("r1", r1), ("r2", r2)):
        for i in range(4):
            out.append(ContextRow(name, f"t{i + 1}", {"rule": d["labels"][i]}, {"top1": d["scores"][i]},
                                  {"m": d["abstain"][i]}))
    return out


def test_comparisons_hand_computed():
    got = {c.comparison: c for c in comparisons(rows(), "rule", ["r1", "r2"], ["top1"], ["m"], n_resamples=500)}
    assert set(got) == {"auroc>0.5|r1|top1", "auroc>0.5|r2|top1", "auroc:retrievers|top1|r1|r2",
                        "abstention:retrievers|m|r1|r2", "abstention-gap|r1|m", "abstention-gap|r2|m"}
    # r1: positives 0.9, 0.2 vs negatives 0.3, 0.1 -> 3 of 4 pairs; r2: 0.8, 0.5 vs 0.6, 0.7 -> 2 of 4
    assert got["auroc>0.5|r1|top1"].estimate == pytest.approx(0.25)
    assert got["auroc>0.5|r1|top1"].p_value == pytest.approx(1 / 3)    # exact U >= 3 of C(4,2) = 6
    assert got["auroc>0.5|r2|top1"].estimate == pytest.approx(0.0)
    a = got["auroc:retrievers|top1|r1|r2"]
    assert a.estimate == pytest.approx(0.25) and 0 <= a.p_value <= 1 and a.n == 4
    # abstention accuracy: r1 correct on t1, t3, t4 (3/4); r2 on t1, t4 (2/4); one non-zero paired
    # difference -> every sign flip is as extreme -> p = 1
    ab = got["abstention:retrievers|m|r1|r2"]
    assert ab.estimate == pytest.approx(0.25) and ab.p_value == pytest.approx(1.0) and not ab.significant
    # gap r1: abstains on 1 of 2 unanswerable, 0 of 2 answerable; Fisher two-sided p = 1
    g = got["abstention-gap|r1|m"]
    assert g.estimate == pytest.approx(0.5) and g.p_value == pytest.approx(1.0)
    assert got["abstention-gap|r2|m"].estimate == pytest.approx(0.0)
    again = {c.comparison: c for c in comparisons(rows(), "rule", ["r1", "r2"], ["top1"], ["m"], n_resamples=500)}
    assert again["auroc:retrievers|top1|r1|r2"].p_value == a.p_value          # seeded


def c(cid, lab, est, p):
    return Comparison(cid, "k", lab, est, p, p < 0.05, 10)


def test_flip_counts():
    rule = [c("X", "rule", 0.2, 0.01), c("Y", "rule", 0.1, 0.3), c("Z", "rule", -0.05, 0.02),
            c("W", "rule", math.nan, math.nan), c("V", "rule", 0.3, 0.5)]
    content = [c("X", "content", -0.1, 0.04), c("Y", "content", 0.2, 0.01), c("Z", "content", -0.02, 0.5),
               c("W", "content", 0.1, 0.01), c("V", "content", 0.1, 0.6)]
    rows_, s = flips(rule, content)
    by = {f.comparison: f for f in rows_}
    assert set(by) == {"X", "Y", "Z", "V"}                      # W undefined under rule labels
    assert by["X"].direction_changed and not by["X"].significance_changed
    assert by["Y"].significance_changed and not by["Y"].direction_changed
    assert by["Z"].significance_changed and not by["V"].changed
    assert (s.n_comparisons, s.n_changed, s.n_direction, s.n_significance, s.n_reversed_significant) == (4, 3, 1, 2, 1)
    assert flips([], content)[1].n_comparisons == 0
