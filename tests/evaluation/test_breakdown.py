from __future__ import annotations

import pytest

from evaluation.breakdown import NO_SWITCH, parse_turn, per_switch_position, per_turn
from evaluation.metrics import evaluate


def test_parse_turn_formats():
    assert parse_turn("c12:3") == ("c12", 3)
    assert parse_turn("dd6b6ffd177f2b311abe676261279d2f<::>2") == ("dd6b6ffd177f2b311abe676261279d2f", 2)
    assert parse_turn("ns:conv:10") == ("ns:conv", 10)        # last separator wins
    assert parse_turn("a<::>b<::>7") == ("a<::>b", 7)
    for bad in ("nope", "c:", ":3", "c:0", "c:x", "c<::>", "c:-1", "c:3.0"):
        with pytest.raises(ValueError, match="turn"):
            parse_turn(bad)


PER_QUERY = {
    "a:1": {"m": 1.0}, "b:1": {"m": 0.0},
    "a:2": {"m": 0.5},
    "a:3": {"m": 0.25}, "b:3": {"m": 0.75}, "b:4": {"m": 1.0},
    "noturn": {"m": 1.0},
}


def test_per_turn_means_and_unassigned():
    bd = per_turn(PER_QUERY)
    assert [(r["group"], r["label"], r["n"], r["m"]) for r in bd.rows] == [
        (1, "1", 2, 0.5), (2, "2", 1, 0.5), (3, "3", 2, 0.5), (4, "4", 1, 1.0)]
    assert bd.n_unassigned == 1 and bd.key == "turn"


def test_per_turn_pools_late_turns():
    bd = per_turn(PER_QUERY, max_turn=3)
    assert [(r["label"], r["n"], r["m"]) for r in bd.rows] == [("1", 2, 0.5), ("2", 1, 0.5), ("3+", 3, 2.0 / 3)]
    table = bd.to_table(retriever="bm25")
    assert table.column_names == ["retriever", "turn", "label", "n", "m"]
    assert table.column("turn").to_pylist() == [1, 2, 3]


def test_per_turn_on_eval_result():
    qrels = {"c:1": {"d": 1}, "c:2": {"d": 1}, "e:2": {"d": 1}}
    run = {"c:1": {"d": 1.0}, "c:2": {"x": 1.0}, "e:2": {"d": 1.0}}
    res = evaluate(qrels, run, metrics=("recall",), ks=(1,))
    bd = per_turn(res)
    assert bd.curve("recall_1") == (["1", "2"], [1.0, 0.5])


def test_switch_position_groups():
    positions = {"a:1": None, "b:1": None, "a:2": 0, "a:3": 1, "b:3": 0, "b:4": 5}
    bd = per_switch_position(PER_QUERY, positions, max_position=2)
    assert [(r["group"], r["label"], r["n"], r["m"]) for r in bd.rows] == [
        (-1, NO_SWITCH, 2, 0.5), (0, "0", 2, 0.625), (1, "1", 1, 0.25), (2, "2+", 1, 1.0)]
    assert bd.n_unassigned == 1  # "noturn" has no position
    with pytest.raises(ValueError):
        per_switch_position(PER_QUERY, {"a:1": -1})
