"""Every ``mtr synthesize`` run's dataset card has a quality-gate table and a self-audit section: MTR-Eval on the
new benchmark (heuristic judges offline; an LLM judge never on turns its own model wrote), its summary in the run
(``self_audit`` table, manifest) and its cost beside the synthesis's. ``--no-audit`` and ``--gate off`` say so."""
from __future__ import annotations

import json
import shutil

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from agents.testing.fake_roles import RoleScriptedServer, role_of
from common.errors import UserError
from flows.cli import app


@pytest.fixture(scope="module")
def spine(tmp_path_factory, shared_emb_cache):
    from tests.spine import build_example_spine
    return build_example_spine(tmp_path_factory.mktemp("audit-spine"), shared_emb_cache)[0]


@pytest.fixture
def run_dir(spine, tmp_path):
    dst = tmp_path / "bench"
    shutil.copytree(spine, dst, ignore=shutil.ignore_patterns("cache"))
    return dst


def _config(tmp_path, shared_emb_cache):
    p = tmp_path / "mtr.toml"
    p.write_text(f'[embed]\ncache_dir = "{shared_emb_cache}"\n[synth]\nuniqueness_retriever = "bm25"\n'
                 'uniqueness_k = 4\n')
    return p


def _card(run_dir) -> str:
    return (run_dir / "export" / "README.md").read_text()


def test_synthesize_audits_the_new_benchmark_into_its_card(run_dir, tmp_path, shared_emb_cache, prefect_harness):
    res = CliRunner().invoke(app, ["synthesize", "--out", str(run_dir), "-c", str(_config(tmp_path, shared_emb_cache)),
                                   "--conversations", "2", "--turns", "3"])
    assert res.exit_code == 0, res.output
    assert "quality gate:" in res.output and "self-audit (offline heuristic judges):" in res.output
    card = _card(run_dir)
    gate = card.split("## Quality gate", 1)[1].split("\n## ", 1)[0]
    assert "Mode `default`" in gate and "`min_fit` 0.25" in gate
    assert "| check | role | model | rejections | turns failed |" in gate and "| answer_grounded | answerer |" in gate
    audit = card.split("## Self-audit (MTR-Eval)", 1)[1].split("\n## ", 1)[0]
    for label in ("Query-evidence alignment", "Evidence completeness (distinguishability) [retrieved]",
                  "Answer-evidence faithfulness", "Answer quality"):
        assert f"| {label} |" in audit
    assert "offline heuristic stand-ins" in audit and "7 hard negatives retrieved" in audit
    assert "Audit cost:" in audit and "(synthesis:" in audit and "never self-judged" in audit
    rows = pq.read_table(run_dir / "self_audit.parquet").to_pylist()
    ens = {(r["metric"], r["variant"]): r for r in rows if r["judge"] == "ensemble"}
    assert {m for m, _ in ens} == {"alignment", "distinguishability", "faithfulness", "quality"}
    assert all(r["n"] > 0 and r["mean"] is not None for r in ens.values())
    man = json.loads((run_dir / "manifest.json").read_text())
    assert man["self_audit"]["turns"] == man["stages"]["synthesize"]["summary"]["turns_ok"]
    assert (run_dir / "audit" / "report.html").exists()
    assert pq.read_table(run_dir / "gate_rejections.parquet").schema.names[:5] == ["sample_id", "conv_id", "turn",
                                                                                   "attempt", "check"]


def test_no_audit_and_gate_off_are_said_on_the_card(run_dir, tmp_path, shared_emb_cache, prefect_harness):
    res = CliRunner().invoke(app, ["synthesize", "--out", str(run_dir), "-c", str(_config(tmp_path, shared_emb_cache)),
                                   "--conversations", "1", "--turns", "2", "--no-audit", "--gate", "off"])
    assert res.exit_code == 0, res.output
    card = _card(run_dir)
    assert "The quality gate was off" in card
    assert "Not audited: turned off (`--no-audit`" in card
    assert not (run_dir / "audit").exists() and not (run_dir / "self_audit.parquet").exists()
    bad = CliRunner().invoke(app, ["synthesize", "--out", str(run_dir), "--gate", "lenient"])
    assert isinstance(bad.exception, UserError) and "synth.gate.mode" in str(bad.exception)   # exit 2, one line


def test_an_llm_judge_never_rates_turns_its_own_model_wrote(run_dir, tmp_path, shared_emb_cache, prefect_harness):
    srv = RoleScriptedServer().start()
    try:
        llm = tmp_path / "llm.yaml"
        llm.write_text(json.dumps({"endpoints": {"fake": {"base_url": srv.base_url, "model": "fake-model"}},
                                   "retry": {"backoff_base_s": 0.002, "backoff_max_s": 0.02}}))
        res = CliRunner().invoke(app, ["synthesize", "--out", str(run_dir), "-c",
                                       str(_config(tmp_path, shared_emb_cache)), "--llm-config", str(llm),
                                       "--conversations", "1", "--turns", "2"])
        assert res.exit_code == 0, res.output
        # every request the endpoint saw was a synthesis agent's (or a capability probe), none a judge's
        judged = [r for r in srv.requests if role_of(r.body, r.text) is None
                  and {k.lower(): v for k, v in r.headers.items()}.get("x-mtr-probe") != "1"]
    finally:
        srv.stop()
    man = json.loads((run_dir / "manifest.json").read_text())["self_audit"]
    assert [j["name"] for j in man["judges"]] == ["overlap", "support", "retrieval", "fake"]
    assert man["excluded_self"] > 0 and judged == []      # the generator's own model judged nothing
    scores = pq.read_table(run_dir / "audit" / "audit_scores.parquet").to_pylist()
    assert {r["status"] for r in scores if r["judge"] == "fake"} == {"excluded_self"}
    assert "never self-judged): " + str(man["excluded_self"]) in _card(run_dir)
