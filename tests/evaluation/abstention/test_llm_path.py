"""The LLM path against the fake OpenAI-compatible server: two LLM judges (labels parsed from
their JSON), LLM query expansions for the fusion rung, the answer model's first-token
P(ANSWERABLE) from logprobs, the negative control's unfit flag, the call cache on a rerun,
and the clear skip when the endpoint returns no logprobs."""
from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from agents.testing.fake_server import FakeLLMServer
from evaluation.abstention import AbstentionConfig, AbstentionError, run_abstention

from tests.evaluation.abstention.helpers import (ModelRoutedServer, judge_label, last_question, probe_p, prompt_text,
                                     sub_benchmark)


@pytest.fixture(scope="module")
def small(mtrag_clapnq):
    return sub_benchmark(mtrag_clapnq, n_convs=2, n_others=150)


def cfg(**kw):
    base = dict(retrievers=["bm25-turn", "fusion"], judges=["judge-a", "judge-b"], answer_models=["answerer"],
                expander="expander", review_n=20, n_resamples=200)
    return AbstentionConfig(**{**base, **kw})


def test_llm_judges_expansions_and_logprob_detector(small, routed_llm, llm_config_for, tmp_path):
    llm = llm_config_for(routed_llm, cache_dir=tmp_path / "llm-cache")
    out = tmp_path / "run"
    res = run_abstention(small, out, cfg(), llm)
    assert not res.offline_demo and "DEMONSTRATION" not in res.markdown
    calls = pq.read_table(out / "judge_calls.parquet").to_pylist()
    assert calls and all(c["ok"] and c["backend"] == "openai" for c in calls)
    # judges: every stored verdict is the one the server gave for that exact prompt
    judged = [c for c in calls if c["purpose"] == "judge"]
    assert {c["model"] for c in judged} == {"judge-a", "judge-b"}
    for c in judged:
        assert json.loads(c["output_json"])["label"] == judge_label(c["model"], prompt_text(c["raw_prompt_json"]))
    labels = pq.read_table(out / "content_labels.parquet").to_pylist()
    by_key = {(c.retriever, c.sample_id): c for c in res.contexts}
    for row in labels:
        c = by_key[(row["retriever"], row["sample_id"])]
        assert row["backend"] == "openai" and row["supporting"] == list(c.doc_ids[:2])
    # expansions: the fusion rung searched the expander's three strings
    exp = [c for c in calls if c["purpose"] == "expansion"]
    assert len(exp) == len(res.ladder.expansions) > 0
    for c in exp:
        q = last_question(prompt_text(c["raw_prompt_json"]))
        assert json.loads(c["output_json"])["expansions"] == [f"{q} answer passage", q, f"{q} details"]
    assert res.ladder.expansion_backend == "llm:expander"
    # detector: P(ANSWERABLE) = A / (A + U) from the first token's alternatives
    probes = {c["item_id"]: prompt_text(c["raw_prompt_json"]) for c in calls if c["purpose"] == "probe"}
    scores = [r for r in pq.read_table(out / "detector_scores.parquet").to_pylist()
              if r["detector"] == "answer:answerer"]
    assert len(scores) == len(res.contexts)
    from evaluation.abstention.llm_phase import _item_id
    for r in scores:
        c = by_key[(r["retriever"], r["sample_id"])]
        if c.doc_ids:
            assert r["p_answerable"] == pytest.approx(probe_p(probes[_item_id(c.key)]))
            assert r["abstain"] == (r["p_answerable"] < 0.5)
    assert "auroc:answer:answerer:content" in res.auroc_columns
    # agreement and the negative control: these fake judges say yes to a third of everything
    assert res.agreements and res.agreements[-1][1].n > 0
    assert all(r.unfit for r in res.negative_control.values())
    assert any("UNFIT" in n for n in res.notes) and "UNFIT" in (out / "report.html").read_text()
    # a rerun of the same run is answered from the call cache: no new request
    n = routed_llm.count
    again = run_abstention(small, out, cfg(), llm)
    assert routed_llm.count == n
    assert [r["false_miss_yes"] for r in again.per_retriever] == pytest.approx(
        [r["false_miss_yes"] for r in res.per_retriever], nan_ok=True)


@pytest.mark.parametrize("how", ["server-ignores", "config-says-no"])
def test_logprob_detector_skipped_with_a_clear_message(small, llm_config_for, tmp_path, how):
    srv = ModelRoutedServer(logprobs="ignore" if how == "server-ignores" else "honour")
    srv.start()
    try:
        extra = {} if how == "server-ignores" else {"supports_logprobs": False}
        res = run_abstention(small, tmp_path / how, cfg(retrievers=["bm25-turn"], judges=["heuristic-support"],
                                                       expander="prf"), llm_config_for(srv, **extra))
    finally:
        srv.stop()
    det = {d.name: d for d in res.detectors}
    assert det["top1"].available and not det["answer:answerer"].available
    msg = det["answer:answerer"].message
    assert msg.startswith("Detector answer:answerer skipped:") and "does not support logprobs" in msg
    assert msg in res.notes and "SKIPPED" in res.markdown
    assert res.auroc_columns == ["auroc:top1:rule", "auroc:top1:content"]
    assert res.offline_demo      # the heuristic judge is a stand-in


def test_llm_names_need_an_llm_config(small, tmp_path):
    with pytest.raises(AbstentionError, match="judge 'judge-a' is an LLM and needs --llm-config"):
        run_abstention(small, tmp_path / "x", cfg())


def test_unknown_answer_format_is_a_failure_not_a_guess(small, llm_config_for, tmp_path):
    srv = FakeLLMServer()      # automatic replies: the probe's first token names no label
    srv.start()
    try:
        res = run_abstention(small, tmp_path / "auto", cfg(retrievers=["bm25-turn"], judges=["heuristic-support"],
                                                          expander="prf"), llm_config_for(srv))
    finally:
        srv.stop()
    det = {d.name: d for d in res.detectors}["answer:answerer"]
    assert not det.available and det.n_missing == len({c.key for c in res.contexts if c.doc_ids})
    assert det.message in res.notes and "no context got a usable first token" in det.message
    assert res.auroc_columns == ["auroc:top1:rule", "auroc:top1:content"]
