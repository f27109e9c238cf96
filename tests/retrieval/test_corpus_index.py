"""Persisted corpus indexes (retrieval.corpus_index): built once, reopened memory-mapped, equal
to the in-memory retrievers, invalidated by another corpus or setting."""
from __future__ import annotations

import hashlib

import numpy as np
import pytest

from retrieval import indexed_retriever
from retrieval import corpus_index as ci
from retrieval.bm25 import BM25Retriever
from retrieval.dense import DenseRetriever

WORDS = ("wall berlin city river bridge tower paris history war museum king queen castle road train station "
         "school church market harbour island mountain forest lake garden palace").split()


def _corpus(n: int = 120, seed: int = 0) -> tuple[list[str], list[str]]:
    rng = np.random.default_rng(seed)
    ids = [f"d{i:04d}" for i in range(n)]
    texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(5, 25)))) for _ in range(n)]
    return ids, texts


def _key(ids, texts) -> str:
    h = hashlib.sha256()
    for d, t in zip(ids, texts):
        h.update(f"{d}\x00{t}\x00".encode())
    return h.hexdigest()


def _unit(n: int, dim: int = 16, seed: int = 1) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


QUERIES = {"a": "berlin wall history", "b": "castle of the king and queen", "c": "train station road",
           "d": "zzz unknown", "e": "lake lake forest"}


@pytest.fixture(autouse=True)
def _fresh():
    ci.forget_open()
    yield
    ci.forget_open()


def test_bm25_results_equal_the_in_memory_retriever_and_the_index_is_built_once(tmp_path):
    ids, texts = _corpus()
    builds = ci.BUILDS["bm25"]
    r = ci.persisted_retriever("bm25", tmp_path, _key(ids, texts), ids, texts)
    ref = indexed_retriever("bm25", list(zip(ids, texts)))
    assert r.search(QUERIES, k=10) == ref.search(QUERIES, k=10)
    assert ci.BUILDS["bm25"] == builds + 1
    # the same process: the open copy; another process (forget_open): loaded from disk, not built
    assert ci.persisted_retriever("bm25", tmp_path, _key(ids, texts), ids, texts) is r
    ci.forget_open()
    again = ci.persisted_retriever("bm25", tmp_path, _key(ids, texts), ids, texts)
    assert again is not r and ci.BUILDS["bm25"] == builds + 1
    assert isinstance(again._data.base, np.memmap) or isinstance(again._data, np.memmap)   # memory-mapped
    assert again.search(QUERIES, k=10) == ref.search(QUERIES, k=10)
    assert [p.name.split("-")[0] for p in ci.component_folders(tmp_path)] == ["bm25"]


def test_dense_from_given_vectors_equals_the_in_memory_retriever_and_is_memory_mapped(tmp_path):
    ids, texts = _corpus()
    vecs = _unit(len(ids))
    calls = []

    def vectors():
        calls.append(1)
        return vecs

    r = ci.persisted_retriever("dense", tmp_path, _key(ids, texts), ids, texts, vectors=vectors)
    ci.forget_open()
    r = ci.persisted_retriever("dense", tmp_path, _key(ids, texts), ids, texts, vectors=vectors)
    assert len(calls) == 1                                  # the vectors were read for the one build only
    assert isinstance(r.embeddings.base, np.memmap) or isinstance(r.embeddings, np.memmap)
    ref = DenseRetriever().index_vectors(ids, vecs)
    q = _unit(7, seed=5)
    for a, b in zip(r.search_vectors(q, 9), ref.search_vectors(q, 9)):
        np.testing.assert_array_equal(a, b)


def test_another_corpus_or_setting_builds_another_index(tmp_path):
    ids, texts = _corpus()
    builds = ci.BUILDS["bm25"]
    ci.persisted_retriever("bm25", tmp_path, _key(ids, texts), ids, texts)
    changed = [texts[0] + " harbour", *texts[1:]]
    r2 = ci.persisted_retriever("bm25", tmp_path, _key(ids, changed), ids, changed)
    assert ci.BUILDS["bm25"] == builds + 2 and len(ci.component_folders(tmp_path)) == 2
    ref = BM25Retriever().index(list(zip(ids, changed)))
    assert r2.search(QUERIES, k=10) == ref.search(QUERIES, k=10)
    # the hybrid reuses the persisted BM25 component and adds a dense one
    ci.persisted_retriever("hybrid", tmp_path, _key(ids, changed), ids, changed, vectors=lambda: _unit(len(ids)))
    assert ci.BUILDS["bm25"] == builds + 2
    assert sorted(p.name.split("-")[0] for p in ci.component_folders(tmp_path)) == ["bm25", "bm25", "dense"]


def test_a_leftover_without_its_key_file_is_rebuilt_not_read(tmp_path):
    ids, texts = _corpus()
    ci.persisted_retriever("bm25", tmp_path, _key(ids, texts), ids, texts)
    folder = ci.component_folders(tmp_path)[0]
    (folder / ci._META).unlink()                            # as a build killed before its key file
    (folder / "data.csc.index.npy").write_bytes(b"garbage")
    ci.forget_open()
    builds = ci.BUILDS["bm25"]
    r = ci.persisted_retriever("bm25", tmp_path, _key(ids, texts), ids, texts)
    assert ci.BUILDS["bm25"] == builds + 1
    assert r.search(QUERIES, k=10) == indexed_retriever("bm25", list(zip(ids, texts))).search(QUERIES, k=10)
