"""BM25Retriever: tokenizer, hand-checked scores, bm25s / rank_bm25 agreement, ties, index reuse."""
from __future__ import annotations

import math

import numpy as np
import pytest

from retrieval.base import RetrievalError
from retrieval.bm25 import BM25Retriever, BM25Tokenizer

DOCS = [
    ("d1", "The cat sat on the mat."),
    ("d2", "A dog chased the cat; the cat ran."),
    ("d3", "Dogs and cats are pets"),
    ("d4", "Quantum chromodynamics"),
]


def lucene_scores(docs, query, k1=1.2, b=0.75):
    """Hand formula: idf = ln(1 + (N - df + .5)/(df + .5)); tf/(tf + k1(1 - b + b dl/avgdl))."""
    tok = BM25Tokenizer()
    toks = {d: tok(t) for d, t in docs}
    n = len(docs)
    avgdl = sum(len(t) for t in toks.values()) / n
    out = {}
    for d, ts in toks.items():
        s = 0.0
        for q in tok(query):
            df = sum(1 for x in toks.values() if q in x)
            if df == 0:
                continue
            tf = ts.count(q)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            s += idf * tf / (tf + k1 * (1 - b + b * len(ts) / avgdl))
        if s > 0:
            out[d] = s
    return out


def test_default_tokenizer_is_unicode_word_runs():
    tok = BM25Tokenizer()
    assert tok("Hello, World_foo déjà-vu 42x ÉCOLE") == ["hello", "world", "foo", "déjà", "vu", "42x", "école"]
    assert tok("  ...  ") == []


def test_tokenizer_options_stopwords_and_stemming():
    assert BM25Tokenizer(stopwords="en")("the cats are running") == ["cats", "running"]
    assert BM25Tokenizer(stemmer="english")("the cats are running") == ["the", "cat", "are", "run"]
    assert BM25Tokenizer(stopwords=["cats"])("the cats") == ["the"]
    with pytest.raises(RetrievalError):
        BM25Tokenizer(stemmer="klingon")
    with pytest.raises(RetrievalError):
        BM25Tokenizer(stopwords="xx")


def test_scores_equal_hand_computation():
    r = BM25Retriever().index(DOCS)
    for query in ["cat", "the cat", "dog cat mat", "cats pets quantum"]:
        got = r.search({"q": query}, k=10)["q"]
        want = lucene_scores(DOCS, query)
        assert got.keys() == want.keys()
        for d in want:
            assert got[d] == pytest.approx(want[d], rel=1e-6)


def test_query_tokens_count_with_multiplicity():
    r = BM25Retriever().index(DOCS)
    one = r.search({"q": "cat"}, 10)["q"]
    two = r.search({"q": "cat CAT"}, 10)["q"]
    assert two == {d: pytest.approx(2 * s, rel=1e-9) for d, s in one.items()}


@pytest.mark.parametrize("method", ["lucene", "robertson", "atire", "bm25+", "bm25l"])
def test_equals_raw_bm25s(method):
    import bm25s
    tok = BM25Tokenizer()
    texts = [t for _, t in DOCS]
    raw = bm25s.BM25(k1=1.2, b=0.75, method=method)
    raw.index([tok(t) for t in texts], show_progress=False)
    ours = BM25Retriever(method=method).index(DOCS)
    for query in ["the cat", "dogs chased cats", "mat"]:
        raw_scores = raw.get_scores(tok(query))
        got = ours.search({"q": query}, 10)["q"]
        for i, (d, _) in enumerate(DOCS):
            if d in got:
                assert got[d] == float(raw_scores[i])  # bit-identical: same accumulation order
            else:  # only docs without a positive score are left out
                assert raw_scores[i] <= 0 or method in ("bm25+", "bm25l")
                if method == "lucene":  # lucene idf > 0: left out = shares no token
                    assert not set(tok(query)) & set(tok(texts[i]))


def test_okapi_variant_equals_rank_bm25():
    from rank_bm25 import BM25Okapi
    docs = [("a", "red apple pie"), ("b", "green apple"), ("c", "blue sky"), ("d", "red sky at night"),
            ("e", "pie chart"), ("f", "night owl")]
    tok = BM25Tokenizer()
    ref = BM25Okapi([tok(t) for _, t in docs], k1=1.2, b=0.75)
    ours = BM25Retriever(method="atire", idf_method="robertson").index(docs)
    for query in ["red apple", "sky night", "pie"]:
        want = ref.get_scores(tok(query))
        got = ours.search({"q": query}, 10)["q"]
        for i, (d, _) in enumerate(docs):
            assert got.get(d, 0.0) == pytest.approx(float(want[i]), rel=1e-5, abs=1e-9)


