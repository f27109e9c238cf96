"""Query mode `rewrite` on a benchmark without rewrites: explicit rewriter (offline or LLM)."""
import json

import pytest
from typer.testing import CliRunner

from agents.config import LLMConfig
from agents.testing.fake_server import FakeLLMServer
from agents.rewrite import QueryRewriter
from agents.testing.fake_roles import fake_llm_config
from evaluation.benchmark_eval import build_mode_queries
from flows.cli import app
from storage.benchmark import load_beir


def _beir(tmp_path):
    d = tmp_path / "beir"
    (d / "qrels").mkdir(parents=True)
    docs = {"d1": "The Berlin Wall was built in 1961 by East Germany.",
            "d2": "Guinea pigs eat hay and fresh vegetables every day.",
            "d3": "The wall fell in November 1989 after mass protests."}
    (d / "corpus.jsonl").write_text("".join(json.dumps({"_id": k, "title": "", "text": v}) + "\n" for k, v in docs.items()))
    (d / "queries.jsonl").write_text(json.dumps({"_id": "c1:2", "text": "when did it fall?"}) + "\n")
    (d / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nc1:2\td3\t1\n")
    (d / "conversations.jsonl").write_text(json.dumps({"_id": "c1:2", "history": [
        {"role": "user", "text": "When was the Berlin Wall built?"}, {"role": "assistant", "text": "In 1961."}]}) + "\n")
    return d


def test_offline_rewriter_rule():
    r = QueryRewriter().run_offline({"turns": [{"role": "user", "text": "When was the Berlin Wall built?"},
                                               {"role": "assistant", "text": "1961."},
                                               {"role": "user", "text": "Why did they build it?"}]})
    assert r.text == "Why did they build it? (berlin wall built)"
    same = QueryRewriter().run_offline({"turns": [{"role": "user", "text": "Tell me about the Berlin Wall history"}]})
    assert same.text == "Tell me about the Berlin Wall history"


def test_rewrite_mode_needs_an_explicit_rewriter(tmp_path):
    bench = load_beir(_beir(tmp_path))
    with pytest.raises(ValueError, match="--rewriter"):
        build_mode_queries(bench, "rewrite", "bm25")
    notes = {}
    q = build_mode_queries(bench, "rewrite", "bm25", LLMConfig(backend="offline"), notes)
    assert q == {"c1:2": "when did it fall? (berlin wall built)"}
    assert "offline backend" in notes["rewrite"]


def test_cli_offline_and_llm_rewriter(tmp_path):
    d = _beir(tmp_path)
    r = CliRunner().invoke(app, ["evaluate", "--benchmark", str(d), "--format", "beir", "--retriever", "bm25",
                                 "--query-mode", "rewrite", "--out", str(tmp_path / "o1")])
    assert r.exit_code != 0 and "--rewriter" in str(r.exception)
    r = CliRunner().invoke(app, ["evaluate", "--benchmark", str(d), "--format", "beir", "--retriever", "bm25",
                                 "--query-mode", "rewrite", "--rewriter", "offline", "--out", str(tmp_path / "o2")])
    assert r.exit_code == 0, r.output
    assert "offline backend" in json.loads((tmp_path / "o2" / "query_notes.json").read_text())["rewrite"]
    with FakeLLMServer() as srv:
        notes = {}
        build_mode_queries(load_beir(d), "rewrite", "bm25", fake_llm_config(srv), notes)
        assert srv.count == 1 and "query_rewriter" not in notes["rewrite"] and "openai backend" in notes["rewrite"]
        assert "Last user question: <question>when did it fall?</question>" in srv.requests[0].text
