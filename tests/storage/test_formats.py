from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from storage.formats import (FormatError, JudgedContext, Query, iter_lines, read_beir, read_beir_qrels,
                             read_mtrag_conversations, read_mtrag_corpus, read_mtrag_domain,
                             read_mtrag_queries, read_per_query_jsonl, read_qrels, read_trec_qrels,
                             read_trec_run, trec_order, write_per_query_jsonl, write_trec_qrels,
                             write_trec_run)
from storage.store import StoreError

MTRAG = Path(__file__).resolve().parents[1] / "data" / "mtrag"


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# -- TREC runs ------------------------------------------------------------------------
def test_read_trec_run_ignores_rank_and_keeps_scores(tmp_path):
    p = write(tmp_path / "r.trec", "q1 Q0 d1 2 0.5 tag\nq1 Q0 d2 1 0.25 tag\n\nq2\tQ0\td9  1  -3e-2 tag\n")
    assert read_trec_run(p) == {"q1": {"d1": 0.5, "d2": 0.25}, "q2": {"d9": -0.03}}


def test_read_trec_run_gz(tmp_path):
    p = tmp_path / "r.trec.gz"
    with gzip.open(p, "wt", encoding="utf-8") as f:
        f.write("q Q0 d 1 1.0 t\n")
    assert read_trec_run(p) == {"q": {"d": 1.0}}


@pytest.mark.parametrize("text, line, reason", [
    ("q Q0 d 1 1.0 t\nq Q0 e 2 1.0\n", 2, "expected 6 columns"),
    ("q Q0 d 1 1.0 t\n\nq Q0 e x 1.0 t\n", 3, "rank 'x'"),
    ("q Q0 d 1 high t\n", 1, "score 'high' is not a number"),
    ("q Q0 d 1 nan t\n", 1, "NaN"),
    ("q Q0 d 1 1.0 t\nq Q0 d 2 0.5 t\n", 2, "listed twice for query 'q' (first on line 1)"),
])
def test_read_trec_run_errors_name_file_and_line(tmp_path, text, line, reason):
    p = write(tmp_path / "bad.trec", text)
    with pytest.raises(FormatError) as exc:
        read_trec_run(p)
    assert exc.value.line == line and exc.value.path == str(p)
    assert f"{p}, line {line}: " in str(exc.value) and reason in str(exc.value)
    assert isinstance(exc.value, StoreError) and isinstance(exc.value, ValueError)


def test_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_trec_run(tmp_path / "nope.trec")


def test_non_utf8_line_is_reported(tmp_path):
    p = tmp_path / "r.trec"
    p.write_bytes(b"q Q0 d 1 1.0 t\nq Q0 \xff 2 1.0 t\n")
    with pytest.raises(FormatError, match="line 2: not UTF-8"):
        read_trec_run(p)


def test_corrupt_gzip_is_reported(tmp_path):
    p = tmp_path / "r.trec.gz"
    p.write_bytes(b"not gzip at all")
    with pytest.raises(FormatError, match="gzip"):
        read_trec_run(p)


def test_write_trec_run_orders_like_trec_eval_and_round_trips(tmp_path):
    run = {"q1": {"a": 1.0, "b": 1.0, "c": 0.1 + 0.2}, "q2": {}, "q3": {"z": -1.0}}
    p = write_trec_run(run, tmp_path / "out" / "run.trec", tag="mine")
    lines = p.read_text().splitlines()
    assert lines[0] == "q1 Q0 b 1 1.0 mine" and lines[1] == "q1 Q0 a 2 1.0 mine"
    assert lines[2] == f"q1 Q0 c 3 {0.1 + 0.2!r} mine"
    assert read_trec_run(p) == {"q1": run["q1"], "q3": run["q3"]}  # empty lists cannot be written
    assert read_trec_run(write_trec_run(run, tmp_path / "top1.trec.gz", depth=1)) == {"q1": {"b": 1.0},
                                                                                       "q3": {"z": -1.0}}
    assert trec_order({"a": 1.0, "b": 1.0}) == [("b", 1.0), ("a", 1.0)]
    with pytest.raises(ValueError, match="whitespace"):
        write_trec_run({"q 1": {"a": 1.0}}, tmp_path / "x.trec")
    with pytest.raises(ValueError, match="whitespace"):
        write_trec_run({"q": {"a": 1.0}}, tmp_path / "x.trec", tag="my tag")
    assert not (tmp_path / "x.trec").exists()


