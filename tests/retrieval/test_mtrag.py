"""Real data: BM25 / dense / hybrid on the MTRAG ClapNQ and Cloud pooled corpora (tests/data/mtrag).

Setting: the query files' ``text`` (lastturn / questions / rewrite), top 10, trec_eval tie
rule, metrics from pytrec_eval averaged over the qrels queries (a query that retrieved nothing
scores 0). BM25 = defaults (lucene, k1 1.2, b 0.75, ``[^\\W_]+`` lower-cased tokens).
Dense = the bundled MiniLM (all-MiniLM-L6-v2), normalised cosine, exact search. Hybrid =
BM25 + dense, depth 100 each, min-max fusion (``hybrid``) or RRF k=60 (``rrf``).

The numbers were computed once and are pinned as regressions. The full-pool dense / hybrid
test embeds 12.7k passages (minutes on 2 CPU cores) and is marked ``slow``; set
``MTR_EMB_CACHE`` to an embedding-cache folder to reuse vectors between runs. The default
suite runs dense and hybrid on a small deterministic subset instead.
"""
from __future__ import annotations

import os

import pytest

from retrieval.bm25 import BM25Retriever
from retrieval.dense import DenseRetriever
from retrieval.hybrid import HybridRetriever
from tests.retrieval.retrieval_testdata import DOMAINS, QUERY_TYPES, load_corpus, load_qrels, load_queries, mean_metrics

K = 10

# Orientation numbers (4 decimals) of the fixture (docs/experiments/retrieval-mtrag.md): nDCG@5, nDCG@10, R@5, R@10.
ORIENTATION = {
    ("clapnq", "lastturn"): (0.1762, 0.2186, 0.1862, 0.2902),
    ("clapnq", "questions"): (0.1447, 0.1841, 0.1518, 0.2451),
    ("clapnq", "rewrite"): (0.2195, 0.2668, 0.2331, 0.3449),
    ("cloud", "lastturn"): (0.1853, 0.2147, 0.2071, 0.2788),
    ("cloud", "questions"): (0.1137, 0.1447, 0.1462, 0.2195),
    ("cloud", "rewrite"): (0.2059, 0.2446, 0.2291, 0.3225),
}

# Our BM25, full precision (pytrec_eval means): nDCG@5, nDCG@10, R@5, R@10.
BM25_PINNED = {
    ("clapnq", "lastturn"): (0.17621460, 0.21864442, 0.18618361, 0.29015568),
    ("clapnq", "questions"): (0.14471020, 0.18412882, 0.15176282, 0.24511218),
    ("clapnq", "rewrite"): (0.21949861, 0.26678817, 0.23313874, 0.34491758),
    ("cloud", "lastturn"): (0.18531137, 0.21466447, 0.20710486, 0.27882472),
    ("cloud", "questions"): (0.11370111, 0.14474154, 0.14618794, 0.21951621),
    ("cloud", "rewrite"): (0.20591836, 0.24457214, 0.22909068, 0.32253040),
}

METRICS = ("ndcg_cut_5", "ndcg_cut_10", "recall_5", "recall_10")


def _queries(domain: str, qtype: str, qrels) -> dict[str, str]:
    return {q: t for q, t in load_queries(domain, qtype).items() if q in qrels}


def test_bm25_reproduces_the_orientation_numbers(tmp_path):
    for domain in DOMAINS:
        qrels = load_qrels(domain)
        bm25 = BM25Retriever(index_dir=tmp_path / "bm25").index(load_corpus(domain))
        for qtype in QUERY_TYPES:
            run = bm25.search(_queries(domain, qtype, qrels), K)
            assert set(run) == set(qrels) and all(len(v) <= K for v in run.values())
            m = mean_metrics(run, qrels, METRICS)
            got = tuple(m[x] for x in METRICS)
            assert got == pytest.approx(ORIENTATION[domain, qtype], abs=5.01e-5), (domain, qtype, got)
            assert got == pytest.approx(BM25_PINNED[domain, qtype], abs=1e-8), (domain, qtype, got)
        # the persisted index is reused by a second retriever
        again = BM25Retriever(index_dir=tmp_path / "bm25").index(load_corpus(domain))
        assert again.loaded_from_cache and again.index_path == bm25.index_path


