"""Every LLM path against a server nobody here wrote: llama-cpp-python's OpenAI-compatible
server with Gemma 3 270M (a small *base* model: poor text, the messy outputs real endpoints
produce). See conftest.py for the fixture and the recording proxy.

Budget: the whole module runs in a few minutes on 2 cores (small corpora, max_tokens caps).
"""
from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from agents.accounting import read_calls
from agents.capabilities import probe_endpoint
from agents.config import LLMConfig
from agents.parsing import TextOutput
from agents.session import LLMSession
from agents.steps import LLMStep
from storage.store import RunStore
from tests.llm_server.conftest import MODEL_ALIAS, N_CTX, ROOT, LlamaServer, free_port, write_llm_config

pytestmark = pytest.mark.llm_server

CLI_TIMEOUT_S = 900


def mtr(*args: str, timeout: float = CLI_TIMEOUT_S) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
           "TOKENIZERS_PARALLELISM": "false", "COLUMNS": "120",
           "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180"}   # a loaded 2-core machine starts it slowly
    env.pop("PREFECT_API_URL", None)
    return subprocess.run([sys.executable, "-m", "flows.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


# -- capabilities ---------------------------------------------------------------------------
def test_probe_finds_what_llama_cpp_supports(llama_server):
    cfg = LLMConfig.model_validate({"endpoints": {"local": {"base_url": llama_server.base_url, "model": MODEL_ALIAS}}})
    caps = asyncio.run(probe_endpoint("local", cfg.endpoints["local"]))
    assert caps.models == (MODEL_ALIAS,) and caps.usage and caps.latency_s > 0
    # llama-cpp-python validates response_format.type against text|json_object: json_schema is a 422
    assert caps.json_schema == "rejected" and caps.json_object == "yes"
    # ... but it turns {"type": "json_object", "schema": ...} into a grammar
    assert caps.json_object_schema == "yes" and caps.structured_mode == "json_object_schema"
    assert caps.logprobs == "yes" and caps.top_logprobs >= 1
    assert caps.seed in ("yes", "ignored")
    # it exposes a tokenizer route but not its context length
    assert caps.tokenize == "/extras/tokenize/count" and caps.context_length is None


def test_llm_check_cli(llama_server, tmp_path):
    cfg = write_llm_config(tmp_path / "llm.yaml", llama_server.base_url)
    r = mtr("llm-check", "--llm-config", str(cfg))
    assert r.returncode == 0, r.stderr
    out = r.stdout
    for row, value in [("models served", re.escape(MODEL_ALIAS)), ("response_format json_schema", r"no \(request rejected"),
                       (re.escape("json_object + schema (grammar)"), "yes"),
                       ("structured output used", "json_object_schema"), ("logprobs", "yes, top_logprobs [1-9]"),
                       ("context length", "unknown"), ("latency of one call", r"[0-9.]+ s")]:
        assert re.search(row + r"\s*│\s*" + value, out), (row, out)
    j = mtr("llm-check", "--llm-config", str(cfg), "--json")
    assert j.returncode == 0 and json.loads(j.stdout)["local"]["structured_mode"] == "json_object_schema"
    gone = write_llm_config(tmp_path / "gone.yaml", f"http://127.0.0.1:{free_port()}/v1")
    r = mtr("llm-check", "--llm-config", str(gone))
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: LLM endpoint 'local'") and "unreachable" in lines[0]


# -- context length -------------------------------------------------------------------------
def _text_step(name: str = "echo", **kw) -> LLMStep:
    return LLMStep(name=name, prompt_version="t1", output_model=TextOutput, sampling=kw.pop("sampling", None),
                   build_messages=lambda x: [{"role": "user", "content": x}], **kw)


def _map(cfg: LLMConfig, step: LLMStep, inputs, store, concurrency: int = 1):
    async def main():
        async with LLMSession(cfg, store=store) as llm:
            return await llm.map(step, inputs, item_ids=[f"i{k}" for k in range(len(inputs))],
                                 concurrency=concurrency)
    return asyncio.run(main())


def test_prompts_longer_than_the_context_are_refused(recording_proxy, tmp_path):
    from agents.config import Sampling
    step = _text_step(sampling=Sampling(max_tokens=8))
    long = "The wall stood for decades. " * 700          # ~ 4,500 tokens
    # 1. configured context length: refused before sending
    cfg = LLMConfig.model_validate({"endpoints": {"local": {
        "base_url": recording_proxy.base_url, "model": MODEL_ALIAS, "probe": True, "context_length": N_CTX}}})
    batch = _map(cfg, step, [long, "Say hello."], tmp_path / "a")
    a, b = batch.items
    assert a.failure.kind == "api_error" and a.failure.error_class == "ContextLengthExceeded"
    assert "not sent" in a.failure.message and f"context length {N_CTX}" in a.failure.message
    assert b.ok and len(recording_proxy.chat()) == 1
    # 2. unknown context length: the server's 400 teaches it once, no retry, no 400 loop
    recording_proxy.reset()
    cfg = LLMConfig.model_validate({"endpoints": {"local": {
        "base_url": recording_proxy.base_url, "model": MODEL_ALIAS, "probe": True}}, "retry": {"max_attempts": 4}})
    batch = _map(cfg, step, [long, long + " Again.", "Say hi."], tmp_path / "b")
    first, second, short = batch.items
    assert first.failure.error_class == "ContextLengthExceeded" and first.failure.status_code == 400
    assert f"({N_CTX} tokens)" in first.failure.message
    assert second.failure.error_class == "ContextLengthExceeded" and "not sent" in second.failure.message
    assert short.ok
    assert [s.status for s in recording_proxy.chat()] == [400, 200]


# -- synthesis ------------------------------------------------------------------------------
def _small_corpus(dst: Path, chars_per_doc: int = 7000, n_docs: int = 4) -> Path:
    dst.mkdir()
    for f in sorted((ROOT / "examples" / "wiki").glob("*.md"))[:n_docs]:
        text = f.read_text(encoding="utf-8")
        cut = text.rfind("\n\n", 0, chars_per_doc)
        (dst / f.name).write_text(text[: cut if cut > 0 else chars_per_doc], encoding="utf-8")
    return dst


def _synth_config(path: Path, runs_root: Path, emb_cache: Path) -> Path:
    path.write_text(f"""\
runs_root = "{runs_root}"
[chunk]
mode = "chars"
max_size = 600
min_size = 200
[embed]
cache_dir = "{emb_cache}"
[cluster]
k = 10
size = 4
[topics]
min_cluster_size = 3
reduce_dims = 8
[synth]
shown_passages = 2
uniqueness_k = 1
max_attempts = 2
switch_ratio = 1.0
concurrency = 2
""", encoding="utf-8")
    return path


def _check_run(out: Path, proxy) -> dict:
    store = RunStore(str(out))
    assert store.read_table("chunks").num_rows in range(35, 75)
    convs = store.read_table("conversations").to_pylist()
    turns = store.read_table("turns").to_pylist()
    fails = store.read_table("failures").to_pylist()
    assert len(convs) == 2
    ids = [t["sample_id"] for t in turns]
    planned = {f"{c['conv_id']}:{k}" for c in convs for k in (1, 2, 3)}
    assert len(ids) == len(set(ids)) and set(ids) == planned                  # no lost / duplicated turns
    failed = {t["sample_id"] for t in turns if t["status"] == "failed"}
    assert failed == {f["sample_id"] for f in fails}                           # every failed turn explained
    assert all(t["status"] in ("ok", "failed") for t in turns)
    for t in turns:
        if t["status"] == "ok":
            assert t["question"] and t["answer"] and t["backend"] == "openai"
            assert json.loads(t["model"]).get("questioner") == MODEL_ALIAS
    raw = store.read_table("llm_calls").to_pylist()
    assert len({r["call_id"] for r in raw}) == len(raw)                        # no duplicated call rows
    assert all(r["outcome"] in ("ok", "invalid_output", "refusal", "error") for r in raw)
    return {"turns": turns, "calls": raw, "failures": fails}


def test_synthesize_against_llama_cpp(recording_proxy, tmp_path, shared_emb_cache):
    corpus = _small_corpus(tmp_path / "corpus")
    cfg = _synth_config(tmp_path / "mtr.toml", tmp_path / "runs", shared_emb_cache)
    llm = write_llm_config(tmp_path / "llm.yaml", recording_proxy.base_url,
                           extra=f"cache: {{dir: {tmp_path / 'llm-cache'}}}\n")
    out = tmp_path / "runs" / "bench"
    args = ["synthesize", "--corpus", str(corpus), "--config", str(cfg), "--turns", "3", "--conversations", "2",
            "--llm-config", str(llm)]
    r = mtr(*args, "--out", str(out))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    first = _check_run(out, recording_proxy)
    misses = [c for c in first["calls"] if not c["cache_hit"]]
    sent = [c for c in misses if not (c["error_class"] == "ContextLengthExceeded" and c["latency_s"] == 0)]
    seen = recording_proxy.chat(probe=False)
    assert len(recording_proxy.chat(probe=True)) >= 5                           # probed once (a handful of requests)
    assert len(seen) == len(sent) and len(seen) >= 6                            # every request is one llm_calls row
    # the tokens in llm_calls are the server's own usage numbers, request by request
    server_usage = sorted((s.usage["prompt_tokens"], s.usage["completion_tokens"]) for s in seen if s.status == 200)
    recorded = sorted((c["prompt_tokens"], c["completion_tokens"]) for c in sent if c["outcome"] != "error")
    assert server_usage == recorded
    assert all(c["latency_s"] > 0 for c in sent)
    # every call parsed into its output model or is an explicit failure (row outcome + turn failure)
    outcomes = Counter(c["outcome"] for c in first["calls"])
    assert outcomes["ok"] > 0
    # a new run over the same corpus with the same LLM cache: zero requests, identical tables
    recording_proxy.reset()
    out2 = tmp_path / "runs" / "bench2"
    r = mtr(*args, "--out", str(out2))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert recording_proxy.seen == []
    second = _check_run(out2, recording_proxy)
    assert all(c["cache_hit"] for c in second["calls"] if c["outcome"] != "error")
    key = lambda t: (t["sample_id"], t["status"], t["question"], t["answer"])  # noqa: E731
    assert sorted(map(key, second["turns"])) == sorted(map(key, first["turns"]))


# -- audit and abstention -------------------------------------------------------------------
JUDGE_ROLES = """\
  gemma: {endpoint: local, sampling: {max_tokens: 96}}
  gemma-answer: {endpoint: local}
"""


def test_audit_with_a_real_judge(llama_server, tmp_path):
    llm = write_llm_config(tmp_path / "llm.yaml", llama_server.base_url)
    llm.write_text(llm.read_text().replace("roles:\n", "roles:\n" + JUDGE_ROLES), encoding="utf-8")
    out = tmp_path / "audit"
    r = mtr("audit", "-b", str(ROOT / "tests" / "data" / "mtrag"), "-f", "mtrag", "--domain", "clapnq",
            "--llm-config", str(llm), "--judge", "gemma", "--limit", "2", "--negatives", "bm25",
            "--n-negatives", "2", "--out", str(out))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    calls = read_calls(RunStore(str(out))).to_pylist()
    llm_calls = [c for c in calls if c["backend"] == "openai"]
    assert llm_calls and {c["model"] for c in llm_calls} == {MODEL_ALIAS}
    assert {c["role"].split("@")[0] for c in llm_calls} >= {"audit_faithfulness", "audit_quality"}
    assert all(c["outcome"] in ("ok", "invalid_output", "refusal", "error") for c in llm_calls)
    assert "gemma" in r.stdout


def test_abstention_reads_the_servers_logprobs(llama_server, tmp_path):
    llm = write_llm_config(tmp_path / "llm.yaml", llama_server.base_url)
    llm.write_text(llm.read_text().replace("roles:\n", "roles:\n" + JUDGE_ROLES), encoding="utf-8")
    out = tmp_path / "abst"
    settings = tmp_path / "abst.yaml"          # short contexts: 2 passages of at most 400 characters
    settings.write_text("context_k: 2\nmax_passage_chars: 400\n", encoding="utf-8")
    r = mtr("abstention", "--benchmark", str(ROOT / "tests" / "data" / "mtrag"), "--format", "mtrag",
            "--domain", "clapnq", "--retriever", "bm25-turn", "--judge", "gemma", "--answer-model", "gemma-answer",
            "--limit", "2", "--review-n", "5", "--config", str(settings), "--llm-config", str(llm), "--out", str(out))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "answer:gemma-answer" in r.stdout
    # the detector either scored contexts from the server's first-token logprobs or says why not
    md = (out / "summary.md").read_text(encoding="utf-8")
    row = next(line for line in md.splitlines() if line.startswith("| answer:gemma-answer |"))
    assert ("| yes |" in row and "first-token P(ANSWERABLE) from endpoint logprobs" in row) or \
        ("| SKIPPED |" in row and "skipped" in row), row
    calls = read_calls(RunStore(str(out))).to_pylist()
    probes = [c for c in calls if c["step"] == "abstention_answerer" and c["backend"] == "openai"]
    assert probes and all(c["outcome"] in ("ok", "invalid_output", "error") for c in probes)


# -- timeouts, a killed server, resume ------------------------------------------------------
def test_timeouts_are_explicit_failures(llama_server, tmp_path):
    cfg = LLMConfig.model_validate({"endpoints": {"local": {
        "base_url": llama_server.base_url, "model": MODEL_ALIAS, "timeout_s": 0.01}},
        "retry": {"max_attempts": 2, "backoff_base_s": 0.05, "backoff_max_s": 0.1}})
    from agents.config import Sampling
    batch = _map(cfg, _text_step(sampling=Sampling(max_tokens=4)), ["Name a colour.", "Name a city."], tmp_path / "t")
    for res in batch.items:
        assert res.failure is not None and res.failure.kind == "retries_exhausted"
        assert "Timeout" in (res.failure.error_class or "") and "2 attempts failed" in res.failure.message
    rows = read_calls(RunStore(str(tmp_path / "t"))).to_pylist()
    assert len(rows) == 2 and all(r["outcome"] == "error" and r["retries"] == 1 for r in rows)


def test_killed_server_then_resume(gguf_path, tmp_path):
    from agents.config import Sampling
    srv = LlamaServer(gguf_path, log_path=tmp_path / "server.log")
    inputs = [f"Write one word about the number {k}." for k in range(6)]

    killed: list[bool] = []

    def build(x):
        if x == inputs[3] and not killed:
            killed.append(True)
            srv.kill()                        # the server dies mid-run, before item 3 is sent
        return [{"role": "user", "content": x}]

    step = LLMStep(name="word", prompt_version="w1", output_model=TextOutput, sampling=Sampling(max_tokens=6),
                   build_messages=build)
    cfg = LLMConfig.model_validate({"endpoints": {"local": {
        "base_url": srv.base_url, "model": MODEL_ALIAS, "probe": True, "timeout_s": 120}},
        "retry": {"max_attempts": 2, "backoff_base_s": 0.1, "backoff_max_s": 0.2}})
    store = tmp_path / "run"
    try:
        srv.start()
        first = _map(cfg, step, inputs, store)
        srv.proc = None
        assert [r.ok or r.failure.kind == "invalid_output" for r in first.items[:3]] == [True] * 3
        for r in first.items[3:]:
            assert r.failure is not None and r.failure.kind == "retries_exhausted"
            assert r.failure.error_class in ("APIConnectionError", "ConnectError")
        srv.start()                           # same port
        second = _map(cfg, step, inputs, store)
    finally:
        srv.stop()
    assert all(r.cache_hit for r in second.items[:3])                  # answered calls are not repeated
    assert all(not r.cache_hit and (r.ok or r.failure.kind == "invalid_output") for r in second.items[3:])
    rows = read_calls(RunStore(str(store))).to_pylist()
    by_item = Counter((r["item_id"], r["cache_hit"], r["outcome"]) for r in rows if r["purpose"] == "primary")
    for k in range(3):
        assert by_item[(f"i{k}", True, "ok")] + by_item[(f"i{k}", True, "invalid_output")] == 1
    for k in range(3, 6):
        assert by_item[(f"i{k}", False, "error")] == 1
