"""Exit codes that tell the truth about the LLM calls (issue: honest outputs #3).

A run whose LLM calls all failed exits 2 with one line naming the cause and the count; a
partial failure exits 0 with a summary line; ``--max-failure-rate`` fails a run above that
share; ``mtr audit`` never calls a turn 'audited' that no judge scored. A dead endpoint is a
closed loopback port; partial failures come from the fake OpenAI server answering HTTP 500
for the turns that mention one question."""
from __future__ import annotations

import json
import re
import shutil
import socket
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from agents.testing.fake_server import FakeLLMServer, Reply

ROOT = Path(__file__).resolve().parents[2]
MTRAG = ROOT / "tests" / "data" / "mtrag"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _llm(tmp_path: Path, base_url: str) -> Path:
    cfg = {"endpoints": {"fake": {"base_url": base_url, "model": "fake-model", "timeout_s": 30}},
           "retry": {"backoff_base_s": 0.002, "backoff_max_s": 0.02}}
    p = tmp_path / f"llm-{len(list(tmp_path.glob('llm-*.yaml')))}.yaml"
    p.write_text(json.dumps(cfg))
    return p


def _audit(mtr, llm: Path, out: Path, *extra):
    return mtr("audit", "-b", MTRAG, "-f", "mtrag", "--domain", "clapnq", "--limit", "6", "--metric", "alignment",
               "--metric", "quality", "--llm-config", llm, "--out", out, *extra)


def _calls(out: Path) -> list[dict]:
    return pq.read_table(out / "llm_calls").to_pylist()


def test_audit_against_a_dead_endpoint_exits_2_naming_the_cause(mtr, tmp_path):
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    out = tmp_path / "audit"
    res = _audit(mtr, _llm(tmp_path, url), out)
    assert res.exit_code == 2, res.output
    n = len(_calls(out))
    assert n > 0
    assert res.err.strip() == f"error: endpoint unreachable: connection refused at {url}; 0 of {n} calls succeeded"
    assert "audited" not in res.out


@pytest.fixture
def flaky():
    """The fake server, answering HTTP 500 to every request that shows the sixth turn's question (the
    last turn of the six audited: no other audited turn has it in its history)."""
    from storage.benchmark import load_benchmark
    sixth = load_benchmark(str(MTRAG), "mtrag", domain="clapnq").turns[5].question
    srv = FakeLLMServer().start()
    srv.on(sixth, *[Reply.status(500, "overloaded")] * 500)
    yield srv
    srv.stop()


def test_audit_partial_failure_exits_0_with_a_summary_and_fails_above_the_rate(mtr, tmp_path, flaky):
    llm = _llm(tmp_path, flaky.base_url)
    out = tmp_path / "audit"
    res = _audit(mtr, llm, out)
    assert res.exit_code == 0, res.output
    calls = _calls(out)
    ok = sum(c["outcome"] == "ok" for c in calls)
    assert 0 < ok < len(calls)
    line = next(x for x in res.out.splitlines() if x.startswith("LLM calls:"))
    assert line == (f"LLM calls: {ok} of {len(calls)} succeeded; {len(calls) - ok} failed "
                    f"({(len(calls) - ok) / len(calls):.0%}): InternalServerError from {flaky.base_url}")
    # 'audited' counts only the turns a judge scored
    scores = pq.read_table(out / "audit_scores.parquet").to_pylist()
    scored = len({r["sample_id"] for r in scores if r["status"] == "ok"})
    unscored = 6 - scored           # of the 6 selected: the failed turn and any turn skipped (no gold)
    assert 0 < scored < 6
    assert re.search(rf"\b{scored} of \d+ turns audited \({unscored} selected turns no judge scored\)",
                     " ".join(res.out.split())), res.out
    report = (out / "report.md").read_text()
    assert f"{scored} audited: scored by a judge" in report
    # the same failures above --max-failure-rate: exit 2, one line
    res = _audit(mtr, llm, tmp_path / "audit-strict", "--max-failure-rate", "0.01")
    assert res.exit_code == 2, res.output
    err = res.err.strip().splitlines()
    assert len(err) == 1 and "LLM calls failed" in err[0] and "above --max-failure-rate 0.01" in err[0], res.err


@pytest.fixture(scope="module")
def spine(tmp_path_factory, shared_emb_cache):
    from tests.spine import build_example_spine
    return build_example_spine(tmp_path_factory.mktemp("exit-spine"), shared_emb_cache)[0]


def test_synthesize_against_a_dead_endpoint_exits_2_naming_the_cause(mtr, spine, tmp_path, shared_emb_cache,
                                                                     prefect_harness):
    run = tmp_path / "bench"
    shutil.copytree(spine, run, ignore=shutil.ignore_patterns("cache"))
    cfg = tmp_path / "mtr.toml"
    cfg.write_text(f'[embed]\ncache_dir = "{shared_emb_cache}"\n[synth]\nuniqueness_retriever = "bm25"\n')
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    res = mtr("synthesize", "--out", run, "-c", cfg, "--llm-config", _llm(tmp_path, url), "--turns", 2,
              "--conversations", 2)
    assert res.exit_code == 2, res.output
    n = len(_calls(run))
    assert n > 0
    errors = [x for x in res.err.splitlines() if x.startswith("error:")]
    assert errors == [f"error: endpoint unreachable: connection refused at {url}; 0 of {n} calls succeeded"]


def test_abstention_against_a_dead_endpoint_exits_2_naming_the_cause(mtr, tmp_path):
    """(The abstention roles keep no failure message per item, so the cause says "connection failed".)"""
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    out = tmp_path / "abstention"
    res = mtr("abstention", "--benchmark", MTRAG, "--format", "mtrag", "--domain", "clapnq", "--llm-config",
              _llm(tmp_path, url), "--judge", "fake", "--retriever", "bm25-turn", "--limit", "2", "--review-n", "2",
              "--out", out)
    assert res.exit_code == 2, res.output
    n = sum(c["backend"] != "offline" for c in _calls(out))      # the offline stand-ins are no endpoint calls
    assert n > 0
    assert res.err.strip().splitlines()[-1] == (f"error: endpoint unreachable: connection failed at {url}; "
                                                f"0 of {n} calls succeeded")
