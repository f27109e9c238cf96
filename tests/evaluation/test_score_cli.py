from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from evaluation.score import score_run_files
from flows.cli_eval import register
from common.errors import UserError
from storage.formats import read_per_query_jsonl

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def app():
    app = typer.Typer()

    @app.callback()
    def main() -> None:  # keep "evaluate" a sub-command
        pass

    register(app)
    return app


@pytest.fixture
def run_files(mtrag_dir):
    return mtrag_dir / "trec_runs" / "bm25_cloud_lastturn.trec.gz", mtrag_dir / "qrels" / "cloud.tsv"


def test_score_run_files_writes_per_query(run_files, mtrag_dir, tmp_path):
    run, qrels = run_files
    out = tmp_path / "pq.jsonl"
    summary = score_run_files(run, qrels, metrics=("recall", "ndcg_cut"), ks=(1, 3, 5, 10), per_query_out=out)
    assert summary.missing == "zero" and summary.result.n_queries == 188
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 188 and sum(not r["in_run"] for r in rows) == 5
    official = read_per_query_jsonl(mtrag_dir / "official" / "bm25_cloud_lastturn.jsonl.gz")
    mine = read_per_query_jsonl(out)
    for qid, row in official.items():
        assert abs(mine[qid]["ndcg_cut_5"] - row["ndcg_cut_5"]) <= 1e-9
    d = summary.to_dict()
    assert d["n_missing"] == 5 and d["means"]["recall_10"] == pytest.approx(0.28579, abs=5e-6)  # official/aggregate.csv
    assert 'missing="zero"' in d["policy"]
    skip = score_run_files(run, qrels, missing="skip")
    assert skip.result.n_queries == 183


def test_cli_run_mode(app, run_files, tmp_path):
    run, qrels = run_files
    out = tmp_path / "pq.jsonl"
    res = CliRunner().invoke(app, ["evaluate", "--run", str(run), "--qrels", str(qrels), "--per-query", str(out),
                                   "-m", "ndcg_cut", "-m", "recall", "-m", "recip_rank", "-k", "5", "-k", "10"])
    assert res.exit_code == 0, res.output
    assert "nDCG" in res.output and "Recall" in res.output and "no cut" in res.output
    assert "missing=\"zero\"" in res.output.replace("\n", " ") or "missing" in res.output
    assert out.is_file()
    res = CliRunner().invoke(app, ["evaluate", "--run", str(run), "--qrels", str(qrels), "--missing", "skip"])
    assert res.exit_code == 0 and "183 queries" in res.output


@pytest.mark.parametrize("args, message", [
    (["--benchmark", "no-such-bench"], "does not exist"),
    ([], "nothing to evaluate"),
    (["--run", "RUN"], "needs --qrels"),
    (["--run", "nope.trec", "--qrels", "nope.tsv"], "does not exist"),
    (["--run", "RUN", "--qrels", "QRELS", "--missing", "drop"], "--missing"),
    (["--run", "RUN", "--qrels", "QRELS", "--benchmark", "b"], "not both"),
    (["--run", "RUN", "--qrels", "QRELS", "--retriever", "bm25"], "--benchmark mode"),
    (["--run", "RUN", "--qrels", "QRELS", "-m", "map"], "unknown measure"),
])
def test_cli_errors(app, run_files, args, message):
    run, qrels = run_files
    args = [str(run) if a == "RUN" else str(qrels) if a == "QRELS" else a for a in args]
    res = CliRunner().invoke(app, ["evaluate", *args])
    assert isinstance(res.exception, UserError), res.output
    assert message in str(res.exception)


def test_cli_malformed_run_names_file_and_line(app, run_files, tmp_path):
    _, qrels = run_files
    bad = tmp_path / "bad.trec"
    bad.write_text("q Q0 d 1 0.5 tag\nq Q0 e 2 high tag\n")
    res = CliRunner().invoke(app, ["evaluate", "--run", str(bad), "--qrels", str(qrels)])
    assert isinstance(res.exception, UserError)
    assert str(bad) in str(res.exception) and "line 2" in str(res.exception)


def test_cli_path_does_not_import_prefect(run_files):
    run, qrels = run_files
    code = (
        "import sys, typer\n"
        "from typer.testing import CliRunner\n"
        "from flows.cli_eval import register\n"
        "app = typer.Typer()\n"
        "app.callback()(lambda: None)\n"
        "register(app)\n"
        f"r = CliRunner().invoke(app, ['evaluate', '--run', {str(run)!r}, '--qrels', {str(qrels)!r}])\n"
        "assert r.exit_code == 0, r.output\n"
        "assert 'prefect' not in sys.modules, 'prefect was imported'\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