# -- qrels ----------------------------------------------------------------------------
def test_read_trec_qrels_tab_and_space(tmp_path):
    p = write(tmp_path / "q.tsv", "q1\t0\td1\t1\n# comment\nq1 0 d2 2\nq2 Q0 d3 0\nq2 0 d3 0\n")
    assert read_trec_qrels(p) == {"q1": {"d1": 1, "d2": 2}, "q2": {"d3": 0}}


@pytest.mark.parametrize("text, line, reason", [
    ("q 0 d 1\nq 0 e\n", 2, "expected 4 columns"),
    ("q 0 d yes\n", 1, "grade 'yes' is not an integer"),
    ("q 0 d 1.5\n", 1, "not an integer"),
    ("q 0 d 1\nq 0 d 2\n", 2, "different grades (first on line 1)"),
])
def test_read_trec_qrels_errors(tmp_path, text, line, reason):
    p = write(tmp_path / "bad.tsv", text)
    with pytest.raises(FormatError) as exc:
        read_trec_qrels(p)
    assert exc.value.line == line and reason in str(exc.value) and str(p) in str(exc.value)


def test_read_qrels_detects_layout(tmp_path):
    trec = write(tmp_path / "t.tsv", "q 0 d 1\n")
    beir = write(tmp_path / "b.tsv", "query-id\tcorpus-id\tscore\nq\td\t2\n")
    beir_no_header = write(tmp_path / "b2.tsv", "q\td\t1\n")
    assert read_qrels(trec) == {"q": {"d": 1}}
    assert read_qrels(beir) == {"q": {"d": 2}}
    assert read_qrels(beir_no_header) == {"q": {"d": 1}}
    with pytest.raises(FormatError, match="empty"):
        read_qrels(write(tmp_path / "e.tsv", "\n"))
    with pytest.raises(FormatError, match="line 1"):
        read_qrels(write(tmp_path / "x.tsv", "a b\n"))
    with pytest.raises(FormatError, match="line 3: expected 3 columns"):
        read_beir_qrels(write(tmp_path / "y.tsv", "query-id\tcorpus-id\tscore\nq\td\t1\nq\td\n"))


def test_write_trec_qrels_round_trip(tmp_path):
    qrels = {"q1": {"a": 1, "b": 0}, "q2": {"c": 3}}
    assert read_trec_qrels(write_trec_qrels(qrels, tmp_path / "q.tsv")) == qrels


