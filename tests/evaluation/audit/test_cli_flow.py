"""``mtr audit`` / ``mtr audit-human`` and the mtr-audit Prefect flow."""
import csv
import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.cli_audit import benchmark_specs
from common.errors import UserError
from tests.evaluation.audit.conftest import MTRAG
from tests.evaluation.audit.test_adapters import _chatrag_rows


def test_cli_offline_audit_of_mtrag_sample(tmp_path):
    out = tmp_path / "run"
    r = CliRunner().invoke(app, ["audit", "-b", str(MTRAG), "-f", "mtrag", "--domain", "clapnq", "--negatives", "bm25",
                                 "--sample", "25", "--seed", "3", "--judge", "overlap", "--judge", "retrieval",
                                 "--reverse", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "Offline heuristic judges (overlap, retrieval)" in r.output
    assert "mtrag-clapnq: 23 of 224 turns audited" in r.output      # 25 sampled, 2 without gold: not audited
    man = json.loads((out / "manifest.json").read_text())["audit"]
    assert man["config"]["sample"] == 25 and man["config"]["seed"] == 3 and man["config"]["reverse_pass"]
    assert man["offline_heuristic_judges"] == ["overlap", "retrieval"]
    assert (out / "report.html").is_file() and (out / "audit_scores.parquet").is_file()
    # human ratings of an existing run
    import pyarrow.parquet as pq
    ratings = tmp_path / "h.csv"
    items = [i for i in pq.read_table(out / "audit_items.parquet").to_pylist() if i["metric"] == "quality"]
    with ratings.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["sample_id", "Quality"])
        for i in items:
            w.writerow([i["sample_id"], i["ensemble"]])
    r = CliRunner().invoke(app, ["audit-human", str(out), str(ratings)])
    assert r.exit_code == 0, r.output
    assert "ensemble" in r.output and "quality" in r.output


def test_benchmark_specs_expand_domains_and_formats(tmp_path):
    s = benchmark_specs([MTRAG], ["mtrag"], ["clapnq", "cloud"], None)
    assert [(x["domain"], x["split"]) for x in s] == [("clapnq", "test"), ("cloud", "test")]
    s = benchmark_specs([tmp_path, tmp_path], ["coral", "topiocqa"], [], None)
    assert [(x["format"], x["split"]) for x in s] == [("coral", "test"), ("topiocqa", "dev")]
    with pytest.raises(UserError, match="unknown --format 'squad'"):
        benchmark_specs([tmp_path], ["squad"], [], None)
    with pytest.raises(UserError, match="2 --format values for 3 benchmarks"):
        benchmark_specs([tmp_path] * 3, ["mtrag", "beir"], [], None)


def test_cli_errors_are_one_sentence(tmp_path):
    f = tmp_path / "rows.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in _chatrag_rows()))
    r = subprocess.run([sys.executable, "-m", "flows.cli", "audit", "-b", str(f), "-f", "chatrag", "--judge", "gpt-4o",
                        "--out", str(tmp_path / "o")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr + r.stdout
    assert "judge 'gpt-4o' is an LLM judge and needs an LLM config" in r.stderr
    r = CliRunner().invoke(app, ["audit", "-b", str(f), "-f", "chatrag", "--n-negatives", "0"])
    assert isinstance(r.exception, UserError) and "n_negatives" in str(r.exception)


def test_prefect_flow_matches_plain_function(tmp_path, prefect_harness):
    from evaluation.audit import AuditConfig, run_audit
    from flows.audit_flow import run_audit_flow
    from storage.benchmark import load_benchmarks
    f = tmp_path / "rows.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in _chatrag_rows()))
    specs = benchmark_specs([f], ["chatrag"], [], None)
    cfg = AuditConfig(negatives="bm25", n_negatives=3, reverse_pass=True, n_resamples=200)
    res = run_audit_flow(specs, ["overlap", "support"], out=tmp_path / "flow", config=cfg)
    plain = run_audit(load_benchmarks(specs), ["overlap", "support"], out=tmp_path / "plain", config=cfg)
    key = lambda r: (r["metric"], r["variant"], r["judge"])          # noqa: E731
    assert sorted((key(r), r["mean"], r["n"]) for r in res.summary) == \
        sorted((key(r), r["mean"], r["n"]) for r in plain.summary)
    assert (tmp_path / "flow" / "report.html").is_file() and res.markdown.startswith("# MTR-Eval audit")
