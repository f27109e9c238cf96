"""The realism report's ratio breakdown: the cluster bootstrap of a ratio of sums and the kinds of turns."""
from __future__ import annotations

import pytest

from evaluation.bootstrap import ratio_ci
from evaluation.realism import format_breakdown, ratio_breakdown, turn_kind
from storage.benchmark.model import Benchmark, BenchTurn
from storage.records import Document


def test_ratio_ci_is_the_ratio_of_sums_with_conversations_resampled_whole():
    # conversation A: last 0.5 + 0.5, rewrite 1.0 + 1.0; conversation B: 1.0 -> 1.0
    groups = [[(0.5, 1.0), (0.5, 1.0)], [(1.0, 1.0)]]
    ci = ratio_ci(groups, n_resamples=4000, seed=1)
    assert ci.mean == pytest.approx(3.0 / 2.0)          # (1 + 1 + 1) / (0.5 + 0.5 + 1): sums, not a mean of ratios
    assert ci.n == 2
    # the only resamples: AA = 4/2 = 2.0, BB = 1/1 = 1.0, AB = 3/2 = 1.5 (each a quarter, a half, a quarter)
    assert ci.low == pytest.approx(1.0) and ci.high == pytest.approx(2.0)
    # one conversation: no spread to resample
    one = ratio_ci([[(0.2, 0.3)]])
    assert (one.mean, one.low, one.high) == pytest.approx((1.5, 1.5, 1.5))
    # the same seed gives the same interval
    assert ratio_ci(groups, n_resamples=500, seed=3) == ratio_ci(groups, n_resamples=500, seed=3)
    with pytest.raises(ValueError, match="sum to 0"):
        ratio_ci([[(0.0, 1.0)]])
    with pytest.raises(ValueError, match="at least one pair"):
        ratio_ci([[]])


def _turn(conv, k, q, rewrite=None, since=None, gold=None, history=True):
    hist = (("user", "What is the Berlin Wall?"), ("assistant", "A wall.")) if history and k > 1 else ()
    return BenchTurn(sample_id=f"{conv}:{k}", conv_id=conv, turn=k, question=q, history=hist, rewrite=rewrite,
                     turns_since_switch=since, gold=gold or {})


def test_turn_kind():
    assert turn_kind(_turn("c", 1, "When was the Berlin Wall built?"), True) == "first / wh"
    assert turn_kind(_turn("c", 3, "Did it fall in 1989?", "Did the Berlin Wall fall in 1989?"), False) == "leans / yes-no"
    assert turn_kind(_turn("c", 3, "who built it", "Who built the Berlin Wall?"), False) == "leans / wh"
    # the same words, case and punctuation aside: asked in full; so is a turn without a rewrite
    assert turn_kind(_turn("c", 3, "who built the berlin wall", "Who built the Berlin Wall?"), False) == \
        "asked in full / wh"
    assert turn_kind(_turn("c", 3, "Is the wall long?"), False) == "asked in full / yes-no"
    assert turn_kind(_turn("c", 4, "When was Rome founded?", "When was Rome founded?", since=0), False) == "switch / wh"


def test_ratio_breakdown_on_a_small_benchmark():
    corpus = {"wall": Document(doc_id="wall", title="",
                               text="The Berlin Wall was built in 1961 by East Germany.", source="t"),
              "rome": Document(doc_id="rome", title="",
                               text="Rome was founded in 753 BC according to legend.", source="t"),
              "tea": Document(doc_id="tea", title="",
                              text="Green tea is made from unoxidised leaves.", source="t")}
    turns = [_turn("c1", 1, "When was the Berlin Wall built?", "When was the Berlin Wall built?", gold={"wall": 1}),
             _turn("c1", 2, "Who was behind it?", "Who was behind the Berlin Wall?", gold={"wall": 1}),
             _turn("c2", 1, "When was Rome founded?", "When was Rome founded?", gold={"rome": 1})]
    bench = Benchmark(name="t", format="ours", corpus=corpus, turns=turns)
    bd = ratio_breakdown(bench, "bm25", n_resamples=200)
    rows = {r["kind"]: r for r in bd["rows"]}
    assert [r["kind"] for r in bd["rows"]] == ["first / wh", "leans / wh"]
    assert rows["first / wh"]["n"] == 2 and rows["first / wh"]["last_turn"] == pytest.approx(1.0)
    # "Who was behind it?" shares no content word with any passage: the wall is not ranked first; its rewrite finds it
    lean = rows["leans / wh"]
    assert lean["n"] == 1 and lean["last_turn"] < 1.0 and lean["rewrite"] == pytest.approx(1.0)
    # the ratio is one of sums over the three turns: (1 + 1 + 1) / (1 + x + 1)
    assert bd["ratio"] == pytest.approx(3.0 / (2.0 + lean["last_turn"])) and bd["conversations"] == 2
    assert bd["low"] <= bd["ratio"] <= bd["high"]
    text = format_breakdown("t", bd)
    assert f"rewrite / last turn {bd['ratio']:.3f}" in text and f"| leans / wh | 1 | {lean['last_turn']:.3f} | 1.000 |" in text