# BM25 + offline PRF expansion (RM3 terms from the top 10 docs, 10 terms, 1 expansion, RRF
# of original + expanded query): (nDCG@5, R@5). Not better than plain BM25 on this pool.
PRF_PINNED = {
    ("clapnq", "lastturn"): (0.17414838, 0.19756181),
    ("clapnq", "questions"): (0.14466038, 0.15657051),
    ("clapnq", "rewrite"): (0.21126899, 0.24951923),
    ("cloud", "lastturn"): (0.17009878, 0.20293820),
    ("cloud", "questions"): (0.12335959, 0.16260132),
    ("cloud", "rewrite"): (0.18754274, 0.21862969),
}


def test_bm25_with_prf_expansion():
    from retrieval.expansion import ExpansionRetriever, QueryExpander
    for domain in DOMAINS:
        qrels = load_qrels(domain)
        er = ExpansionRetriever(BM25Retriever(), QueryExpander(n_expansions=1)).index(load_corpus(domain))
        assert er.describe()["expansion_backend"] == "prf"
        for qtype in QUERY_TYPES:
            m = mean_metrics(er.search(_queries(domain, qtype, qrels), K), qrels, ("ndcg_cut_5", "recall_5"))
            got = (m["ndcg_cut_5"], m["recall_5"])
            assert got == pytest.approx(PRF_PINNED[domain, qtype], abs=1e-8), (domain, qtype, got)


# ---------------------------------------------------------------------------------------
# dense and hybrid

def subset(domain: str, n_queries: int = 15, n_others: int = 120):
    """The qrels passages of the first ``n_queries`` qrels queries (sorted qid) plus every
    ``len/n_others``-th other passage (sorted doc id): a small, fixed corpus."""
    qrels = load_qrels(domain)
    qids = sorted(qrels)[:n_queries]
    sub_qrels = {q: qrels[q] for q in qids}
    relevant = {d for q in qids for d in qrels[q]}
    corpus = load_corpus(domain)
    others = sorted(d for d, _ in corpus if d not in relevant)
    step = len(others) / n_others
    keep = relevant | {others[int(i * step)] for i in range(n_others)}
    return [(d, t) for d, t in corpus if d in keep], sub_qrels


def evaluate_all(corpus, qrels, queries_by_type, cache_dir):
    """{(retriever, qtype): (nDCG@5, R@5)} for bm25, dense, hybrid (min-max) and rrf."""
    bm25 = BM25Retriever().index(corpus)
    dense = DenseRetriever(cache_dir=cache_dir).index(corpus)
    systems = {"bm25": bm25, "dense": dense,
               "hybrid": HybridRetriever([bm25, dense], fusion="minmax", depth=100),
               "rrf": HybridRetriever([bm25, dense], fusion="rrf", depth=100)}
    out = {}
    for qtype, queries in queries_by_type.items():
        for name, r in systems.items():
            m = mean_metrics(r.search(queries, K), qrels, ("ndcg_cut_5", "recall_5"))
            out[name, qtype] = (m["ndcg_cut_5"], m["recall_5"])
    return out


# computed once (see the module docstring); (nDCG@5, R@5)
SUBSET_PINNED = {
    ("clapnq", "bm25", "lastturn"): (0.62477401, 0.66555556),
    ("clapnq", "dense", "lastturn"): (0.75915573, 0.81666667),
    ("clapnq", "hybrid", "lastturn"): (0.78749929, 0.78777778),
    ("clapnq", "rrf", "lastturn"): (0.79598956, 0.84333333),
    ("clapnq", "bm25", "questions"): (0.39942857, 0.41888889),
    ("clapnq", "dense", "questions"): (0.40914565, 0.44444444),
    ("clapnq", "hybrid", "questions"): (0.42728924, 0.46333333),
    ("clapnq", "rrf", "questions"): (0.44457177, 0.46333333),
    ("clapnq", "bm25", "rewrite"): (0.54539398, 0.60666667),
    ("clapnq", "dense", "rewrite"): (0.78158836, 0.80333333),
    ("clapnq", "hybrid", "rewrite"): (0.72629135, 0.75888889),
    ("clapnq", "rrf", "rewrite"): (0.76405937, 0.78666667),
    ("cloud", "bm25", "lastturn"): (0.58358807, 0.62000000),
    ("cloud", "dense", "lastturn"): (0.40824925, 0.48444444),
    ("cloud", "hybrid", "lastturn"): (0.64179358, 0.67888889),
    ("cloud", "rrf", "lastturn"): (0.57577744, 0.59777778),
    ("cloud", "bm25", "questions"): (0.43619247, 0.46888889),
    ("cloud", "dense", "questions"): (0.41082752, 0.51555556),
    ("cloud", "hybrid", "questions"): (0.48236861, 0.55444444),
    ("cloud", "rrf", "questions"): (0.48640803, 0.52444444),
    ("cloud", "bm25", "rewrite"): (0.56377768, 0.60222222),
    ("cloud", "dense", "rewrite"): (0.53869527, 0.65666667),
    ("cloud", "hybrid", "rewrite"): (0.63175761, 0.70111111),
    ("cloud", "rrf", "rewrite"): (0.62062693, 0.65333333),
}

