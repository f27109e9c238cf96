"""Fusion: hand-computed min-max and RRF values, ties, the all-equal case, weights."""
from __future__ import annotations

import pytest

from retrieval.base import RetrievalError, cut_run, trec_ranking
from retrieval.fusion import fuse, minmax_fusion, minmax_normalize, rrf


def test_minmax_normalize_and_all_equal_case():
    assert minmax_normalize({"a": 3.0, "b": 1.0, "c": 2.0}) == {"a": 1.0, "b": 0.0, "c": 0.5}
    # all-equal list (and a single-document list) -> 1.0 each, never NaN
    assert minmax_normalize({"x": 7.0, "y": 7.0}) == {"x": 1.0, "y": 1.0}
    assert minmax_normalize({"only": -2.5}) == {"only": 1.0}
    assert minmax_normalize({}) == {}
    with pytest.raises(RetrievalError):
        minmax_normalize({"a": float("nan"), "b": 1.0})


def test_minmax_fusion_hand_values():
    a = {"q": {"a": 3.0, "b": 1.0, "c": 2.0}, "only_a": {"z": 5.0, "w": 1.0}}
    b = {"q": {"b": 10.0, "d": 10.0}}  # all-equal list -> 1.0 each
    fused = minmax_fusion([a, b])
    assert fused["q"] == {"a": 1.0, "b": 0.0 + 1.0, "c": 0.5, "d": 1.0}
    assert fused["only_a"] == {"z": 1.0, "w": 0.0}  # a query present in one run only
    weighted = minmax_fusion([a, b], weights=[2.0, 0.5])
    assert weighted["q"] == {"a": 2.0, "b": 0.5, "c": 1.0, "d": 0.5}
    # cut with the trec rule: a, b, d tie at 1.0 -> ids descending: d, b, a
    top = minmax_fusion([a, b], depth=2)
    assert list(top["q"].items()) == [("d", 1.0), ("b", 1.0)]


def test_rrf_hand_values_with_tied_input_scores():
    a = {"q": {"a": 1.0, "b": 1.0, "c": 0.5}}  # trec order: b (id desc), a, c -> ranks 1, 2, 3
    b = {"q": {"c": 2.0, "a": 1.0}}            # ranks c=1, a=2
    fused = rrf([a, b])
    assert fused["q"]["b"] == pytest.approx(1 / 61)
    assert fused["q"]["a"] == pytest.approx(1 / 62 + 1 / 62)
    assert fused["q"]["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert [d for d, _ in trec_ranking(fused["q"])] == ["c", "a", "b"]
    k1 = rrf([a, b], k=1, weights=[1.0, 3.0])
    assert k1["q"] == pytest.approx({"b": 1 / 2, "a": 1 / 3 + 3 / 3, "c": 1 / 4 + 3 / 2})


def test_rrf_over_three_runs_and_equal_fused_scores():
    r1 = {"q": {"x": 3.0, "y": 2.0}}
    r2 = {"q": {"y": 3.0, "x": 2.0}}
    r3 = {"q": {"z": 1.0}}
    fused = rrf([r1, r2, r3], depth=2)
    # x and y both get 1/61 + 1/62; z gets 1/61 -> x, y tie, y first (id desc)
    assert list(fused["q"]) == ["y", "x"]
    assert fused["q"]["x"] == fused["q"]["y"] == pytest.approx(1 / 61 + 1 / 62)


def test_fuse_dispatch_and_errors():
    r = {"q": {"a": 1.0}}
    assert fuse([r], "minmax") == {"q": {"a": 1.0}}
    assert fuse([r], "rrf", rrf_k=0) == {"q": {"a": 1.0}}
    with pytest.raises(RetrievalError):
        fuse([r], "borda")
    with pytest.raises(RetrievalError):
        rrf([])
    with pytest.raises(RetrievalError):
        minmax_fusion([r, r], weights=[1.0])
    with pytest.raises(RetrievalError):
        minmax_fusion([r], weights=[-1.0])


def test_cut_run_uses_trec_order():
    run = {"q": {"a": 1.0, "c": 1.0, "b": 2.0}, "e": {}}
    assert cut_run(run, 2) == {"q": {"b": 2.0, "c": 1.0}, "e": {}}