def test_weighted_token_queries():
    r = BM25Retriever().index(DOCS)
    one = r.search({"q": "cat"}, 10)["q"]
    both = r.search({"q": "cat mat"}, 10)["q"]
    mat = r.search({"q": "mat"}, 10)["q"]
    w = r.search_token_weights({"a": {"cat": 2.0}, "b": {"cat": 0.5, "mat": 3.0}, "c": {"zzz": 1.0}}, 10)
    assert w["a"] == {d: pytest.approx(2 * s, rel=1e-6) for d, s in one.items()}
    assert w["b"] == {d: pytest.approx(0.5 * one.get(d, 0) + 3 * mat.get(d, 0), rel=1e-6) for d in both}
    assert w["c"] == {}


def test_unknown_or_empty_queries_return_empty_lists():
    r = BM25Retriever().index(DOCS)
    run = r.search({"a": "zzzz unknownword", "b": "", "c": "?!", "d": "cat"}, k=3)
    assert run["a"] == {} and run["b"] == {} and run["c"] == {}
    assert len(run["d"]) == 2 and set(run) == {"a", "b", "c", "d"}


def test_ties_at_the_cutoff_follow_trec_eval_doc_id_descending():
    docs = [("x1", "same words here"), ("x3", "same words here"), ("x2", "same words here"),
            ("y", "same same words here")]
    r = BM25Retriever().index(docs)
    got = r.search({"q": "same"}, k=3)["q"]
    # y has the highest score; the three tied docs are ranked x3, x2, x1 and x1 is cut
    assert list(got) == ["y", "x3", "x2"]


def test_index_is_persisted_and_reused(tmp_path, monkeypatch):
    first = BM25Retriever(index_dir=tmp_path).index(DOCS)
    assert not first.loaded_from_cache and first.index_path.parent == tmp_path
    assert (first.index_path / "mtr_bm25.json").exists()

    def no_rebuild(*a, **k):
        raise AssertionError("index was rebuilt instead of loaded")

    monkeypatch.setattr(BM25Retriever, "_build", no_rebuild)
    second = BM25Retriever(index_dir=tmp_path).index(DOCS)
    assert second.loaded_from_cache and second.index_path == first.index_path
    q = {"q1": "the cat", "q2": "dogs"}
    assert second.search(q, 5) == first.search(q, 5)
    monkeypatch.undo()

    other_params = BM25Retriever(index_dir=tmp_path, k1=0.9).index(DOCS)
    other_corpus = BM25Retriever(index_dir=tmp_path).index(DOCS[:3])
    other_tok = BM25Retriever(index_dir=tmp_path, stemmer="english").index(DOCS)
    paths = {first.index_path, other_params.index_path, other_corpus.index_path, other_tok.index_path}
    assert len(paths) == 4
    assert not (other_params.loaded_from_cache or other_corpus.loaded_from_cache or other_tok.loaded_from_cache)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in paths)  # no temp leftovers


def test_save_and_load_roundtrip(tmp_path):
    r = BM25Retriever(stemmer="english", stopwords="en", k1=1.5, b=0.5).index(DOCS)
    r.save(tmp_path / "idx")
    back = BM25Retriever.load(tmp_path / "idx", mmap=True)
    assert back.params() == r.params()
    q = {"q": "cats running on mats", "u": "nothing"}
    assert back.search(q, 4) == r.search(q, 4)
    with pytest.raises(RetrievalError):
        BM25Retriever.load(tmp_path)


def test_threads_give_the_same_run():
    rng = np.random.default_rng(0)
    vocab = [f"w{i}" for i in range(300)]
    docs = [(f"d{i:04d}", " ".join(rng.choice(vocab, 30))) for i in range(500)]
    queries = {f"q{i}": " ".join(rng.choice(vocab, 4)) for i in range(100)}
    r1 = BM25Retriever(n_threads=1).index(docs).search(queries, 10)
    r2 = BM25Retriever(n_threads=2).index(docs).search(queries, 10)
    assert r1 == r2


def test_errors():
    with pytest.raises(RetrievalError, match="index"):
        BM25Retriever().search({"q": "x"}, 3)
    with pytest.raises(RetrievalError, match="duplicate"):
        BM25Retriever().index([("a", "x"), ("a", "y")])
    with pytest.raises(RetrievalError, match="empty"):
        BM25Retriever().index([])
    with pytest.raises(RetrievalError, match="no tokens"):
        BM25Retriever().index([("a", "!!")])
    with pytest.raises(RetrievalError, match="k must"):
        BM25Retriever().index(DOCS).search({"q": "cat"}, 0)
    with pytest.raises(RetrievalError, match="method"):
        BM25Retriever(method="bm26")
    with pytest.raises(RetrievalError, match="either"):
        BM25Retriever(tokenizer=BM25Tokenizer(), stemmer="english")
