"""Counterbalanced gold positions and the position-bias statistics (hand-computed values)."""
import math
from collections import Counter

import pytest
from scipy.stats import chi2_contingency

from evaluation.audit.aggregate import position_rows
from evaluation.audit.base import JudgeSpec
from evaluation.audit.candidates import (counterbalanced_slots, design_seed, item_seed, place_candidates,
                                         shuffle_candidates)
from evaluation.audit.config import AuditConfig
from evaluation.audit.position import chosen_position_test, position_bias, slot_accuracy_test
from evaluation.audit.prepare import prepare_benchmark
from tests.evaluation.audit.conftest import synthetic_benchmark


def _sf3(x):
    # chi-square survival function, 3 degrees of freedom, closed form
    return math.erfc(math.sqrt(x / 2)) + math.sqrt(2 * x / math.pi) * math.exp(-x / 2)


def test_slots_are_counterbalanced_within_plus_minus_one():
    # 180 lists of 8: 180 / 8 = 22.5 -> four slots get 23, four get 22 (shuffling gave 41 and 16)
    slots = counterbalanced_slots({f"conv{i}:{i % 5}": 8 for i in range(180)}, seed=design_seed(13, "b", "retrieved"))
    counts = Counter(slots.values())
    assert sorted(counts) == list(range(1, 9)) and sorted(counts.values()) == [22] * 4 + [23] * 4
    rev = Counter(9 - s for s in slots.values())                     # the reversed pass is balanced too
    assert sorted(rev.values()) == [22] * 4 + [23] * 4
    # lists of other lengths are balanced among themselves: 7 lists of 3 -> 3, 2, 2
    mixed = counterbalanced_slots({**{f"a{i}": 8 for i in range(16)}, **{f"s{i}": 3 for i in range(7)}}, seed=1)
    assert sorted(Counter(v for k, v in mixed.items() if k.startswith("s")).values()) == [2, 2, 3]
    assert Counter(v for k, v in mixed.items() if k.startswith("a")) == {s: 2 for s in range(1, 9)}


def test_slots_depend_on_the_seed_not_on_the_item_order():
    items = {f"t{i}": 6 for i in range(30)}
    a = counterbalanced_slots(items, seed=5)
    assert counterbalanced_slots(dict(reversed(list(items.items()))), seed=5) == a
    assert counterbalanced_slots(items, seed=6) != a
    with pytest.raises(ValueError):
        counterbalanced_slots({"x": 0}, seed=1)


def test_place_candidates_puts_gold_at_the_slot_and_shuffles_negatives():
    negs = ["a", "b", "c", "d"]
    cs = place_candidates("c1:2", "g", negs, seed=7, source="retrieved", slot=3, design_seed=99, query="q")
    assert cs.order[2] == "g" and cs.gold_position == 3 and cs.design == "counterbalanced" and cs.design_seed == 99
    import random
    shuffled = list(negs)
    random.Random(item_seed(7, "c1:2", "retrieved")).shuffle(shuffled)
    assert [d for d in cs.order if d != "g"] == shuffled
    rev = cs.reverse()
    assert rev.gold_position == 3 and rev.order[2] == "g"               # 5 + 1 - 3
    with pytest.raises(ValueError):
        place_candidates("x", "g", negs, 7, "retrieved", slot=6, design_seed=1)
    assert shuffle_candidates("c1:2", "g", negs, 7, "retrieved").design == "shuffled"


def test_prepare_counterbalances_each_benchmark():
    b = synthetic_benchmark(20, n_docs_per_topic=5)
    p = prepare_benchmark(b, AuditConfig(negatives="bm25", n_negatives=4, metrics=["distinguishability"]))
    counts = Counter(c.gold_position for c in p.candidate_sets)
    assert counts == {s: 4 for s in range(1, 6)}                        # 20 lists of 5: exactly 4 per slot
    assert {c.design for c in p.candidate_sets} == {"counterbalanced"}
    assert {c.design_seed for c in p.candidate_sets} == {design_seed(13, b.name, "retrieved")}
    old = prepare_benchmark(b, AuditConfig(negatives="bm25", n_negatives=4, metrics=["distinguishability"],
                                           positions="shuffled"))
    assert {c.design for c in old.candidate_sets} == {"shuffled"}
    for c, o in zip(p.candidate_sets, old.candidate_sets):        # same lists, only the order differs
        assert sorted(c.order) == sorted(o.order) and c.gold_doc == o.gold_doc


