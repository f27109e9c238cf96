"""Judge agreement: Cohen's kappa and raw agreement, hand-computed."""
import math

import pytest

from evaluation.abstention.agreement import agreement


def test_kappa_three_labels_and_yes_vs_rest():
    a = ["yes", "yes", "no", "no", "partial", "yes", None]
    b = ["yes", "no", "no", "no", "partial", "partial", "yes"]
    r = agreement("A", a, "B", b)
    assert r.n == 6                                  # the pair with a missing label is dropped
    assert r.raw_agreement == pytest.approx(4 / 6)
    # marginals A: yes 3, no 2, partial 1; B: yes 1, no 3, partial 2 -> pe = (3 + 6 + 2) / 36
    assert r.kappa == pytest.approx((4 / 6 - 11 / 36) / (1 - 11 / 36))     # 13/25 = 0.52
    # yes vs rest: A = Y Y O O O Y, B = Y O O O O O: po = 4/6, pe = (3*1 + 3*5) / 36 = 1/2
    assert r.kappa_yes_vs_rest == pytest.approx((4 / 6 - 0.5) / 0.5)      # 1/3


def test_perfect_and_undefined_agreement():
    assert agreement("A", ["yes", "no"], "B", ["yes", "no"]).kappa == pytest.approx(1.0)
    r = agreement("A", ["no", "no"], "B", ["no", "no"])
    assert r.raw_agreement == 1.0 and math.isnan(r.kappa)
    with pytest.raises(ValueError):
        agreement("A", ["no"], "B", [])
