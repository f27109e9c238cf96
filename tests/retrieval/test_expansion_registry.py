"""Query expansion (PRF and LLM hook), hybrid retriever and the registry."""
from __future__ import annotations

import pytest

from retrieval.registry import RETRIEVERS, build_retriever
from retrieval.base import RetrievalError
from retrieval.bm25 import BM25Retriever
from retrieval.dense import DenseRetriever
from retrieval.expansion import ExpansionRetriever, QueryExpander
from retrieval.hybrid import HybridRetriever

DOCS = [
    ("c1", "The Cardinals stadium is in Glendale, Arizona, home games are played there"),
    ("c2", "Glendale Arizona hosts State Farm Stadium events and concerts"),
    ("c3", "Glendale Arizona weather: hot summers, mild winters in Glendale"),
    ("c4", "Cardinals are red songbirds common in North America"),
    ("c5", "Pizza dough needs flour, water, yeast and salt"),
]


def test_prf_expansion_is_deterministic_rm3_terms():
    ex = QueryExpander(n_expansions=2, feedback_docs=2, feedback_terms=2).index(DOCS)
    terms = dict(ex.feedback_terms_for("cardinals stadium"))
    # feedback docs: c1 (12 tokens) and c4 (8 tokens); w(t) = sum_d bm25(d) * tf(t, d) / |d|
    top = BM25Retriever().index(DOCS).search({"q": "cardinals stadium"}, 2)["q"]
    assert list(top) == ["c1", "c4"]
    assert terms["arizona"] == pytest.approx(top["c1"] / 12)
    assert terms["songbirds"] == pytest.approx(top["c4"] / 8)
    # query terms, stopwords ("the", "is", "in", "are") and non-feedback docs' terms are excluded
    assert not {"cardinals", "stadium", "the", "is", "in", "are", "pizza", "weather"} & set(terms)
    assert len(terms) == 5 + 5  # arizona games glendale home played + america common north red songbirds
    exps = ex.expand({"q": "cardinals stadium"})
    assert exps == ex.expand({"q": "cardinals stadium"})  # deterministic
    # equal weights are ordered alphabetically; groups of feedback_terms=2 terms
    assert exps["q"] == ["cardinals stadium arizona games", "cardinals stadium glendale home"]
    d = ex.describe()
    assert d["expansion_backend"] == "prf" and d["n_expansions"] == 2 and d["feedback_docs"] == 2
    # no feedback docs -> no expansion, counted as short
    assert ex.expand({"z": "zzz"}) == {"z": []} and ex.stats["short"] == 1


def test_llm_hook_expansion_and_record():
    calls = []

    def hyde(query: str) -> list[str]:
        calls.append(query)
        return ["State Farm Stadium in Glendale, Arizona", "  ", "arizona cardinals home field", "extra"]

    ex = QueryExpander(n_expansions=2, llm=hyde)
    assert ex.backend == "llm"
    assert ex.expand({"q": "where do the cardinals play"}) == {
        "q": ["State Farm Stadium in Glendale, Arizona", "arizona cardinals home field"]}
    assert calls == ["where do the cardinals play"]
    assert ex.describe()["expansion_backend"] == "llm" and ex.describe()["llm"] == "hyde"
    bad = QueryExpander(llm=lambda q: "not a list")
    with pytest.raises(RetrievalError, match="list"):
        bad.expand({"q": "x"})


def test_expansion_retriever_finds_vocabulary_mismatch():
    base = BM25Retriever()
    plain = BM25Retriever().index(DOCS).search({"q": "cardinals stadium"}, 5)["q"]
    assert "c3" not in plain  # shares no word with the query
    er = ExpansionRetriever(base, QueryExpander(n_expansions=1, feedback_docs=2, feedback_terms=2)).index(DOCS)
    run = er.search({"q": "cardinals stadium", "e": "zzz"}, k=5)
    assert "c3" in run["q"] and run["e"] == {}
    assert er.expander._fb is base  # the base BM25 index is reused for feedback
    assert er.describe()["expansion_backend"] == "prf"
    llm = ExpansionRetriever(BM25Retriever(), QueryExpander(llm=lambda q: ["glendale weather"])).index(DOCS)
    top = llm.search({"q": "cardinals stadium"}, k=3)["q"]
    assert "c3" in top and llm.describe()["expansion_backend"] == "llm"


class FixedRetriever:
    """A stand-in retriever with fixed runs (for checking the hybrid plumbing)."""

    def __init__(self, run):
        self.run = run
        self.indexed = None

    def index(self, docs):
        self.indexed = list(docs)
        return self

    def search(self, queries, k=10):
        return {q: dict(list(self.run.get(q, {}).items())[:k]) for q in queries}


