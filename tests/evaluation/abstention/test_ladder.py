"""Step 1: rung names, the fusion rung's per-list min-max + sum (all-equal case included),
nDCG per rung, and the dense/hybrid rungs on a small MTRAG subset."""
import math

import pytest

from evaluation.abstention.config import AbstentionConfig
from evaluation.abstention.ladder import Ladder, LadderError, parse_rung
from retrieval.bm25 import BM25Retriever
from storage.benchmark import Benchmark, BenchTurn
from storage.records import Document

from tests.evaluation.abstention.helpers import sub_benchmark

DOCS = {"d1": "apple banana apple", "d2": "banana split dessert", "d3": "cherry pie recipe",
        "d4": "apple pie with banana", "d5": "grape juice"}


def tiny() -> Benchmark:
    corpus = {d: Document(d, "", t, d) for d, t in DOCS.items()}
    turns = [BenchTurn("c1:1", "c1", 1, "apple", gold={"d1": 1}, reference_answer="apple banana"),
             BenchTurn("c1:2", "c1", 2, "what about pie", history=(("user", "apple"), ("assistant", "apple banana")),
                       gold={"d3": 1}, reference_answer="cherry pie")]
    return Benchmark("tiny", "ours", corpus, turns)


def test_rung_names():
    assert parse_rung("bm25-history").query_mode == "full_history"
    assert parse_rung("rrf:rewrite").retriever == "rrf"
    assert parse_rung("hybrid:last_turn").needs_dense and parse_rung("hybrid").needs_expansions
    with pytest.raises(LadderError, match="unknown retriever 'bm25-magic'"):
        parse_rung("bm25-magic")
    with pytest.raises(LadderError):
        parse_rung("bm25:sideways")


def test_fusion_is_per_list_min_max_plus_sum():
    b = tiny()
    cfg = AbstentionConfig(retrievers=["bm25-turn", "fusion"], context_k=2, eval_k=5)
    ladder = Ladder(b, b.turns, cfg)
    exps = {"c1:1": ["apple banana", "cherry", "zzz"], "c1:2": ["pie", "banana"]}
    res = ladder.run(expansions=exps, expansion_backend="llm:test")
    bm = BM25Retriever().index(list(DOCS.items()))

    def norm(lst):  # hand-written min-max: all-equal (e.g. one candidate) -> 1.0 each
        if not lst:
            return {}
        lo, hi = min(lst.values()), max(lst.values())
        return {d: 1.0 if hi == lo else (s - lo) / (hi - lo) for d, s in lst.items()}

    for qid, e in exps.items():
        want: dict[str, float] = {}
        for text in e:
            for d, s in norm(bm.search({"q": text}, 100)["q"]).items():
                want[d] = want.get(d, 0.0) + s
        got = res.runs["fusion"][qid]
        assert set(got) == set(want)
        for d in got:
            assert got[d] == pytest.approx(want[d])
    # "cherry" matches d3 only: a one-candidate list gives it 1.0; "zzz" matches nothing
    assert res.runs["fusion"]["c1:1"]["d3"] == pytest.approx(1.0)
    assert res.expansion_backend == "llm:test" and "3 query expansions (llm:test)" in res.descriptions["fusion"]
    # nDCG@5 of bm25-turn: c1:1 finds d1 first (1.0); "what about pie" finds d3 or d4 first
    ranked = sorted(res.runs["bm25-turn"]["c1:2"].items(), key=lambda kv: (-kv[1], kv[0]))
    pos = [d for d, _ in ranked].index("d3") + 1
    assert res.ndcg["bm25-turn"] == pytest.approx((1.0 + 1 / math.log2(pos + 1)) / 2)
    with pytest.raises(LadderError, match="no expansions for 1 turns"):
        ladder.run(expansions={"c1:1": ["x"]}, expansion_backend="llm:test")


def test_prf_expansions_offline():
    b = tiny()
    ladder = Ladder(b, b.turns, AbstentionConfig(retrievers=["fusion"], prf_query="last_turn", n_expansions=2))
    res = ladder.run()
    assert res.expansion_backend == "prf"
    assert all(len(v) <= 2 and all(e.startswith(t.question) for e in v)
               for t, v in zip(b.turns, (res.expansions[t.sample_id] for t in b.turns)))


def test_dense_and_hybrid_rungs_on_a_subset(mtrag_clapnq, tmp_path):
    sb = sub_benchmark(mtrag_clapnq, n_convs=1, n_others=60)
    cfg = AbstentionConfig(retrievers=["bm25-turn", "dense", "hybrid"])
    ladder = Ladder(sb, [t for t in sb.turns if t.gold], cfg, cache_dir=tmp_path / "emb")
    res = ladder.run()
    from retrieval.fusion import minmax_fusion
    want = minmax_fusion(ladder.expansion_runs(res.expansions) + [ladder.dense.search(ladder.dense_queries(), 100)],
                         depth=10)
    for q, docs in res.runs["hybrid"].items():
        assert docs == pytest.approx(want[q])
    assert all(0.0 <= res.ndcg[r] <= 1.0 for r in res.runs)
    assert res.ndcg["dense"] != res.ndcg["bm25-turn"]