# -- BEIR -----------------------------------------------------------------------------
def make_beir(root: Path) -> Path:
    (root / "qrels").mkdir(parents=True)
    write(root / "corpus.jsonl", json.dumps({"_id": "d1", "title": "T", "text": "one"}) + "\n"
          + json.dumps({"_id": 2, "text": "two"}) + "\n")
    write(root / "queries.jsonl", json.dumps({"_id": "q1", "text": "what", "metadata": {}}) + "\n")
    write(root / "qrels" / "test.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    return root


def test_read_beir(tmp_path):
    ds = read_beir(make_beir(tmp_path / "beir"))
    assert ds.corpus["d1"].title == "T" and ds.corpus["2"].text == "two" and ds.corpus["2"].title == ""
    assert ds.corpus["d1"].source.endswith("corpus.jsonl:1")
    assert ds.queries == {"q1": Query("q1", "what")}
    assert ds.qrels == {"q1": {"d1": 1}} and ds.split == "test"
    with pytest.raises(FileNotFoundError, match="qrels/dev.tsv"):
        read_beir(tmp_path / "beir", split="dev")


def test_read_beir_malformed_lines(tmp_path):
    root = make_beir(tmp_path / "beir")
    with open(root / "corpus.jsonl", "a", encoding="utf-8") as f:
        f.write('{"_id": "d3", "text": \n')
    with pytest.raises(FormatError, match=r"corpus.jsonl, line 3: invalid JSON"):
        read_beir(root)
    write(root / "corpus.jsonl", json.dumps({"_id": "d1"}) + "\n")
    with pytest.raises(FormatError, match="line 1: missing field 'text'"):
        read_beir(root)
    write(root / "corpus.jsonl", json.dumps({"_id": "d1", "text": 5}) + "\n")
    with pytest.raises(FormatError, match="field 'text' must be str, got int"):
        read_beir(root)
    write(root / "corpus.jsonl", "[1, 2]\n")
    with pytest.raises(FormatError, match="expected a JSON object"):
        read_beir(root)


# -- MTRAG ----------------------------------------------------------------------------
def test_read_mtrag_fixture_counts():
    clapnq = read_mtrag_domain(MTRAG, "clapnq")
    assert len(clapnq.corpus) == 6315
    assert {qt: len(q) for qt, q in clapnq.queries.items()} == {"lastturn": 208, "questions": 208, "rewrite": 208}
    assert len(clapnq.qrels) == 208 and sum(len(d) for d in clapnq.qrels.values()) == 578
    assert len(clapnq.conversations) == 224
    cloud = read_mtrag_domain(MTRAG, "cloud", query_types=("rewrite",), with_conversations=False)
    assert len(cloud.corpus) == 6430 and list(cloud.queries) == ["rewrite"] and cloud.conversations == []
    assert len(cloud.qrels) == 188 and sum(len(d) for d in cloud.qrels.values()) == 494
    with pytest.raises(FileNotFoundError, match="queries/cloud_nope.jsonl"):
        read_mtrag_domain(MTRAG, "cloud", query_types=("nope",), with_conversations=False)


def test_read_mtrag_records():
    q = read_mtrag_queries(MTRAG / "queries" / "cloud_lastturn.jsonl.gz")[0]
    assert q.qid == "d5b1e735a040853ed361a3dfde1b8ef0<::>1"
    assert q.text == "does IBM offer document databases?"
    assert q.original_text == "|user|: does IBM offer document databases?"
    turns = read_mtrag_conversations(MTRAG / "conversations" / "cloud.jsonl.gz")
    t = turns[0]
    assert t.task_id == q.qid and t.conversation_id == "d5b1e735a040853ed361a3dfde1b8ef0" and t.turn == 1
    assert t.history[-1].role == "user" and t.answerability == "ANSWERABLE" and t.in_qrels
    assert isinstance(t.judged_contexts[0], JudgedContext) and t.judged_contexts[0].label == "yes"
    assert isinstance(t.question_type, tuple)
    clapnq = read_mtrag_conversations(MTRAG / "conversations" / "clapnq.jsonl.gz")
    assert any(c.label is None for turn in clapnq for c in turn.judged_contexts)
    corpus = read_mtrag_corpus(MTRAG / "corpus" / "cloud.jsonl.gz")
    assert corpus["ibmcld_00004-0-0"].title == ""


def test_read_mtrag_malformed(tmp_path):
    p = write(tmp_path / "q.jsonl", json.dumps({"qid": "c<::>1", "text": "a"}) + "\n"
              + json.dumps({"qid": "c<::>2"}) + "\n")
    with pytest.raises(FormatError, match=r"q.jsonl, line 2: missing field 'text'"):
        read_mtrag_queries(p)
    p = write(tmp_path / "dup.jsonl", json.dumps({"qid": "c", "text": "a"}) + "\n"
              + json.dumps({"qid": "c", "text": "b"}) + "\n")
    with pytest.raises(FormatError, match="line 2: duplicate query id"):
        read_mtrag_queries(p)
    with gzip.open(MTRAG / "conversations" / "cloud.jsonl.gz", "rt", encoding="utf-8") as f:
        rec = json.loads(f.readline())
    rec["history"][0]["role"] = "bot"
    p = write(tmp_path / "conv.jsonl", json.dumps(rec) + "\n")
    with pytest.raises(FormatError, match="line 1: history\\[0\\].role"):
        read_mtrag_conversations(p)
    rec["history"][0]["role"] = "user"
    rec["turn"] = "1"
    write(p, "\n" + json.dumps(rec) + "\n")
    with pytest.raises(FormatError, match="line 2: field 'turn' must be int"):
        read_mtrag_conversations(p)


# -- per-query JSON lines ---------------------------------------------------------------
def test_per_query_jsonl_round_trip(tmp_path):
    import numpy as np
    pq = {"q1": {"recall_5": np.float64(0.5), "in_run": True}, "q2": {"recall_5": 0.0, "in_run": False}}
    p = write_per_query_jsonl(pq, tmp_path / "pq.jsonl.gz")
    assert read_per_query_jsonl(p) == {"q1": {"recall_5": 0.5}, "q2": {"recall_5": 0.0}}
    assert [n for n, _ in iter_lines(p)] == [1, 2]
