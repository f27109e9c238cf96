"""The uniqueness index of a synthesis run: planned and built once per run (not per batch),
persisted under <run>/cache/uniqueness, reopened by a rerun without a rebuild, rebuilt for a
changed corpus, and searching exactly like the in-memory retriever it replaces."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from agents.synth import run as synth_run
from retrieval import corpus_index as ci
from retrieval import indexed_retriever
from storage.store import RunStore


def _config(example_spine, **synth):
    cfg = example_spine["cfg"].model_copy(deep=True)
    cfg = cfg.model_copy(update={"synth": cfg.synth.model_copy(update=synth)})
    return cfg.model_dump(mode="json")


def test_plans_and_index_are_made_once_and_shared_by_every_batch(spine_copy, example_spine, monkeypatch):
    from flows.synthesis import prepare_task, synth_batch
    ci.forget_open()
    planned = []
    real_plan = synth_run.plan_conversations
    monkeypatch.setattr(synth_run, "plan_conversations", lambda *a, **k: planned.append(1) or real_plan(*a, **k))
    config = _config(example_spine, conversations=2, turns=2, batch_size=1, switch_ratio=0.0)
    builds = dict(ci.BUILDS)
    prep = prepare_task.fn(run_dir=str(spine_copy), config=config)
    assert len(prep["plans"]) == 2 and len(prep["spares"]) == 1 and planned == [1, 1]   # the plans, then the spares
    assert ci.BUILDS["bm25"] == builds.get("bm25", 0) + 1 and ci.BUILDS["dense"] == builds.get("dense", 0) + 1
    folders = ci.component_folders(spine_copy / "cache" / "uniqueness")
    assert sorted(f.name.split("-")[0] for f in folders) == ["bm25", "dense"]
    for i, plan in enumerate(prep["plans"]):            # two batches: no planning, no build
        r = synth_batch.fn(run_dir=str(spine_copy), config=config, plans=[plan], key=prep["key"],
                           corpus_sha=prep["corpus_sha"], total=2, index=i)
        assert r["done"] == 1 and r["stopped"] is None
    assert planned == [1, 1] and ci.BUILDS["bm25"] == builds.get("bm25", 0) + 1
    ci.forget_open()                                    # a rerun in a new process: loaded from disk
    again = prepare_task.fn(run_dir=str(spine_copy), config=config)
    assert again["key"] == prep["key"] and again["plans"] == prep["plans"] and again["spares"] == prep["spares"]
    assert ci.BUILDS["bm25"] == builds.get("bm25", 0) + 1 and ci.BUILDS["dense"] == builds.get("dense", 0) + 1
    assert ci.component_folders(spine_copy / "cache" / "uniqueness") == folders


def test_searcher_equals_the_in_memory_retriever(spine_copy, example_spine):
    ci.forget_open()
    store = RunStore(str(spine_copy))
    corpus = synth_run.load_corpus(store)
    emb = example_spine["cfg"].embed.cache_dir
    docs = [(cid, c["text"]) for cid, c in corpus.items()]
    queries = {f"q{i}": c["text"].split(".")[0][:160] for i, c in enumerate(list(corpus.values())[::23])}
    queries["none"] = "qqqq zzzz"
    for kind in ("bm25", "dense", "hybrid"):
        persisted = synth_run.uniqueness_retriever(store, corpus, kind, emb)
        ref = indexed_retriever(kind, docs, cache_dir=emb)
        assert persisted.search(queries, k=10) == ref.search(queries, k=10), kind
        search = synth_run.corpus_searcher(store, corpus, kind, emb)
        assert search(queries["q0"], 5) == [d for d, _ in sorted(ref.search({"q": queries["q0"]}, k=5)["q"].items(),
                                                                 key=lambda p: (-p[1], p[0]))]


def test_a_changed_corpus_gets_a_new_index(spine_copy, example_spine):
    ci.forget_open()
    store = RunStore(str(spine_copy))
    emb = example_spine["cfg"].embed.cache_dir
    corpus = synth_run.load_corpus(store)
    synth_run.uniqueness_retriever(store, corpus, "hybrid", emb)
    builds = dict(ci.BUILDS)
    chunks = store.read_table("chunks")
    first = chunks["chunk_id"][0].as_py()
    text = pc.if_else(pc.equal(chunks["chunk_id"], first),
                      pa.scalar("The harbour of Zanzibar opened a new lighthouse in 1923."), chunks["text"])
    store.write_table("chunks", chunks.set_column(chunks.schema.get_field_index("text"), "text", text))
    changed = synth_run.load_corpus(store)               # the table changed: read again
    assert changed is not corpus and changed[first]["text"].startswith("The harbour of Zanzibar")
    assert synth_run.run_vectors(store, list(changed), changed) is None   # stale embeddings are not used
    r = synth_run.uniqueness_retriever(store, changed, "hybrid", emb)
    assert ci.BUILDS["bm25"] == builds["bm25"] + 1 and ci.BUILDS["dense"] == builds["dense"] + 1
    assert len(ci.component_folders(spine_copy / "cache" / "uniqueness")) == 4
    q = {"q": "When did the lighthouse of the Zanzibar harbour open?"}
    assert next(iter(r.search(q, k=3)["q"])) == first
    assert r.search(q, k=10) == indexed_retriever("hybrid", [(c, x["text"]) for c, x in changed.items()],
                                                  cache_dir=emb).search(q, k=10)


def test_the_history_need_searches_with_bm25_on_the_uniqueness_index(spine_copy, example_spine):
    """The offline questioner's history need asks whether a follow-up's own words find its passage: a BM25 search
    (``synth.offline_history_need_retriever``), built from the bm25 part a hybrid uniqueness index already persisted
    (no second build); the uniqueness search itself when it is of the same kind; none off the offline backend."""
    from agents.config import LLMConfig
    from agents.synth.config import SynthConfig
    ci.forget_open()
    store = RunStore(str(spine_copy))
    corpus = synth_run.load_corpus(store)
    emb = example_spine["cfg"].embed.cache_dir
    hybrid = synth_run.corpus_searcher(store, corpus, "hybrid", emb)
    builds = dict(ci.BUILDS)
    offline = LLMConfig(backend="offline")
    need = synth_run.need_searcher(store, corpus, offline, SynthConfig(), hybrid)
    assert need is not hybrid and ci.BUILDS == builds
    docs = [(cid, c["text"]) for cid, c in corpus.items()]
    ref = indexed_retriever("bm25", docs)
    for c in list(corpus.values())[::31]:
        q = c["text"].split(".")[0][:120]
        assert need(q, 10) == [d for d, _ in sorted(ref.search({"q": q}, k=10)["q"].items(),
                                                    key=lambda p: (-p[1], p[0]))][:10]
    assert synth_run.need_searcher(store, corpus, offline, SynthConfig(uniqueness_retriever="bm25"), hybrid) is hybrid
    assert synth_run.need_searcher(store, corpus, offline, SynthConfig(offline_history_need_weight=0), hybrid) is None
