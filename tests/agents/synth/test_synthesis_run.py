"""Synthesis runs on the example corpus: offline end to end, the LLM path through a fake
endpoint, a budget stop mid-run, and a killed run resumed with no repeated calls."""
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq

from agents.accounting import read_calls
from agents.config import BudgetConfig, LLMConfig
from agents.synth.config import SynthConfig
from agents.testing.fake_roles import RoleScriptedServer, fake_llm_config
from agents.synth.run import assemble, corpus_searcher, load_plan_inputs, plan_conversations, synthesize_batch
from agents.synth import text as T
from agents.synth.offline.nlp import clean_passage
from storage.benchmark import load_ours
from flows.synthesis import export_query_texts
from storage.exports import export_benchmark
from storage.store import RunStore

ROOT = Path(__file__).resolve().parents[2]


def _setup(run_dir, **synth):
    store = RunStore(str(run_dir))
    clusters, cvecs, corpus = load_plan_inputs(store)
    cfg = SynthConfig(**synth)
    return store, plan_conversations(clusters, cvecs, cfg), corpus, cfg


def test_offline_end_to_end_on_example_corpus(spine_copy, example_spine):
    store, plans, corpus, cfg = _setup(spine_copy, conversations=5, turns=5, unanswerable_ratio=0.2, test_share=0.4)
    emb = example_spine["cfg"].embed.cache_dir
    search = corpus_searcher(store, corpus, "hybrid", emb)
    out = synthesize_batch(store, plans, corpus, LLMConfig(backend="offline"), cfg, search)
    assert out["stopped"] is None and len(out["states"]) == 5
    summary = assemble(store, plans, out["states"], cfg)
    assert summary["backend"] == "offline" and summary["conversations"] == 5
    turns = store.read_table("turns").to_pylist()
    assert len(turns) == 25 and len({t["sample_id"] for t in turns}) == 25
    ok = [t for t in turns if t["status"] == "ok"]
    assert len(ok) >= 20
    for t in ok:
        assert t["sample_id"] == f"{t['conv_id']}:{t['turn']}" and t["backend"] == "offline"
        assert t["question"].endswith("?")
        if t["answerability"] == "ANSWERABLE":
            # answers quote the passage with its tokenised spacing undone (" 's" -> "'s")
            gold = clean_passage(corpus[t["gold_doc_ids"][0]]["text"])
            bad = [s for s in T.sentences(t["answer"]) if T.content_words(s) and T.overlap(s, gold) < 0.95
                   and s not in ("Yes.", "No.")]          # a yes/no answer's polarity, then its support
            assert not bad, (bad, gold)
    calls = read_calls(store).to_pylist()
    assert calls and {c["backend"] for c in calls} == {"offline"}
    convs = store.read_table("conversations").to_pylist()
    switched = [c for c in convs if c["switch_turn"]]
    assert switched and all(2 <= c["switch_turn"] <= 4 and c["switch_topic_id"] != c["topic_id"] for c in switched)
    # exports: splits by conversation, no leak
    exp = export_benchmark(store, query_texts=export_query_texts)
    d = Path(exp["export_dir"])
    split_convs = {}
    for sp in ("train", "test"):
        lines = (d / "beir" / "last_turn" / "qrels" / f"{sp}.tsv").read_text().splitlines()[1:]
        split_convs[sp] = {l.split("\t")[0].rsplit(":", 1)[0] for l in lines}
    assert split_convs["train"].isdisjoint(split_convs["test"])
    assert "offline backend" in (d / "README.md").read_text()
    assert pq.read_table(d / "hf" / "train.parquet").num_rows + pq.read_table(d / "hf" / "test.parquet").num_rows == len(ok)
    bench = load_ours(store.path)
    assert all(any(g in t.candidates for g in t.gold) for t in bench.turns if t.gold)   # cluster = candidate list
    assert len(bench.turns) == len(ok) and all(t.history for t in bench.turns if t.turn > 1 and t.conv_id == bench.turns[0].conv_id)


