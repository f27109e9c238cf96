"""The benchmark loader registry (storage/benchmark/registry.py) and the loaders it dispatches to,
on tiny hand-written fixtures (the audit-side tests of the ChatRAG/CORAL/TopiOCQA adapters
live in tests/evaluation/audit/test_adapters.py)."""
from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from storage.benchmark import FORMATS, LOADERS, iter_formats, load_benchmark, load_benchmarks
from storage.benchmark.model import speaker_role, text_doc_id
from storage.formats import FormatError
from storage.formats.io import pick_split_file, read_json_rows
from storage.records import hash_doc_id
from storage.store import StoreError

MTRAG = Path(__file__).resolve().parents[1] / "data" / "mtrag"


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _beir(folder: Path) -> Path:
    _jsonl(folder / "corpus.jsonl", [{"_id": "d1", "title": "T1", "text": "alpha"},
                                     {"_id": "d2", "text": "beta"}])
    _jsonl(folder / "queries.jsonl", [{"_id": "c1:1", "text": "first?"}, {"_id": "c1:2", "text": "second?"},
                                      {"_id": "solo", "text": "alone?"}])
    (folder / "qrels").mkdir()
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nc1:1\td1\t1\nc1:2\td2\t2\n")
    _jsonl(folder / "conversations.jsonl", [{"_id": "c1:2", "history": [{"role": "user", "text": "first?"},
                                                                        {"role": "agent", "text": "alpha."}],
                                             "answer": "beta."}])
    return folder


def test_formats_are_declared_once_and_every_one_has_a_loader():
    assert FORMATS == ("ours", "mtrag", "beir", "chatrag", "coral", "topiocqa")
    assert tuple(iter_formats()) == FORMATS and tuple(LOADERS) == FORMATS


def test_registry_dispatches_beir_with_conversations(tmp_path):
    b = load_benchmark(_beir(tmp_path / "mini"), "beir")
    assert (b.name, b.format, sorted(b.corpus)) == ("mini", "beir", ["d1", "d2"])
    t1, t2, solo = b.turns
    assert (t1.conv_id, t1.turn, t1.history, t1.gold) == ("c1", 1, (), {"d1": 1})
    assert t2.history == (("user", "first?"), ("assistant", "alpha.")) and t2.reference_answer == "beta."
    assert t2.gold == {"d2": 2} and t2.messages()[-1] == {"role": "user", "text": "second?"}
    # a query id without ":<turn>" is a one-turn conversation; no qrels = unanswerable
    assert (solo.conv_id, solo.turn, solo.answerability) == ("solo", 1, "UNANSWERABLE")
    assert b.qrels == {"c1:1": {"d1": 1}, "c1:2": {"d2": 2}}
    assert [t.sample_id for t in b.conversations()["c1"]] == ["c1:1", "c1:2"]


def test_registry_passes_domain_and_split_where_they_apply(tmp_path):
    b = load_benchmark(MTRAG, "mtrag", domain="clapnq")
    assert b.name == "mtrag-clapnq" and b.format == "mtrag" and len(b.turns) == 224
    d = tmp_path / "rows"
    _jsonl(d / "dev.jsonl", [{"messages": [{"role": "user", "content": "Q?"}], "answers": ["A."],
                              "ctxs": [{"ctx": "passage one"}], "ground_truth_ctx": {"ctx": "passage  one"}}])
    _jsonl(d / "test.jsonl", [{"messages": [{"role": "user", "content": "other?"}]}])
    b = load_benchmark(d, "chatrag", domain="qrecc", split="dev")     # chatrag: the domain is its name
    assert b.name == "qrecc" and [t.question for t in b.turns] == ["Q?"]
    assert b.turns[0].gold == {hash_doc_id("passage one"): 1}         # whitespace-normalised text id


