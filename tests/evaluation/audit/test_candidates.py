import random
from collections import Counter

import pytest
from scipy.stats import chisquare

from evaluation.audit.candidates import (NegativeMiner, benchmark_negatives, build_query, item_seed, ordered_gold,
                                         primary_gold, shuffle_candidates)
from evaluation.audit.config import AuditConfig
from evaluation.audit.prepare import prepare_benchmark, select_turns
from storage.benchmark import Benchmark, BenchTurn, coral_neighbours
from storage.records import Document


def test_shuffle_moves_the_gold_uniformly_over_200_items():
    positions = []
    for i in range(200):
        cs = shuffle_candidates(f"conv{i}::{i % 7}", "gold", [f"neg{k}" for k in range(7)], seed=13, source="retrieved")
        assert cs.order[cs.gold_position - 1] == "gold" and sorted(cs.order) == sorted(["gold"] + [f"neg{k}" for k in range(7)])
        positions.append(cs.gold_position)
    counts = Counter(positions)
    assert set(counts) == set(range(1, 9))
    obs = [counts[p] for p in range(1, 9)]
    # 7 degrees of freedom: p > 0.01 means no evidence against uniformity; the reference
    # always put the gold first (obs = [200, 0, ...], p ~ 0)
    assert chisquare(obs).pvalue > 0.01
    assert max(obs) < 200 * 0.25
    assert chisquare([200, 0, 0, 0, 0, 0, 0, 0]).pvalue < 1e-10


def test_seed_is_recorded_and_reproduces_the_order():
    cs = shuffle_candidates("c1:3", "g", ["a", "b", "c", "d"], seed=7, source="retrieved", query="q")
    assert cs.seed == 7 and cs.item_seed == item_seed(7, "c1:3", "retrieved")
    order = ["g", "a", "b", "c", "d"]
    random.Random(cs.item_seed).shuffle(order)
    assert tuple(order) == cs.order
    # same item, same seed -> same order, independent of other items; other seed / source -> other seeds
    assert shuffle_candidates("c1:3", "g", ["a", "b", "c", "d"], 7, "retrieved").order == cs.order
    assert item_seed(8, "c1:3", "retrieved") != cs.item_seed != item_seed(7, "c1:3", "benchmark")
    rev = cs.reverse()
    assert rev.order == cs.order[::-1] and rev.reversed and rev.variant == "retrieved-reversed"
    assert rev.order[rev.gold_position - 1] == "g" and rev.gold_position == 6 - cs.gold_position
    with pytest.raises(ValueError):
        shuffle_candidates("x", "g", ["g", "a"], 1, "retrieved")


def test_primary_gold_and_benchmark_candidates():
    assert primary_gold({"a": 1, "b": 2, "c": 2}) == "b"
    assert ordered_gold({"a": 1, "b": 2, "c": 2}) == ["b", "c", "a"]
    t = BenchTurn("s", "c", 1, "q", gold={"g": 1, "g2": 1}, candidates=("x", "g2", "g", "y", "z"))
    assert benchmark_negatives(t, 2) == ["x", "y"]                     # other gold left out, first n kept
    assert benchmark_negatives(BenchTurn("s", "c", 1, "q", gold={"g": 1}, candidates=("x",)), 7) is None
    assert benchmark_negatives(BenchTurn("s", "c", 1, "q", gold={"g": 1}), 7) is None
    order = [str(i) for i in range(1, 21)]
    assert coral_neighbours(order, "10") == tuple(str(i) for i in range(7, 15))    # gold -3 ... +4
    assert coral_neighbours(order, "1") == tuple(str(i) for i in range(1, 9))      # clamped at the start
    assert coral_neighbours(order, "20") == tuple(str(i) for i in range(13, 21))   # clamped at the end


