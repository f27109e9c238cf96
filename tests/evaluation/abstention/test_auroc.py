"""AUROC against hand-counted pairs, the Mann-Whitney test, and the vectorised rank AUROC."""
import math

import numpy as np
import pytest

from evaluation.abstention.auroc import auroc, auroc_test, rank_auroc

LABELS = [1, 1, 0, 0, 1, 0]
SCORES = [0.9, 0.4, 0.35, 0.8, 0.7, 0.1]
# positives 0.9, 0.4, 0.7 vs negatives 0.35, 0.8, 0.1: 0.9 beats 3, 0.4 beats 2, 0.7 beats 2 -> 7 of 9


def test_auroc_hand_counted():
    assert auroc(LABELS, SCORES) == pytest.approx(7 / 9)
    # a tie between a positive and a negative counts one half: 0.4 -> 0.35 makes (0.35, 0.35) a tie
    assert auroc(LABELS, [0.9, 0.35, 0.35, 0.8, 0.7, 0.1]) == pytest.approx(6.5 / 9)
    assert math.isnan(auroc([1, 1], [0.1, 0.2]))


def test_mann_whitney_exact_p():
    r = auroc_test(LABELS, SCORES)
    # U = 7 with 3 + 3 values: the exact null distribution of U (0..9) has counts
    # 1 1 2 3 3 3 3 2 1 1 over C(6,3) = 20 arrangements; P(U >= 7) = (2 + 1 + 1) / 20
    assert (r.n_pos, r.n_neg) == (3, 3)
    assert r.p_value == pytest.approx(0.2)
    assert math.isnan(auroc_test([0, 0], [1.0, 2.0]).p_value)


def test_rank_auroc_matches_sklearn_row_by_row():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, size=(50, 30))
    s = np.round(rng.random((50, 30)), 1)          # many ties
    got = rank_auroc(y, s)
    want = [auroc(y[i], s[i]) for i in range(50)]
    np.testing.assert_allclose(got, want, equal_nan=True)
    assert math.isnan(rank_auroc(np.ones((1, 4)), np.arange(4.0).reshape(1, 4))[0])
