"""``mtr abstention`` end to end (subprocess), its one-sentence errors, and the Prefect wrapper
(slow: it starts a temporary Prefect server)."""
import json
import subprocess
import sys

import pytest

from tests.evaluation.abstention.helpers import MTRAG


def _mtr(*args):
    return subprocess.run([sys.executable, "-m", "flows.cli", "abstention", *args], capture_output=True, text=True,
                          timeout=300)


def test_cli_runs_offline_and_says_it_is_a_demonstration(tmp_path):
    out = tmp_path / "run"
    r = _mtr("--benchmark", str(MTRAG), "--format", "mtrag", "--domain", "cloud", "--retriever", "bm25-turn",
             "--retriever", "fusion", "--limit", "40", "--review-n", "30", "--answer-check", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "DEMONSTRATION: offline stand-ins are in use" in r.stdout
    assert "bm25-turn" in r.stdout and "AUROC" in r.stdout and "flips rule -> content:heuristic-support" in r.stdout
    for name in ("report.html", "summary.md", "review_sample.csv", "relabel_suggestions.csv", "ladder.png",
                 "per_retriever.parquet", "answer_check.parquet", "llm_calls"):
        assert (out / name).exists(), name
    man = json.loads((out / "manifest.json").read_text())["abstention"]
    assert man["config"]["limit"] == 40 and man["config"]["answer_check"] and man["offline_demo"]
    assert "## Answer check" in (out / "summary.md").read_text()


def test_cli_error_is_one_sentence_without_traceback(tmp_path):
    r = _mtr("--benchmark", str(MTRAG), "--format", "mtrag", "--domain", "cloud", "--retriever", "bm25-magic",
             "--out", str(tmp_path / "x"))
    assert r.returncode == 2 and "error: unknown retriever 'bm25-magic'" in r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "x").exists()


@pytest.mark.parametrize("args,msg", [
    (["--format", "mtrag"], "--format mtrag needs --domain"),
    (["--format", "mtrag", "--domain", "cloud", "--judge", "gpt-4o"],
     "judge 'gpt-4o' is an LLM and needs --llm-config"),
    (["--format", "mtrag", "--domain", "cloud", "--limit", "0"], "abstention setting limit"),
    (["--format", "mtrag", "--domain", "atlantis"], "has no queries/atlantis_rewrite.jsonl"),
    (["--format", "tsv"], "--format must be mtrag, ours or beir"),
    (["--format", "mtrag", "--domain", "cloud", "--llm-config", "/nonexistent.yaml"], "does not exist"),
])
def test_cli_user_errors(args, msg, tmp_path):
    from typer.testing import CliRunner

    from flows.cli import app
    from common.errors import UserError
    res = CliRunner().invoke(app, ["abstention", "--benchmark", str(MTRAG), *args, "--out", str(tmp_path / "x")])
    assert isinstance(res.exception, UserError), res.output
    assert msg in str(res.exception) and "\n" not in str(res.exception)
    assert not (tmp_path / "x").exists()


def test_prefect_flow_publishes_the_markdown_artifact(tmp_path, prefect_harness):
    from evaluation.abstention import AbstentionConfig
    from flows.abstention_flow import run_abstention_flow
    res = run_abstention_flow(MTRAG, "mtrag", "cloud", tmp_path / "flow-run",
                              AbstentionConfig(retrievers=["bm25-turn"], limit=20, review_n=10))
    from prefect.client.orchestration import get_client

    async def artifacts():
        async with get_client() as client:
            return await client.read_artifacts()
    import asyncio
    arts = asyncio.run(artifacts())
    assert res.files["html"].exists()
    assert any(a.key == "abstention-flow-run" and "DEMONSTRATION" in (a.data or "") for a in arts)


def test_prefect_option_runs_the_flow_and_flow_option_is_gone(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    import flows.abstention_flow
    from flows.cli import app
    calls = []

    class Stop(Exception):
        pass

    def fake_flow(benchmark, fmt, domain, out_dir, cfg, llm_config):
        calls.append((fmt, domain, out_dir, cfg.limit))
        raise Stop
    monkeypatch.setattr(flows.abstention_flow, "run_abstention_flow", fake_flow)
    base = ["abstention", "--benchmark", str(MTRAG), "--format", "mtrag", "--domain", "cloud", "--limit", "7",
            "--out", str(tmp_path / "x")]
    res = CliRunner().invoke(app, [*base, "--prefect"])
    assert isinstance(res.exception, Stop) and calls == [("mtrag", "cloud", tmp_path / "x", 7)]
    res = CliRunner().invoke(app, [*base, "--flow"])
    assert res.exit_code == 2 and "No such option" in res.output and len(calls) == 1
