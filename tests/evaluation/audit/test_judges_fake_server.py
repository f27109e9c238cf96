"""The fake OpenAI-compatible server scripted as judges."""
import statistics

import pytest

from agents.testing.fake_server import Reply
from evaluation.audit import AuditConfig, JudgeConfigError, JudgeSpec, resolve_judges, run_audit
from tests.evaluation.audit.conftest import llm_config, synthetic_benchmark


def _cfg(**kw):
    return AuditConfig(negatives="bm25", n_resamples=200, **kw)


def test_always_first_judge_shows_position_bias_and_reversed_pass(fake_llm, tmp_path):
    # unscripted answers come from the JSON schema: {"rationale": "...", "choice": 1} -> always [1]
    bench = synthetic_benchmark(16)
    res = run_audit(bench, ["fake"], out=tmp_path / "a", llm_config=llm_config(("fake", fake_llm, "judge-model")),
                    config=_cfg(metrics=["distinguishability"], n_negatives=4, reverse_pass=True))
    rows = [r for r in res.scores if r["metric"] == "distinguishability"]
    fwd = [r for r in rows if r["pass"] == "forward"]
    rev = {r["unit_id"]: r for r in rows if r["pass"] == "reversed"}
    assert len(fwd) == len(rev) == 16 and all(r["status"] == "ok" for r in rows)
    assert all(r["chosen_position"] == 1 for r in rows)
    # hand check: forward accuracy = share of lists with the gold first; reversed = gold last
    acc_f = statistics.fmean(r["gold_position"] == 1 for r in fwd)
    acc_r = statistics.fmean(r["gold_position"] == 5 for r in fwd)
    s = res.summary_for(judge="fake")
    assert s["distinguishability[retrieved]"]["mean"] == pytest.approx(acc_f)
    assert s["distinguishability[retrieved-reversed]"]["mean"] == pytest.approx(acc_r)
    for r in fwd:
        rv = rev[r["unit_id"]]
        assert rv["candidates"] == r["candidates"][::-1] and rv["gold_position"] == 6 - r["gold_position"]
        assert r["seed"] == 13 and r["item_seed"] == rv["item_seed"]
    pos = res.position[0]
    assert pos["first_position_rate"] == 1.0 and pos["last_position_rate"] == 0.0
    assert pos["consistency"] == 0.0 and pos["chosen_position_hist"] == [16, 0, 0, 0, 0]
    assert sum(pos["gold_position_hist"]) == 16 and max(pos["gold_position_hist"]) < 16    # the gold moves
    # prompts: temperature 0, the gold text among 5 numbered candidates, the current question
    body = fake_llm.requests[0].body
    assert body["temperature"] == 0 and body["max_tokens"] == 1024
    assert '<passage id="5"' in fake_llm.requests[0].text and "Current user question: <question>Question" in fake_llm.requests[0].text
    # non-gold picks are exported for review
    assert len(res.missing_positives) == sum(r["score"] == 0 for r in rows) - _same_doc_picks(fwd, rev)


def _same_doc_picks(fwd, rev):
    """(turn, passage) pairs picked in both passes count once in the missing-positives file."""
    return sum(1 for r in fwd if r["score"] == 0 and rev[r["unit_id"]]["chosen_doc"] == r["chosen_doc"])


def test_scripted_ratings_parse_failures_and_text_mode(fake_llm, tmp_path):
    bench = synthetic_benchmark(6)
    q = {t.sample_id: t.question for t in bench.turns}
    fake_llm.on(f"Current user question: <question>{q['c0:1']}", Reply.json({"rationale": "good", "rating": 5}))
    fake_llm.on(f"Current user question: <question>{q['c1:1']}", Reply.text("Justification: mostly fine.\nRating: 4"))
    fake_llm.on(f"Current user question: <question>{q['c2:1']}", Reply.text("no idea"), Reply.text("still no idea"))
    fake_llm.on(f"Current user question: <question>{q['c3:1']}", Reply.json({"rationale": "x", "rating": 9}),
                Reply.json({"rationale": "fixed", "rating": 2}))               # repaired on the retry
    fake_llm.on(f"Current user question: <question>{q['c4:1']}", Reply.refusal())
    res = run_audit(bench, ["judge"], out=tmp_path / "a", llm_config=llm_config(("judge", fake_llm, "m")),
                    config=_cfg(metrics=["faithfulness"]))
    by = {r["sample_id"]: r for r in res.scores}
    assert (by["c0:1"]["score"], by["c0:1"]["rationale"]) == (5.0, "good")
    assert (by["c1:1"]["score"], by["c1:1"]["rationale"]) == (4.0, "mostly fine.")
    assert by["c2:1"]["status"] == "parse_failure" and by["c2:1"]["score"] is None
    assert "still no idea" in by["c2:1"]["raw_output"]
    assert by["c3:1"]["score"] == 2.0
    assert by["c4:1"]["status"] == "failed" and by["c4:1"]["failure_kind"] == "refusal"
    assert by["c5:1"]["score"] == 1.0                                             # schema-built default answer
    s = res.summary_for(judge="judge")["faithfulness"]
    assert (s["n"], s["n_attempted"], s["n_parse_failures"], s["n_failures"]) == (4, 6, 1, 1)
    assert s["parse_failure_rate"] == pytest.approx(1 / 6)
    assert s["mean"] == pytest.approx((5 + 4 + 2 + 1) / 4)
    assert "pf=1" in res.markdown and "fail=1" in res.markdown
    html = (tmp_path / "a" / "report.html").read_text()
    assert "Parse failures" in html and "Offline heuristic judges" not in html
    # every call is accounted in the run's llm_calls table
    from agents.accounting import read_calls
    from storage.store import RunStore
    calls = read_calls(RunStore(str(tmp_path / "a"))).to_pylist()
    assert len(calls) == fake_llm.count and {c["role"] for c in calls} == {"audit_faithfulness@judge"}