def test_llm_path_and_budget_stop(spine_copy, role_server):
    store, plans, corpus, cfg = _setup(spine_copy, conversations=3, turns=3, concurrency=3)
    out = synthesize_batch(store, plans, corpus, fake_llm_config(role_server), cfg, lambda q, k: [])
    assemble(store, plans, out["states"], cfg)
    turns = store.read_table("turns").to_pylist()
    # the fake server may ask one thing twice: the repeat is a duplicate (history only, agents.synth.dedup)
    assert len(turns) == 9 and all(t["status"] in ("ok", "duplicate") and t["backend"] == "openai" for t in turns)
    assert all(t["prompt_tokens"] > 0 and json.loads(t["model"])["questioner"] == "fake-model" for t in turns)
    n_first = role_server.count
    # a second run of the same work: every call is a cache hit, nothing reaches the server
    out2 = synthesize_batch(store, plans, corpus, fake_llm_config(role_server), cfg, lambda q, k: [])
    assert role_server.count == n_first and out2["stopped"] is None

    # budget stop on a fresh run: stops cleanly, keeps what it has, says why
    other = spine_copy.parent / "budget"
    import shutil
    shutil.copytree(spine_copy, other, ignore=shutil.ignore_patterns("cache", "llm_calls", "turns.parquet"))
    store2, plans2, corpus2, cfg2 = _setup(other, conversations=3, turns=4, concurrency=1)
    llm = fake_llm_config(role_server, budget=BudgetConfig(max_tokens=15000))
    out3 = synthesize_batch(store2, plans2, corpus2, llm, cfg2, lambda q, k: [])
    assert out3["stopped"] and "token" in out3["stopped"]
    summary = assemble(store2, plans2, out3["states"], cfg2)
    assert 0 < summary["turns_ok"] < 12
    assert store2.read_manifest()["llm"]["stopped_reason"]


class _HangAfter(RoleScriptedServer):
    hang_after = 10 ** 9

    def handle(self, body, headers):
        if len(self.requests) >= self.hang_after:
            self.requests.append(type(self.requests[0])(body, headers, time.time()) if self.requests else None)
            self.wait(30)
            return 503, {}, {"error": {"message": "gone"}}
        return super().handle(body, headers)


def test_killed_run_resumes_without_repeating_calls(spine_copy):
    srv = _HangAfter()
    srv.start()
    try:
        srv.hang_after = 25
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("_synth_worker.py")), str(spine_copy),
                                 srv.base_url, "3", "4"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.time() + 120
        while srv.count <= srv.hang_after and time.time() < deadline and proc.poll() is None:
            time.sleep(0.05)
        time.sleep(0.5)                        # let answered responses land in the cache
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        answered = [json.dumps(r.body["messages"], sort_keys=True) for r in srv.requests[:srv.hang_after]]
        srv.hang_after = 10 ** 9
        before = srv.count
        store, plans, corpus, cfg = _setup(spine_copy, conversations=3, turns=4, concurrency=2)
        out = synthesize_batch(store, plans, corpus, fake_llm_config(srv), cfg, lambda q, k: [])
        assemble(store, plans, out["states"], cfg)
        new = [json.dumps(r.body["messages"], sort_keys=True) for r in srv.requests[before:]]
        assert new, "the rerun had work left to do"
        assert not set(new) & set(answered), "a call answered before the kill was repeated"
        turns = store.read_table("turns").to_pylist()
        assert len(turns) == 12 and Counter(t["sample_id"] for t in turns).most_common(1)[0][1] == 1
        assert all(t["status"] in ("ok", "duplicate") for t in turns)      # a repeated question: history only
        qrels = store.read_table("qrels").to_pylist()
        assert len({(q["sample_id"], q["doc_id"]) for q in qrels}) == len(qrels) == sum(t["status"] == "ok"
                                                                                       for t in turns) > 0
        calls = read_calls(store).to_pylist()
        assert len({c["call_id"] for c in calls}) == len(calls)
    finally:
        srv.stop()


def test_api_key_never_reaches_any_file_of_the_run(spine_copy, monkeypatch):
    from agents.config import EndpointConfig, RetryConfig
    from storage.exports import export_benchmark
    secret = "sk-synth-SECRET-5f3a9c1e7d"
    monkeypatch.setenv("MTR_SYNTH_TEST_KEY", secret)
    srv = RoleScriptedServer(api_key=secret)
    srv.start()
    try:
        llm = LLMConfig(endpoints={"fake": EndpointConfig(base_url=srv.base_url, model="fake-model", timeout_s=5,
                                                          api_key_env="MTR_SYNTH_TEST_KEY")},
                        retry=RetryConfig(backoff_base_s=0.002, backoff_max_s=0.02))
        store, plans, corpus, cfg = _setup(spine_copy, conversations=2, turns=2)
        out = synthesize_batch(store, plans, corpus, llm, cfg, lambda q, k: [])
        assemble(store, plans, out["states"], cfg)
        export_benchmark(store, query_texts=export_query_texts)
    finally:
        srv.stop()
    assert srv.count > 0 and all(t["status"] == "ok" for t in store.read_table("turns").to_pylist())
    leaked = [p for p in Path(spine_copy).rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
    leaked += [p for p in Path(spine_copy).rglob("*.parquet")            # compressed: decode and look again
               if secret in str(pq.read_table(p).to_pylist())]
    assert leaked == []
