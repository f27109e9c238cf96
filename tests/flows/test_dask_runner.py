"""Scale-out: the Dask runner writes the same spine artifacts as the default runner; the LLM guard.

The Dask run gets its own empty embedding cache, so every vector really is encoded by the
parallel ``embed-batch`` tasks on a 2-process LocalCluster. ``embed_batch_chunks`` is a
multiple of ``8 * embed.batch_size`` (see ``embedding.stage.embed_plan``), so the vectors
are expected bit-identical; the assertion allows 1e-6.
"""
import os
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("prefect_dask")

from embedding.vectors import read_embeddings  # noqa: E402
from flows.config import load_config  # noqa: E402
from flows.pipeline import run_spine  # noqa: E402
from storage.store import RunStore  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
STAGES = ["curate", "chunk", "embed", "cluster"]
TABLES = ["documents", "chunks", "clusters", "chunk_topics", "topics"]
SMALL = {"embed.batch_size": 8, "scale.embed_batch_chunks": 64, "scale.dask_workers": 2,
         "scale.dask_threads_per_worker": 1}


def _cfg(tmp_path, runner: str):
    return load_config(EXAMPLES / "demo.toml", {"runs_root": str(tmp_path), "scale.runner": runner,
                                                "embed.cache_dir": str(tmp_path / f"emb-{runner}"), **SMALL})


def _assert_same_artifacts(a: RunStore, b: RunStore) -> None:
    for name in TABLES:
        ra, rb = a.read_table(name).to_pylist(), b.read_table(name).to_pylist()
        assert len(ra) == len(rb) > 0, name
        for i, (x, y) in enumerate(zip(ra, rb)):
            assert x == y, f"{name} row {i} differs"
    ea, eb = a.read_table("embeddings"), b.read_table("embeddings")
    for col in ("chunk_id", "content_hash", "model_id"):
        assert ea.column(col).to_pylist() == eb.column(col).to_pylist(), col
    (ia, va), (ib, vb) = read_embeddings(a), read_embeddings(b)
    assert ia == ib and va.shape == vb.shape and va.shape[0] > 0
    assert float(np.abs(va - vb).max()) <= 1e-6


@pytest.fixture
def one_torch_thread():
    """Encode on one thread here: on a shared 2-core machine torch's 2 spinning threads are ~10x slower."""
    import torch
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_batched_embedding_matches_single_process(tmp_path, one_torch_thread):
    """The plain functions behind the embed-batch tasks (no Dask): same vectors, bit for bit."""
    import corpus.stages as corpus_stages
    import embedding.stage as embed_stages
    import pyarrow.compute as pc
    cfg = load_config(EXAMPLES / "demo.toml", {"runs_root": str(tmp_path), "embed.batch_size": 4})
    src = RunStore(str(tmp_path / "src"))
    corpus_stages.curate(src, str(EXAMPLES / "wiki"), cfg)
    corpus_stages.chunk(src, cfg)
    chunks = src.read_table("chunks").slice(0, 40)
    # short texts keep the encoding cheap (the cache is keyed by content_hash, so this is fine here)
    chunks = chunks.set_column(chunks.schema.get_field_index("text"), "text",
                               pc.utf8_slice_codeunits(chunks.column("text"), 0, 300))
    one, batched = RunStore(str(tmp_path / "one")), RunStore(str(tmp_path / "batched"))
    one.write_table("chunks", chunks)
    batched.write_table("chunks", chunks)
    cfg_one = cfg.model_copy(update={"embed": cfg.embed.model_copy(update={"cache_dir": str(tmp_path / "e1")})})
    cfg_b = cfg.model_copy(update={"embed": cfg.embed.model_copy(update={"cache_dir": str(tmp_path / "e2")})})
    s_one = embed_stages.embed(one, cfg_one)
    batches = embed_stages.embed_plan(batched, cfg_b, 32)                 # 32 = 8 x batch_size: aligned blocks
    assert [len(b["hashes"]) for b in batches] == [32, 8]
    for b in reversed(batches):                                  # completion order does not matter
        embed_stages.embed_store_batch(batched, cfg_b, b["hashes"], embed_stages.embed_batch(b["texts"], cfg_b))
    assert embed_stages.embed_plan(batched, cfg_b, 32) == []               # nothing left to encode
    s_b = embed_stages.embed(batched, cfg_b)
    assert s_b["newly_embedded"] == 0 and s_one["newly_embedded"] == 40
    (ia, va), (ib, vb) = read_embeddings(one), read_embeddings(batched)
    assert ia == ib and np.array_equal(va, vb)
    assert one.read_table("embeddings").to_pylist() == batched.read_table("embeddings").to_pylist()


def test_dask_runner_gives_identical_artifacts(tmp_path, prefect_harness, capsys):
    wiki = str(EXAMPLES / "wiki")
    t0 = time.perf_counter()
    default = run_spine(str(tmp_path / "default"), _cfg(tmp_path, "default"), STAGES, wiki)
    t1 = time.perf_counter()
    dask = run_spine(str(tmp_path / "dask"), _cfg(tmp_path, "dask"), STAGES, wiki)
    t2 = time.perf_counter()
    with capsys.disabled():
        print(f"\nspine on examples/wiki: default {t1 - t0:.1f} s, dask (2 local workers) {t2 - t1:.1f} s")

    assert not any(r["cached"] for r in dask.values())
    n = default["chunk"]["summary"]["chunks"]
    assert n > SMALL["scale.embed_batch_chunks"]              # more than one embed-batch task
    assert dask["embed"]["summary"] == default["embed"]["summary"]
    assert dask["embed"]["summary"]["newly_embedded"] == n      # the dask run had its own empty cache
    assert {s: r["summary"] for s, r in dask.items() if s != "embed"} == \
        {s: r["summary"] for s, r in default.items() if s != "embed"}
    a, b = RunStore(str(tmp_path / "default")), RunStore(str(tmp_path / "dask"))
    _assert_same_artifacts(a, b)

    # same stage-cache semantics as the default runner: an unchanged rerun is all cache hits ...
    again = run_spine(str(tmp_path / "dask"), _cfg(tmp_path, "dask"), STAGES, wiki)
    assert all(r["cached"] for r in again.values())
    # ... and a missing output table forces its stage to run (vectors now come from the cache)
    os.remove(b.table_path("embeddings"))
    redo = run_spine(str(tmp_path / "dask"), _cfg(tmp_path, "dask"), ["embed"], None)
    assert not redo["embed"]["cached"] and redo["embed"]["summary"]["newly_embedded"] == 0
    _assert_same_artifacts(a, b)