def test_chosen_position_test_hand_computed():
    # gold one per slot, picks (3, 0, 1, 0): (3-1)^2 + 1 + 0 + 1 = 6, df 3
    x, df, p = chosen_position_test([3, 0, 1, 0], [1, 1, 1, 1])
    assert (x, df) == (6.0, 3) and p == pytest.approx(_sf3(6.0))
    # an always-first judge on 16 counterbalanced lists of 8: 14^2/2 + 7 * 2^2/2 = 112
    assert chosen_position_test([16] + [0] * 7, [2] * 8)[0] == 112.0
    # a judge that follows the gold exactly: 0, p = 1
    assert chosen_position_test([2, 3, 1], [2, 3, 1])[:2] == (0.0, 2)
    assert math.isnan(chosen_position_test([1, 1, 0], [2, 0, 0])[0])      # a slot never held the gold


def test_slot_accuracy_test_hand_computed_and_against_scipy():
    # right 3/4, 1/4, 2/4: expected 2 right, 2 wrong per slot -> (1 + 1)/2 + (1 + 1)/2 + 0 = 2, df 2, p = e^-1
    x, df, p = slot_accuracy_test([3, 1, 2], [4, 4, 4])
    assert (x, df) == (pytest.approx(2.0), 2) and p == pytest.approx(math.exp(-1))
    ref = chi2_contingency([[3, 1, 2], [1, 3, 2]], correction=False)
    assert x == pytest.approx(ref.statistic) and p == pytest.approx(ref.pvalue)
    assert slot_accuracy_test([2, 0], [2, 2])[0] == pytest.approx(4.0)   # perfect association, n = 4
    assert math.isnan(slot_accuracy_test([2, 2], [2, 2])[0])             # always right: undefined
    assert slot_accuracy_test([1, 0, 1], [2, 0, 2])[1] == 1               # empty slot left out


def test_position_rows_report_accuracy_by_slot_and_the_test():
    # one judge, lists of 4, gold once per slot twice (8 items); it picks slot 1 unless gold is in 3
    rows = []
    for i in range(8):
        g = i % 4 + 1
        c = 3 if g == 3 else 1
        order = [f"d{i}-{k}" for k in range(4)]
        rows.append({"benchmark": "b", "candidate_source": "retrieved", "judge": "j", "pass": "forward",
                     "metric": "distinguishability", "unit_id": f"u{i}", "status": "ok", "candidates": order,
                     "gold_position": g, "chosen_position": c, "chosen_doc": order[c - 1], "score": float(g == c)})
    (r,) = position_rows(rows, [JudgeSpec("j")])
    assert r["accuracy_by_gold_position"] == [1.0, 0.0, 1.0, 0.0] and r["n_tested"] == 8
    assert r["first_position_rate"] == 0.75 and r["last_position_rate"] == 0.0
    assert r["chosen_position_hist"] == [6, 0, 2, 0] and r["gold_position_hist"] == [2, 2, 2, 2]
    # (6-2)^2/2 + 2 + 0 + 2 = 12, df 3
    assert (r["position_chi2"], r["position_df"]) == (12.0, 3) and r["position_p"] == pytest.approx(_sf3(12.0))
    # right (2, 0, 2, 0) of 2 each: 4 right, 4 wrong, expected 1/1 per slot -> 4 * (1 + 1) = 8, df 3
    assert r["slot_accuracy_chi2"] == pytest.approx(8.0) and r["slot_accuracy_p"] == pytest.approx(_sf3(8.0))
    pb = position_bias([(1, 1), (2, 1)], 2)
    assert pb.n == 2 and pb.first_rate == 1.0 and pb.accuracy_by_slot == [1.0, 0.0]