def test_registry_errors_are_store_errors(tmp_path):
    with pytest.raises(StoreError, match="does not exist"):
        load_benchmark(tmp_path / "missing", "beir")
    with pytest.raises(StoreError, match="unknown benchmark format 'squad'; use ours, mtrag, beir, chatrag, coral, "
                                         "topiocqa"):
        load_benchmark(tmp_path, "squad")
    with pytest.raises(StoreError, match="the mtrag format needs a domain"):
        load_benchmark(MTRAG, "mtrag")


def test_load_benchmarks_keeps_names_distinct_and_reports_unreadable_inputs(tmp_path):
    rows = [{"messages": [{"role": "user", "content": "Q?"}], "ctxs": ["p"]}]
    a, b = _jsonl(tmp_path / "a" / "rows.jsonl", rows), _jsonl(tmp_path / "b" / "rows.jsonl", rows)
    spec = {"format": "chatrag", "domain": None, "split": "test"}
    out = load_benchmarks([{**spec, "path": str(a)}, {**spec, "path": str(b)}, {**spec, "path": str(a)}])
    assert [x.name for x in out] == ["rows-1", "rows-2", "rows-3"]
    assert [x.name for x in load_benchmarks([{**spec, "path": str(a)}])] == ["rows"]
    (tmp_path / "empty").mkdir()
    with pytest.raises(StoreError, match=r"empty has none of qrels/test.tsv$"):   # a FileNotFoundError inside
        load_benchmarks([{"path": str(tmp_path / "empty"), "format": "beir", "domain": None, "split": "test"}])
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"messages": []}\n')
    with pytest.raises(FormatError, match=r"bad.jsonl, line 1: row 0: 'messages' must be a non-empty list"):
        load_benchmarks([{**spec, "path": str(bad)}])


def test_ours_loader_needs_a_synthesized_run(tmp_path):
    (tmp_path / "run").mkdir()
    with pytest.raises(StoreError, match="is not a synthesized benchmark: no 'chunks' table"):
        load_benchmark(tmp_path / "run", "ours")


def test_read_json_rows_array_lines_and_gzip(tmp_path):
    arr = tmp_path / "a.json"
    arr.write_text('\ufeff[{"x": 1}, {"x": 2}]', encoding="utf-8")
    assert read_json_rows(arr) == [(None, {"x": 1}), (None, {"x": 2})]
    gz = tmp_path / "l.jsonl.gz"
    with gzip.open(gz, "wt", encoding="utf-8") as f:
        f.write('{"x": 1}\n\n{"x": 3}\n')
    assert read_json_rows(gz) == [(1, {"x": 1}), (3, {"x": 3})]
    gz_arr = tmp_path / "a.json.gz"
    with gzip.open(gz_arr, "wt", encoding="utf-8") as f:
        f.write('[{"y": 0}]')
    assert read_json_rows(gz_arr) == [(None, {"y": 0})]
    arr.write_text('[{"x": 1}, 2]')
    with pytest.raises(FormatError, match="expected a JSON array of objects"):
        read_json_rows(arr)


def test_pick_split_file(tmp_path):
    (tmp_path / "dev.json").write_text("[]")
    assert pick_split_file(tmp_path, "dev", "rows", ("{split}.jsonl", "{split}.json")) == tmp_path / "dev.json"
    assert pick_split_file(tmp_path, "test", "rows", ("{split}.jsonl",)) == tmp_path / "dev.json"   # the only one
    (tmp_path / "train.jsonl").write_text("")
    with pytest.raises(StoreError, match=r"cannot tell which file holds the rows \(looked for test.jsonl\)"):
        pick_split_file(tmp_path, "test", "rows", ("{split}.jsonl",))


def test_shared_text_helpers():
    assert [speaker_role(r) for r in ("agent", "assistant", "system_response", "user", "human")] == \
        ["assistant", "assistant", "assistant", "user", "user"]
    assert text_doc_id("  a \n b ") == hash_doc_id("a b")
