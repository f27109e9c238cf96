"""The audit's hard-negative indexes: persisted under ``<audit run>/cache/index``
(retrieval.corpus_index), equal to the in-memory retrievers, reopened memory-mapped by a rerun
instead of rebuilt."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from evaluation.audit import AuditConfig, run_audit
from evaluation.audit.candidates import NegativeMiner, corpus_docs, corpus_docs_key
from evaluation.audit.run import negatives_index_dir
from retrieval import corpus_index as ci
from retrieval.bm25 import BM25Retriever
from retrieval.dense import DenseRetriever
from storage.benchmark import Benchmark
from storage.records import Document
from storage.store import RunStore
from tests.evaluation.audit.conftest import synthetic_benchmark


@pytest.fixture(autouse=True)
def _fresh():
    ci.forget_open()
    yield
    ci.forget_open()


@pytest.fixture
def builds(monkeypatch):
    """Counts of index builds in this process (in memory or persisted): BM25 ``_build`` and
    dense corpus indexing (``DenseRetriever.index``; a load only maps the saved vectors)."""
    n = {"bm25": 0, "dense": 0}

    def wrap(cls, name, key):
        orig = getattr(cls, name)

        def counted(self, *a, **kw):
            n[key] += 1
            return orig(self, *a, **kw)
        monkeypatch.setattr(cls, name, counted)

    wrap(BM25Retriever, "_build", "bm25")
    wrap(DenseRetriever, "index", "dense")
    return n


def _bench() -> Benchmark:
    b = synthetic_benchmark(12, n_docs_per_topic=4)
    corpus = dict(b.corpus)
    g = corpus["volcano-0"]
    corpus["volcano-dup"] = Document("volcano-dup", g.title, "  " + g.text.upper(), "syn")   # same text as a gold
    corpus["blank"] = Document("blank", "Blank", "   ", "syn")
    return Benchmark(b.name, b.format, corpus, b.turns)


@pytest.mark.parametrize("method", ["bm25", "dense", "hybrid", "rrf"])
def test_persisted_negatives_equal_the_in_memory_ones(tmp_path, method):
    bench = _bench()
    emb = tmp_path / "emb"
    queries = {t.sample_id: t.question for t in bench.turns}
    queries["none"] = "zzz qqq"                                     # matches nothing lexically
    gold = {t.sample_id: list(t.gold) for t in bench.turns}
    ref = NegativeMiner(bench.corpus, method, cache_dir=emb).mine(queries, gold, 5)
    miner = NegativeMiner(bench.corpus, method, cache_dir=emb, index_dir=tmp_path / "index")
    assert miner.corpus_key == corpus_docs_key(corpus_docs(bench.corpus))
    assert miner.mine(queries, gold, 5) == ref
    ci.forget_open()                                                # another process: opened from disk
    again = NegativeMiner(bench.corpus, method, cache_dir=emb, index_dir=tmp_path / "index")
    assert again.mine(queries, gold, 5) == ref
    assert sum(len(v) for v in ref.values()) >= 5 * len(bench.turns)
    assert "volcano-dup" not in ref["c0:1"] and all("blank" not in v for v in ref.values())
    if method != "dense":
        bm = again.bm25
        assert isinstance(bm, BM25Retriever) and bm.loaded_from_cache
        assert isinstance(bm._data, np.memmap) or isinstance(bm._data.base, np.memmap)
    kinds = sorted(p.name.split("-")[0] for p in ci.component_folders(tmp_path / "index"))
    assert kinds == {"bm25": ["bm25"], "dense": ["dense"]}.get(method, ["bm25", "dense"])


def test_another_corpus_gets_another_index(tmp_path, builds):
    bench = _bench()
    NegativeMiner(bench.corpus, "bm25", index_dir=tmp_path)
    changed = {**bench.corpus, "volcano-1": Document("volcano-1", "Volcano", "A changed volcano passage.", "syn")}
    m = NegativeMiner(changed, "bm25", index_dir=tmp_path)
    assert builds["bm25"] == 2 and len(ci.component_folders(tmp_path)) == 2
    q, g = {"q": "volcano passage"}, {"q": ["volcano-0"]}
    assert m.mine(q, g, 3) == NegativeMiner(changed, "bm25").mine(q, g, 3)


def _snapshot(folder):
    return {p.name: p.stat().st_mtime_ns for p in ci.component_folders(folder)}


def test_an_audit_rerun_reopens_the_persisted_index_and_equals_the_in_memory_audit(tmp_path, builds):
    bench = _bench()
    cfg = AuditConfig(negatives="hybrid", n_negatives=4, metrics=["alignment", "distinguishability"],
                      reverse_pass=True, n_resamples=200, embedding_cache=str(tmp_path / "emb"))
    judges = ["overlap", "retrieval"]
    out = tmp_path / "run"
    first = run_audit(bench, judges, out=out, config=cfg)
    index_dir = negatives_index_dir(RunStore(str(out)))
    assert index_dir == out / "cache" / "index"
    assert sorted(p.split("-")[0] for p in _snapshot(index_dir)) == ["bm25", "dense"]
    # built once: the miner's BM25 is also the retrieval heuristic's (no second, in-memory BM25)
    assert builds == {"bm25": 1, "dense": 1}
    before = _snapshot(index_dir)

    ci.forget_open()                                               # a rerun / resume in a new process
    second = run_audit(bench, judges, out=out, config=cfg)
    assert builds == {"bm25": 1, "dense": 1}                       # opened, not rebuilt
    assert _snapshot(index_dir) == before
    assert second.candidates == first.candidates and second.scores == first.scores

    mem = run_audit(bench, judges, config=cfg, write=False)       # no run directory: in memory
    assert builds == {"bm25": 2, "dense": 2}
    assert mem.candidates == first.candidates
    assert [{k: v for k, v in r.items() if k != "cache_hit"} for r in mem.scores] == \
        [{k: v for k, v in r.items() if k != "cache_hit"} for r in first.scores]


def test_the_retrieval_heuristic_without_distinguishability_uses_the_persisted_bm25(tmp_path, builds):
    """Distinguishability off: no miner, but the ``retrieval`` heuristic's BM25 is still the
    persisted component (built once, reopened by a rerun) with the in-memory audit's scores."""
    bench = _bench()
    cfg = AuditConfig(metrics=["alignment"], n_resamples=200)
    out = tmp_path / "run"
    first = run_audit(bench, ["retrieval"], out=out, config=cfg)
    assert builds["bm25"] == 1 and builds["dense"] == 0
    assert [p.split("-")[0] for p in _snapshot(out / "cache" / "index")] == ["bm25"]
    ci.forget_open()
    second = run_audit(bench, ["retrieval"], out=out, config=cfg)
    assert builds["bm25"] == 1                                      # reopened
    mem = run_audit(bench, ["retrieval"], config=cfg, write=False)
    assert builds["bm25"] == 2
    strip = [{k: v for k, v in r.items() if k != "cache_hit"} for r in mem.scores]
    assert strip and [{k: v for k, v in r.items() if k != "cache_hit"} for r in second.scores] == strip
    assert [{k: v for k, v in r.items() if k != "cache_hit"} for r in first.scores] == strip


def test_negatives_index_dir():
    assert negatives_index_dir(None) is None
    assert negatives_index_dir("runs/a") == Path("runs/a/cache/index")
    assert negatives_index_dir("s3://bucket/run") is None