def test_query_builder_for_negatives():
    t = BenchTurn("s", "c", 2, "and its height?", history=(("user", "tell me about the eiffel tower"),
                                                           ("assistant", "It is in Paris.")))
    assert build_query(t) == ("tell me about the eiffel tower\nand its height?", "all_user_turns")
    t2 = BenchTurn("s", "c", 2, "and its height?", rewrite="How tall is the Eiffel Tower?")
    assert build_query(t2) == ("How tall is the Eiffel Tower?", "rewrite")
    assert build_query(t, "last_turn") == ("and its height?", "last_turn")


def _corpus():
    docs = {
        "gold": "The Eiffel Tower is 330 metres tall and stands in Paris.",
        "dup": "The  Eiffel Tower is 330 metres tall and stands in Paris.",     # same text as gold
        "n1": "The Eiffel Tower was designed by the company of Gustave Eiffel.",
        "n2": "Paris is the capital of France; the tower attracts visitors.",
        "n3": "The Statue of Liberty is tall and stands in New York.",
        "n4": "Big Ben is a bell in London.",
        "empty": "   ",
    }
    return {d: Document(d, "", t, "x") for d, t in docs.items()}


@pytest.mark.parametrize("method", ["bm25", "hybrid"])
def test_negative_miner_excludes_gold_duplicates_and_empty(method):
    miner = NegativeMiner(_corpus(), method)
    negs = miner.mine({"q": "How tall is the Eiffel Tower in Paris?"}, {"q": ["gold"]}, 3)["q"]
    assert len(negs) == 3 and "gold" not in negs and "dup" not in negs and "empty" not in negs
    assert negs[0] in ("n1", "n2")
    assert miner.describe()["method"] == method


def test_prepare_records_skips_and_candidate_lists(synthetic):
    b = synthetic(10)
    corpus = dict(b.corpus)
    del corpus["orchid-0"]                                   # turn 2's gold is missing from the corpus
    turns = list(b.turns)
    turns[3] = BenchTurn("c3:1", "c3", 1, "unanswerable?", answerability="UNANSWERABLE")      # no gold
    turns[4] = BenchTurn(**{**{f: getattr(turns[4], f) for f in turns[4].__dataclass_fields__}, "reference_answer": ""})
    bench = Benchmark("syn", "ours", corpus, turns)
    p = prepare_benchmark(bench, AuditConfig(negatives="bm25", n_negatives=4, reverse_pass=True))
    reasons = {(s["sample_id"], s["metric"], s["variant"]): s["reason"] for s in p.skipped}
    assert reasons[("c2:1", "alignment", "")] == "gold_missing"
    assert reasons[("c2:1", "distinguishability", "retrieved-reversed")] == "gold_missing"
    assert reasons[("c3:1", "quality", "")] == "no_gold"
    assert reasons[("c4:1", "faithfulness", "")] == reasons[("c4:1", "quality", "")] == "no_answer"
    assert ("c4:1", "alignment", "") not in reasons
    assert p.counts()["skipped_by_reason"] == {"gold_missing": 1, "no_gold": 1, "no_answer": 1}
    units = Counter((u.metric, u.variant) for u in p.units)
    assert units == {("alignment", ""): 8, ("distinguishability", "retrieved"): 8,
                     ("distinguishability", "retrieved-reversed"): 8, ("faithfulness", ""): 7, ("quality", ""): 7}
    for u in p.units:
        if u.cset is not None:
            shown = [c["doc_id"] for c in u.inputs["candidates"]]
            assert tuple(shown) == u.cset.order and shown[u.cset.gold_position - 1] == u.cset.gold_doc
            assert len(shown) == 5 and u.inputs["question"] == bench.by_id()[u.sample_id].question


def test_sampling_is_seeded(synthetic):
    turns = synthetic(20).turns
    a = select_turns(turns, AuditConfig(sample=5, seed=1))
    assert [t.sample_id for t in a] == [t.sample_id for t in select_turns(turns, AuditConfig(sample=5, seed=1))]
    assert [t.sample_id for t in a] != [t.sample_id for t in select_turns(turns, AuditConfig(sample=5, seed=2))]
    assert len(select_turns(turns, AuditConfig(sample=5, limit=3))) == 3