def test_self_judging_is_excluded_and_ensemble_is_hand_checked(fake_llm, fake_llm2, tmp_path):
    # turns 0 and 1 were written by model "alpha"; judge A serves alpha, judge B serves beta
    bench = synthetic_benchmark(4, generator={0: "org/Alpha", 1: "alpha"})
    q = {t.sample_id: t.question for t in bench.turns}
    for i, (ra, rb) in enumerate([(5, 3), (5, 2), (4, 2), (2, 4)]):
        fake_llm.on(f"Current user question: <question>{q[f'c{i}:1']}", Reply.json({"rationale": "a", "rating": ra}))
        fake_llm2.on(f"Current user question: <question>{q[f'c{i}:1']}", Reply.json({"rationale": "b", "rating": rb}))
    cfg = llm_config(("A", fake_llm, "alpha"), ("B", fake_llm2, "beta"))
    res = run_audit(bench, ["A", "B"], out=tmp_path / "a", llm_config=cfg, config=_cfg(metrics=["quality"]))
    assert fake_llm.count == 2 and fake_llm2.count == 4                  # A never saw its own turns
    a = {r["sample_id"]: r for r in res.scores if r["judge"] == "A"}
    assert a["c0:1"]["status"] == a["c1:1"]["status"] == "excluded_self" and a["c0:1"]["score"] is None
    items = {i["sample_id"]: i["ensemble"] for i in res.items}
    assert items == {"c0:1": 3.0, "c1:1": 2.0, "c2:1": 3.0, "c3:1": 3.0}
    s = res.summary_for()["quality"]
    assert s["mean"] == pytest.approx(11 / 4) and s["n_excluded_self"] == 2
    assert res.summary_for(judge="A")["quality"]["n_excluded_self"] == 2
    agr = res.agreement[0]
    assert agr["n_units"] == 2 and agr["alpha"] < 0        # A and B disagree in opposite directions
    # without exclusion, A judges everything
    res2 = run_audit(bench, ["A", "B"], out=tmp_path / "b", llm_config=cfg,
                     config=_cfg(metrics=["quality"], self_preference=False))
    assert not any(r["status"] == "excluded_self" for r in res2.scores)


def test_judge_resolution(fake_llm):
    cfg = llm_config(("vllm", fake_llm, "qwen2.5-7b"))
    assert [j.name for j in resolve_judges(None, None)] == ["overlap", "support", "retrieval"]
    assert resolve_judges(None, cfg) == [JudgeSpec("vllm", endpoint="vllm", model="qwen2.5-7b")]
    js = resolve_judges(["vllm", "vllm:gemma-3", "llama-4-scout", "heuristic:support"], cfg)
    assert [(j.endpoint, j.model, j.kind) for j in js] == [("vllm", "qwen2.5-7b", "llm"), ("vllm", "gemma-3", "llm"),
                                                          ("vllm", "llama-4-scout", "llm"), (None, None, "heuristic")]
    with pytest.raises(JudgeConfigError, match="needs an LLM config"):
        resolve_judges(["gpt-4o"], None)
    with pytest.raises(JudgeConfigError, match="twice"):
        resolve_judges(["overlap", "overlap"], None)


def test_budget_stop_is_reported_not_hidden(fake_llm, tmp_path):
    bench = synthetic_benchmark(12)
    cfg = llm_config(("judge", fake_llm, "m"), budget={"max_tokens": 50}, max_concurrency=2)
    res = run_audit(bench, ["judge"], out=tmp_path / "a", llm_config=cfg, config=_cfg(metrics=["quality"]))
    st = [r["status"] for r in res.scores]
    assert "ok" in st and "failed" in st and len(st) == 12
    assert {r["failure_kind"] for r in res.scores if r["status"] == "failed"} == {"not_started"}
    s = res.summary_for(judge="judge")["quality"]
    assert s["n"] + s["n_failures"] == 12 and s["n_failures"] > 0
    assert res.llm["stopped_reason"] and "budget stopped the audit early" in res.markdown


def test_dry_run_counts_calls_without_sending(fake_llm, tmp_path):
    from evaluation.audit import estimate_audit
    bench = synthetic_benchmark(5, generator={0: "m"})
    cfg = llm_config(("judge", fake_llm, "m"), prices={"m": {"input_per_1m": 1.0, "output_per_1m": 2.0}})
    rep = estimate_audit(bench, ["judge", "overlap"], llm_config=cfg, config=_cfg(reverse_pass=True))
    assert fake_llm.count == 0
    # judge: 4 turns (turn 0 is its own) x (alignment + 2 distinguishability passes + faithfulness + quality)
    assert rep.by_role["audit_quality@judge"].calls == 4 and rep.by_role["audit_distinguishability@judge"].calls == 8
    assert rep.by_role["audit_alignment@overlap"].calls == 5 and rep.cost_usd > 0
