"""benchmarks/realism_targets.py's pool rows over several seeds: hand-computed means, order judged on the means."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location(
    "realism_targets", Path(__file__).resolve().parents[2] / "benchmarks" / "realism_targets.py")
rt = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(rt)

HUMAN = {"human_bm25_r20": 0.41, "human_dense_r20": 0.51, "human_hybrid_r20": 0.52}


def _run(name, bm25, dense, hybrid, failed, min_kept, turns=240, below=0):
    return {"pool": f"cloud:{name}", "turns": turns, "failed": failed, "min_kept": min_kept, "below_75": below,
            "history_dependent": 0.5, "pronoun": 0.3, "bm25_ratio": 2.0,
            "bm25_r20": bm25, "dense_r20": dense, "hybrid_r20": hybrid, **HUMAN}


def test_one_run_is_its_own_row():
    row = rt.combine([_run("a", 0.36, 0.32, 0.40, 0.02, 0.875)])
    assert row["broken"] == ["bm25/dense"] and not row["order_ok"] and row["order_runs"] == "0/1"
    assert row["bm25_r20_x_human"] == pytest.approx(0.36 / 0.41)
    assert row["failed"] == 0.02 and row["turns"] == 240


def test_seeds_are_averaged_and_the_order_judged_on_the_means():
    # seed 0 reverses bm25/dense by 0.01, seed 1 keeps it by 0.05: mean dense 0.365 > mean bm25 0.355
    row = rt.combine([_run("a", 0.36, 0.35, 0.40, 0.02, 0.875, below=1),
                      _run("b", 0.35, 0.38, 0.41, 0.04, 0.75, turns=232, below=2)])
    assert row["bm25_r20"] == pytest.approx(0.355) and row["dense_r20"] == pytest.approx(0.365)
    assert row["order_ok"] and row["broken"] == [] and row["order_runs"] == "1/2"
    assert row["failed"] == pytest.approx(0.03)
    assert row["min_kept"] == 0.75 and row["turns"] == 472 and row["below_75"] == 3
    assert row["pool"] == "cloud:a (+1 seeds)"
    assert rt.passes(row)["order kept"] and rt.passes(row)["kept>=75%"]


def test_a_pair_the_humans_do_not_separate_is_not_judged():
    # dense/hybrid are 0.01 apart for people: hybrid below dense is no broken order
    row = rt.combine([_run("a", 0.30, 0.45, 0.40, 0.0, 1.0)])
    assert row["order_ok"], row["broken"]


def test_no_run_is_an_error():
    with pytest.raises(ValueError):
        rt.combine([])
