from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from evaluation.bootstrap import bootstrap_ci
from evaluation.discrimination import discrimination
from evaluation.metrics import evaluate
from evaluation.significance import paired_randomization_test, paired_t_test, paired_values


def test_randomization_exact_hand_checked():
    # differences 1, 2, 3: of the 8 sign assignments only +++ and --- reach |sum| >= 6
    res = paired_randomization_test({"q1": 1.0, "q2": 2.0, "q3": 3.0}, {"q1": 0.0, "q2": 0.0, "q3": 0.0})
    assert res.exact and res.n_resamples == 8 and res.n == 3
    assert res.p_value == pytest.approx(0.25)
    assert res.mean_diff == pytest.approx(2.0)
    # differences 1, 1, -1: |sum| >= 1 for every assignment
    res = paired_randomization_test([1, 1, 0], [0, 0, 1])
    assert res.p_value == 1.0


def test_randomization_sampled_is_reproducible_and_close_to_exact():
    rng = np.random.default_rng(3)
    a = rng.random(16)
    b = a - rng.normal(0.05, 0.2, 16)
    d = a - b
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=16)))
    exact = np.mean(np.abs(signs @ d) >= abs(d.sum()) - 1e-12)
    r1 = paired_randomization_test(a, b, n_resamples=20_000, seed=1)
    r2 = paired_randomization_test(a, b, n_resamples=20_000, seed=1)
    assert not r1.exact and r1.p_value == r2.p_value
    assert r1.p_value == pytest.approx(exact, abs=0.015)
    assert r1.p_value > 0


def test_t_test_hand_checked():
    # differences 1, 2, 3: mean 2, sd 1, t = 2 * sqrt(3), df 2
    res = paired_t_test([1.0, 2.0, 3.0], [0.0, 0.0, 0.0])
    t = 2 * math.sqrt(3)
    assert res.statistic == pytest.approx(t)
    # Student t with 2 dof: F(t) = 1/2 + t / (2 sqrt(2 + t^2))
    assert res.p_value == pytest.approx(2 * (0.5 - t / (2 * math.sqrt(2 + t * t))), rel=1e-9)


def test_t_test_degenerate_differences():
    assert paired_t_test([0.5, 0.5], [0.5, 0.5]).p_value == 1.0
    assert paired_t_test([1.0, 1.0], [0.0, 0.0]).p_value == 0.0
    with pytest.raises(ValueError):
        paired_t_test([1.0], [0.0])


def test_pairs_must_cover_the_same_queries():
    with pytest.raises(ValueError, match="different queries"):
        paired_randomization_test({"a": 1.0}, {"b": 1.0})
    with pytest.raises(ValueError):
        paired_t_test([1.0, 2.0], [1.0])
    with pytest.raises(ValueError):
        paired_t_test({"a": 1.0, "b": 2.0}, [1.0, 2.0])


def test_paired_values_from_results():
    qrels = {"q1": {"d": 1}, "q2": {"d": 1}}
    a = evaluate(qrels, {"q1": {"d": 1.0}, "q2": {"d": 1.0}}, metrics=("recall",), ks=(1,))
    b = evaluate(qrels, {"q1": {"d": 1.0}}, metrics=("recall",), ks=(1,))
    x, y = paired_values(a, b, "recall_1")
    assert x == {"q1": 1.0, "q2": 1.0} and y == {"q1": 1.0, "q2": 0.0}
    assert paired_randomization_test(x, y).p_value == 1.0


def test_bootstrap_ci():
    vals = [0.0, 1.0] * 50
    ci = bootstrap_ci(vals, n_resamples=4000, seed=0)
    assert ci.mean == 0.5 and ci.low < 0.5 < ci.high
    # standard error 0.05 -> the 95% interval is about 0.5 +/- 0.098
    assert ci.low == pytest.approx(0.402, abs=0.02) and ci.high == pytest.approx(0.598, abs=0.02)
    assert bootstrap_ci(vals, n_resamples=4000, seed=0) == ci
    const = bootstrap_ci({"a": 0.3, "b": 0.3})
    assert (const.low, const.high) == (0.3, 0.3)
    assert bootstrap_ci([0.7]).low == 0.7
    with pytest.raises(ValueError):
        bootstrap_ci([])
    with pytest.raises(ValueError):
        bootstrap_ci([1.0, 2.0], confidence=1.5)


def test_discrimination():
    d = discrimination({"a": 0.5, "b": 0.3, "c": 0.1})
    assert d.spread == pytest.approx(0.4)
    assert d.std == pytest.approx(math.sqrt(0.08 / 3))
    assert (d.best, d.worst, d.measure) == ("a", "c", "recall_20")
    qrels = {"q1": {"d": 1}, "q2": {"d": 1}}
    good = evaluate(qrels, {"q1": {"d": 1.0}, "q2": {"d": 1.0}})
    bad = evaluate(qrels, {"q1": {"d": 1.0}})
    d = discrimination({"good": good, "bad": bad})
    assert d.means == {"good": 1.0, "bad": 0.5} and d.spread == 0.5
    with pytest.raises(ValueError):
        discrimination({"only": 0.3})