FULL_PINNED = {
    ("clapnq", "bm25", "lastturn"): (0.17621460, 0.18618361),
    ("clapnq", "dense", "lastturn"): (0.36545254, 0.41219093),
    ("clapnq", "hybrid", "lastturn"): (0.33385182, 0.35478480),
    ("clapnq", "rrf", "lastturn"): (0.32274892, 0.35162546),
    ("clapnq", "bm25", "questions"): (0.14471020, 0.15176282),
    ("clapnq", "dense", "questions"): (0.23348877, 0.26097756),
    ("clapnq", "hybrid", "questions"): (0.21274029, 0.23245192),
    ("clapnq", "rrf", "questions"): (0.21272537, 0.23405449),
    ("clapnq", "bm25", "rewrite"): (0.21949861, 0.23313874),
    ("clapnq", "dense", "rewrite"): (0.39405486, 0.43711081),
    ("clapnq", "hybrid", "rewrite"): (0.37760224, 0.40185440),
    ("clapnq", "rrf", "rewrite"): (0.36779760, 0.39148352),
    ("cloud", "bm25", "lastturn"): (0.18531137, 0.20710486),
    ("cloud", "dense", "lastturn"): (0.26880044, 0.30647163),
    ("cloud", "hybrid", "lastturn"): (0.28330206, 0.33618288),
    ("cloud", "rrf", "lastturn"): (0.27636125, 0.32137791),
    ("cloud", "bm25", "questions"): (0.11370111, 0.14618794),
    ("cloud", "dense", "questions"): (0.14585951, 0.18218085),
    ("cloud", "hybrid", "questions"): (0.15589680, 0.19796099),
    ("cloud", "rrf", "questions"): (0.15220978, 0.19574468),
    ("cloud", "bm25", "rewrite"): (0.20591836, 0.22909068),
    ("cloud", "dense", "rewrite"): (0.26724571, 0.30620567),
    ("cloud", "hybrid", "rewrite"): (0.30405699, 0.35063323),
    ("cloud", "rrf", "rewrite"): (0.28441678, 0.33884245),
}


def _check(got, pinned, tol):
    assert set(got) == set(pinned)
    for key, want in pinned.items():
        assert got[key] == pytest.approx(want, abs=tol), (key, got[key], want)


def test_dense_and_hybrid_on_a_subset(tmp_path):
    got = {}
    for domain in DOMAINS:
        corpus, qrels = subset(domain)
        queries = {qt: _queries(domain, qt, qrels) for qt in QUERY_TYPES}
        for (name, qt), v in evaluate_all(corpus, qrels, queries, tmp_path / "emb").items():
            got[domain, name, qt] = v
    _check(got, SUBSET_PINNED, 1e-4)


@pytest.mark.slow
def test_dense_and_hybrid_on_the_full_pools(tmp_path):
    cache = os.environ.get("MTR_EMB_CACHE") or tmp_path / "emb"
    got = {}
    for domain in DOMAINS:
        qrels = load_qrels(domain)
        queries = {qt: _queries(domain, qt, qrels) for qt in QUERY_TYPES}
        for (name, qt), v in evaluate_all(load_corpus(domain), qrels, queries, cache).items():
            got[domain, name, qt] = v
    _check(got, FULL_PINNED, 1e-4)
