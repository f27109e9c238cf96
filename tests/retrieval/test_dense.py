"""DenseRetriever: exact blocked search equals brute-force numpy; real MiniLM; cache reuse."""
from __future__ import annotations

import numpy as np
import pytest

from retrieval.base import RetrievalError, id_ranks
from retrieval.dense import DenseRetriever, exact_topk, faiss_available


def brute_force(q: np.ndarray, c: np.ndarray, ids: list[str], k: int):
    sims = q @ c.T
    out = []
    for row in sims:
        order = sorted(range(len(ids)), key=lambda i: (float(row[i]), ids[i]), reverse=True)[:k]
        out.append([(ids[i], float(row[i])) for i in order])
    return out


def unit(x):
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("block_bytes", [64, 4096, 1 << 20])
def test_exact_blocked_search_equals_brute_force(block_bytes):
    # small-integer vectors: every dot product is exact in float32 whatever the blocking,
    # so the comparison is exact and there are many genuine ties (trec rule: id descending)
    rng = np.random.default_rng(7)
    corpus = rng.integers(-3, 4, size=(300, 6)).astype(np.float32)
    corpus[50:60] = corpus[10]
    ids = [f"doc{(i * 37) % 300:03d}" for i in range(300)]  # id order differs from row order
    queries = np.vstack([rng.integers(-3, 4, size=(20, 6)).astype(np.float32), corpus[10:11]])
    rank = id_ranks(ids)
    for k in (1, 5, 12, 300, 500):
        idx, sc = exact_topk(queries, corpus, k, rank, max_block_bytes=block_bytes)
        want = brute_force(queries, corpus, ids, k)
        assert idx.shape == (queries.shape[0], min(k, 300))
        for r in range(queries.shape[0]):
            assert [(ids[i], float(s)) for i, s in zip(idx[r], sc[r])] == want[r]


def test_exact_search_on_unit_vectors_matches_numpy():
    rng = np.random.default_rng(8)
    corpus = unit(rng.normal(size=(500, 32)))
    queries = unit(rng.normal(size=(30, 32)))
    ids = [f"d{i}" for i in range(500)]
    idx, sc = exact_topk(queries, corpus, 10, id_ranks(ids), max_block_bytes=8192)
    want = brute_force(queries, corpus, ids, 10)
    for r in range(30):
        assert [ids[i] for i in idx[r]] == [d for d, _ in want[r]]
        np.testing.assert_allclose(sc[r], [s for _, s in want[r]], atol=1e-6)


def test_index_vectors_search_and_save_load(tmp_path):
    rng = np.random.default_rng(1)
    vecs = unit(rng.normal(size=(50, 8)))
    ids = [f"p{i}" for i in range(50)]
    r = DenseRetriever().index_vectors(ids, vecs)
    idx, sc = r.search_vectors(vecs[:3], 4)
    assert [ids[i] for i in idx[:, 0]] == ["p0", "p1", "p2"]
    np.testing.assert_allclose(sc[:, 0], 1.0, rtol=1e-6)
    r.save(tmp_path / "dense")
    back = DenseRetriever.load(tmp_path / "dense", mmap=True)
    i2, s2 = back.search_vectors(vecs[:3], 4)
    assert (i2 == idx).all() and np.allclose(s2, sc)
    with pytest.raises(RetrievalError):
        DenseRetriever().index_vectors(ids[:3], vecs)


def test_real_model_search_matches_numpy_and_reuses_cache(tmp_path):
    docs = [("a", "How to reset a forgotten password for your account"),
            ("b", "Pizza recipes from Naples, Italy"),
            ("c", "Configure two-factor authentication on the login page"),
            ("d", "The history of the Roman empire"),
            ("e", "Change your password in the account settings")]
    queries = {"q1": "I forgot my password", "q2": "neapolitan pizza dough", "q3": "   "}
    r = DenseRetriever(cache_dir=tmp_path / "emb")
    r.index(docs)
    assert r.n_encoded == 5
    run = r.search(queries, k=2)
    assert set(run["q1"]) == {"a", "e"} and next(iter(run["q2"])) == "b"
    assert run["q3"] == {}  # blank query: nothing retrieved
    # scores are cosine similarities of normalised vectors = brute-force numpy
    from embedding.encoder import encode
    qv = encode([queries["q1"], queries["q2"]])
    want = brute_force(qv, r.embeddings, r.doc_ids, 2)
    for q, w in zip(["q1", "q2"], want):
        assert list(run[q]) == [d for d, _ in w]
        assert list(run[q].values()) == pytest.approx([s for _, s in w], abs=1e-5)
    # a second retriever with the same cache encodes nothing for the corpus
    r2 = DenseRetriever(cache_dir=tmp_path / "emb").index(docs)
    assert r2.n_encoded == 0
    np.testing.assert_array_equal(r2.embeddings, r.embeddings)
    assert r2.search(queries, 2) == run


def test_faiss_is_optional():
    if faiss_available():
        rng = np.random.default_rng(3)
        vecs = unit(rng.normal(size=(40, 8)))
        ids = [f"p{i}" for i in range(40)]
        a = DenseRetriever(use_faiss=True).index_vectors(ids, vecs).search_vectors(vecs[:5], 3)
        b = DenseRetriever().index_vectors(ids, vecs).search_vectors(vecs[:5], 3)
        assert (a[0] == b[0]).all()
    else:
        with pytest.raises(RetrievalError, match="FAISS"):
            DenseRetriever(use_faiss=True)


def test_search_before_index():
    with pytest.raises(RetrievalError, match="index"):
        DenseRetriever().search({"q": "x"}, 3)
