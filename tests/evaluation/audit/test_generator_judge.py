"""Generator x judge table (hand-computed values)."""
import math

import pytest

from evaluation.audit.generator_judge import generator_judge_rows


def _r(judge, unit, score, metric="faithfulness", gen="gX", status="ok", variant=""):
    v = variant or ("retrieved" if metric == "distinguishability" else "")
    return {"benchmark": "b", "sample_id": unit, "unit_id": unit, "metric": metric, "variant": v, "judge": judge,
            "status": status, "score": score, "generator": gen}


ROWS = [_r("A", "u1", 5), _r("B", "u1", 3), _r("C", "u1", 4),
        _r("A", "u2", None, gen="gA", status="excluded_self"), _r("B", "u2", 2, gen="gA"), _r("C", "u2", 4, gen="gA"),
        _r("A", "u1", 1, "distinguishability"), _r("B", "u1", 1, "distinguishability"),
        _r("C", "u1", 0, "distinguishability"),
        _r("A", "u3", 1, "distinguishability"), _r("B", "u3", 1, "distinguishability"),
        _r("C", "u3", 1, "distinguishability"),
        _r("C", "u3", 0, "distinguishability", variant="retrieved-reversed")]      # reversed pass: left out


def test_generator_judge_table_hand_computed():
    t = {(r["metric"], r["generator"], r["judge"]): r for r in generator_judge_rows(ROWS, {("b", "u1", "faithfulness"): 4.0})}
    a = t[("faithfulness", "gX", "A")]
    # A=5 vs mean(3, 4) = 3.5 -> 1.5; vs human 4 -> 1
    assert (a["n"], a["ensemble_mad"], a["ensemble_within_1"]) == (1, 1.5, 0.0)
    assert (a["n_vs_human"], a["human_mad"], a["human_within_1"]) == (1, 1.0, 1.0)
    assert t[("faithfulness", "gX", "C")]["ensemble_mad"] == 0.0             # 4 vs mean(5, 3)
    s = t[("faithfulness", "gA", "A")]
    assert s["self"] and s["n_self"] == 1 and s["n"] == 0 and math.isnan(s["ensemble_mad"])
    assert t[("faithfulness", "gA", "B")]["ensemble_mad"] == 2.0 and not t[("faithfulness", "gA", "B")]["self"]
    # distinguishability u1: A and B face a 1-1 tie (left out), C=0 vs majority 1; u3 all agree
    da, dc = t[("distinguishability", "gX", "A")], t[("distinguishability", "gX", "C")]
    assert (da["n"], da["n_vs_ensemble"], da["ensemble_agreement"]) == (2, 1, 1.0)
    assert (dc["n"], dc["n_vs_ensemble"], dc["ensemble_agreement"]) == (2, 2, pytest.approx(0.5))
    assert math.isnan(dc["ensemble_mad"]) and dc["n_vs_human"] == 0


def test_audit_writes_the_table_and_marks_self(fake_llm, fake_llm2, tmp_path):
    from evaluation.audit import AuditConfig, run_audit
    from tests.evaluation.audit.conftest import llm_config, synthetic_benchmark
    bench = synthetic_benchmark(6, generator={0: "model-a", 1: "model-a", 2: "model-b"})
    cfg = llm_config(("ja", fake_llm, "model-a"), ("jb", fake_llm2, "model-b"))
    res = run_audit(bench, ["ja", "jb"], out=tmp_path / "a", llm_config=cfg,
                    config=AuditConfig(negatives="bm25", metrics=["quality"], n_resamples=100))
    t = {(r["generator"], r["judge"]): r for r in res.generator_judge}
    assert t[("model-a", "ja")]["self"] and t[("model-a", "ja")]["n_self"] == 2 and t[("model-a", "ja")]["n"] == 0
    assert t[("model-b", "jb")]["n_self"] == 1 and not t[("model-a", "jb")]["self"]
    assert t[("unknown", "ja")]["n"] == 3 and (tmp_path / "a" / "audit_generator_judge.parquet").exists()
    assert "## Generator x judge" in res.markdown and "self (2)" in res.markdown