def test_llm_concurrency_guard(prefect_harness):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
    from flows.config import MTRConfig
    from flows.synthesis import llm_slot

    with llm_slot(MTRConfig()):                                   # default: no guard, no server call
        pass
    name = "mtr-test-llm"
    cfg = MTRConfig.model_validate({"scale": {"llm_concurrency_limit": name}})
    with get_client(sync_client=True) as client:
        client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=name, limit=2))
        with llm_slot(cfg):
            assert client.read_global_concurrency_limit_by_name(name).active_slots == 1
        assert client.read_global_concurrency_limit_by_name(name).active_slots == 0
    missing = MTRConfig.model_validate({"scale": {"llm_concurrency_limit": "mtr-no-such-limit"}})
    with pytest.raises(Exception, match="mtr-no-such-limit|not found|does not exist"):
        with llm_slot(missing):
            pass


def test_dask_runner_synthesizes_in_parallel_batches_within_a_budget_and_resumes(tmp_path, prefect_harness,
                                                                                shared_emb_cache, monkeypatch):
    """Synthesis batches on 2 Dask worker processes at once (the LLM path, against the role-scripted fake
    endpoint): with a token cap the batches share it and the run stops near it; a rerun without the cap
    resumes with no repeated LLM call and gives the same conversations, turns and qrels as one batch after
    another in the flow's process (the conversations are independent and seeded by id)."""
    import json
    import shutil

    import flows.synthesis as fs
    from agents.accounting import read_calls
    from agents.testing.fake_roles import RoleScriptedServer, fake_llm_config
    from flows.synthesis import run_synthesis
    srv = RoleScriptedServer(latency=0.01).start()
    try:
        def cfg(name: str, cap: int | None, dask: bool):
            f = tmp_path / f"llm-{name}.json"
            f.write_text(json.dumps(fake_llm_config(srv, budget={"max_tokens": cap} if cap else {}).model_dump(mode="json")))
            return load_config(EXAMPLES / "demo.toml", {
                "runs_root": str(tmp_path), "embed.cache_dir": str(shared_emb_cache), "llm_config": str(f),
                "synth.conversations": 8, "synth.turns": 3, "synth.batch_size": 2, "synth.concurrency": 2,
                **({"scale.runner": "dask", "scale.dask_workers": 2, "scale.dask_threads_per_worker": 1} if dask else {})})

        def spent(run: str) -> tuple[int, int]:
            calls = [c for c in read_calls(RunStore(str(tmp_path / run))).to_pylist() if not c["cache_hit"]]
            return len(calls), sum(c["prompt_tokens"] + c["completion_tokens"] for c in calls)

        run_spine(str(tmp_path / "seq"), cfg("spine", None, False), STAGES, str(EXAMPLES / "wiki"))
        shutil.copytree(tmp_path / "seq", tmp_path / "par")
        pids: list[int] = []
        real = fs.run_batches

        def spy(run_dir, config, batches, prep, total, on_done):
            return real(run_dir, config, batches, prep, total, lambda r: (pids.append(r["pid"]), on_done(r)))
        monkeypatch.setattr(fs, "run_batches", spy)
        seq = run_synthesis(str(tmp_path / "seq"), cfg("seq", None, False))
        assert set(pids) == {os.getpid()} and len(pids) == 4                  # one after another, in this process
        calls, tokens = spent("seq")
        assert seq["stopped"] is None and seq["summary"]["turns_ok"] >= 16

        pids.clear()
        cap = int(tokens * 0.4)
        part = run_synthesis(str(tmp_path / "par"), cfg("cap", cap, True))
        assert part["stopped"] and "share of the run's budget" in part["stopped"], part["stopped"]
        assert os.getpid() not in pids and len(set(pids)) == 2              # batches ran in both worker processes
        # each batch stops at its share; calls already in flight finish (as one process stops at its cap)
        assert cap * 0.5 < spent("par")[1] <= cap * 1.25
        assert part["summary"]["turns_ok"] < seq["summary"]["turns_ok"]

        pids.clear()
        full = run_synthesis(str(tmp_path / "par"), cfg("par", None, True))
        assert full["stopped"] is None and full["summary"] == seq["summary"]
        assert spent("par") == (calls, tokens)            # resumed: every earlier call a cache hit, none asked twice
        a, b = RunStore(str(tmp_path / "seq")), RunStore(str(tmp_path / "par"))
        for name, key in (("conversations", "conv_id"), ("turns", "sample_id"), ("qrels", "sample_id")):
            ra = sorted(a.read_table(name).to_pylist(), key=lambda r: (r[key], str(r.get("doc_id"))))
            rb = sorted(b.read_table(name).to_pylist(), key=lambda r: (r[key], str(r.get("doc_id"))))
            assert ra == rb, name
    finally:
        srv.stop()