def test_hybrid_fuses_components():
    a = FixedRetriever({"q": {"x": 2.0, "y": 1.0}})
    b = FixedRetriever({"q": {"y": 0.9, "z": 0.1}})
    h = HybridRetriever([a, b], fusion="minmax").index([("x", "t"), ("y", "t"), ("z", "t")])
    assert a.indexed == b.indexed == [("x", "t"), ("y", "t"), ("z", "t")]
    run = h.search({"q": "anything", "none": "..."}, k=2)
    assert run == {"q": {"y": 1.0, "x": 1.0}, "none": {}}  # y: 0 + 1, x: 1 + 0, tie -> id desc
    r = HybridRetriever([a, b], fusion="rrf").search({"q": "."}, k=3)
    assert r["q"] == pytest.approx({"y": 1 / 62 + 1 / 61, "x": 1 / 61, "z": 1 / 62})
    with pytest.raises(RetrievalError):
        HybridRetriever([a, b], fusion="sum")


def test_registry_builds_every_name(tmp_path):
    assert RETRIEVERS == ("bm25", "dense", "hybrid", "rrf")
    bm = build_retriever("bm25", k1=0.9, stemmer="english", index_dir=tmp_path / "bm25")
    assert isinstance(bm, BM25Retriever) and bm.k1 == 0.9
    de = build_retriever("dense", cache_dir=tmp_path / "emb", batch_size=8)
    assert isinstance(de, DenseRetriever) and de.batch_size == 8
    hy = build_retriever("hybrid", k1=1.0, cache_dir=tmp_path / "emb", weights=[1, 2], depth=50)
    assert isinstance(hy, HybridRetriever) and hy.fusion == "minmax" and hy.depth == 50
    assert hy.retrievers[0].k1 == 1.0 and hy.retrievers[1].cache is not None and hy.weights == [1, 2]
    rr = build_retriever("RRF", bm25={"b": 0.5}, rrf_k=10)
    assert rr.fusion == "rrf" and rr.rrf_k == 10 and rr.retrievers[0].b == 0.5 and rr.name == "rrf"
    with pytest.raises(RetrievalError, match="unknown retriever"):
        build_retriever("splade")
    with pytest.raises(RetrievalError, match="unknown parameters"):
        build_retriever("hybrid", colour="red")
    with pytest.raises(RetrievalError, match="bad parameters"):
        build_retriever("bm25", colour="red")
    with pytest.raises(RetrievalError):
        build_retriever("rrf", fusion="minmax")


def test_hybrid_bm25_dense_end_to_end(tmp_path):
    h = build_retriever("hybrid", cache_dir=tmp_path / "emb", depth=5)
    h.index(DOCS)
    run = h.search({"q": "where do the arizona cardinals play football", "p": "how to make pizza"}, k=3)
    assert next(iter(run["p"])) == "c5"
    assert set(run["q"]) <= {"c1", "c2", "c3", "c4"} and "c1" in run["q"]
    bm, de = h.last_component_runs
    assert set(bm["q"]) <= {"c1", "c2", "c3", "c4"} and len(de["q"]) == 5
    from retrieval.fusion import minmax_fusion
    assert run == minmax_fusion([bm, de], depth=3)


class _FixedRun:
    """A stand-in component: indexes nothing, always returns the same ranked list."""

    def __init__(self, scores):
        self.scores, self.indexed = scores, 0

    def index(self, docs):
        self.indexed += 1
        return self

    def search(self, queries, k=10):
        return {q: dict(list(self.scores.items())[:k]) for q in queries}


def test_indexed_retriever_builds_indexes_and_reuses_components(tmp_path):
    from retrieval.registry import indexed_retriever
    bm25 = indexed_retriever("bm25", DOCS, index_dir=tmp_path / "bm25")
    assert isinstance(bm25, BM25Retriever) and bm25.index_path is not None
    assert bm25.search({"q": "pizza flour"}, 1) == BM25Retriever().index(DOCS).search({"q": "pizza flour"}, 1)
    # an already indexed component is reused as is (neither rebuilt nor re-indexed)
    dense = _FixedRun({"c5": 0.9, "c4": 0.5})
    rrf = indexed_retriever("rrf", DOCS, bm25=bm25, dense=dense, depth=2)
    assert isinstance(rrf, HybridRetriever) and rrf.retrievers == [bm25, dense]
    assert (rrf.fusion, rrf.depth, dense.indexed) == ("rrf", 2, 0)
    # RRF (k=60) over bm25 [c5] and dense [c5, c4]: c5 = 2/61, c4 = 1/62
    run = rrf.search({"q": "pizza flour"}, 2)["q"]
    assert list(run) == ["c5", "c4"]
    assert run["c5"] == pytest.approx(2 / 61) and run["c4"] == pytest.approx(1 / 62)
    assert indexed_retriever("bm25", DOCS, bm25=bm25) is bm25


def test_indexed_retriever_rejects_unknown_names_and_misplaced_fusion_params():
    from retrieval.registry import indexed_retriever
    with pytest.raises(RetrievalError, match="unknown retriever 'splade'"):
        indexed_retriever("splade", DOCS)
    with pytest.raises(RetrievalError, match="no fusion parameters"):
        indexed_retriever("bm25", DOCS, depth=5)
