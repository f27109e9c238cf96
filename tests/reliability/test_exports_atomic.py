"""Benchmark exports are replaced as a whole or not at all (issue: integrity #9).

A tiny synthesized run is written table by table (two conversations, four turns, five
qrels), so the tests need neither the spine nor the agents.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from storage.exports import EXPORT_MODES, export_benchmark
from storage.schemas import SCHEMAS, table_from_rows
from storage.store import RunStore, StoreError


def _query_texts(mode, messages, rewrites):
    return {sid: f"{mode} query of {sid}" for sid in messages}


def _write(store: RunStore, name: str, rows: list[dict]) -> None:
    store.write_table(name, table_from_rows(rows, SCHEMAS[name]))


@pytest.fixture
def tiny_run(tmp_path) -> RunStore:
    store = RunStore(str(tmp_path / "run")).ensure()
    chunks = [{"chunk_id": f"d{i}#0", "doc_id": f"d{i}", "chunk_index": 0, "title": f"T{i}",
               "text": f"passage {i}", "start_char": 0, "end_char": 9, "content_hash": f"h{i}"} for i in range(4)]
    _write(store, "chunks", chunks)
    _write(store, "conversations", [
        {"conv_id": "c1", "cluster_id": 0, "topic_id": 0, "n_turns": 2, "n_ok": 2, "n_failed": 0, "split": "train",
         "backend": "offline", "seed": 1},
        {"conv_id": "c2", "cluster_id": 0, "topic_id": 0, "n_turns": 2, "n_ok": 2, "n_failed": 0, "split": "test",
         "backend": "offline", "seed": 2}])
    turns = [{"sample_id": f"c{c}:{t}", "conv_id": f"c{c}", "turn": t, "status": "ok", "question": f"q{c}{t}?",
              "standalone_question": f"q{c}{t}?", "answer": f"a{c}{t}", "gold_doc_ids": [f"d{t}#0"],
              "answerability": "ANSWERABLE", "is_switch": False, "cluster_id": 0, "topic_id": 0,
              "backend": "offline", "model": "offline"} for c in (1, 2) for t in (1, 2)]
    _write(store, "turns", turns)
    qrels = [{"sample_id": f"c{c}:{t}", "doc_id": f"d{t}#0", "grade": 1, "provenance": "gold", "reason": None}
             for c in (1, 2) for t in (1, 2)]
    qrels.append({"sample_id": "c1:1", "doc_id": "d3#0", "grade": 1, "provenance": "uniqueness", "reason": "also"})
    _write(store, "qrels", qrels)
    return store


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _siblings(store: RunStore) -> list[str]:
    return sorted(p.name for p in Path(store.path).iterdir() if p.name.startswith(".export"))


def test_export_writes_every_qrel_once(tiny_run):
    exp = export_benchmark(tiny_run, query_texts=_query_texts)
    d = Path(exp["export_dir"])
    assert d == Path(tiny_run.path) / "export"
    for mode in EXPORT_MODES:
        rows = [line.split("\t") for sp in ("train", "test")
                for line in (d / "beir" / mode / "qrels" / f"{sp}.tsv").read_text().splitlines()[1:]]
        assert len(rows) == 5                                    # 5 qrels in, 5 out, per mode
    assert len((d / "qrels.trec").read_text().splitlines()) == 5
    assert _siblings(tiny_run) == []


def test_a_failing_export_leaves_the_previous_export_byte_identical(tiny_run):
    d = Path(export_benchmark(tiny_run, query_texts=_query_texts)["export_dir"])
    before = _snapshot(d)
    _write(tiny_run, "qrels", [{"sample_id": "c1:1", "doc_id": "d0#0", "grade": 1, "provenance": "gold",
                                "reason": None}])   # changed input: a finished export would differ

    def failing(mode, messages, rewrites):
        if mode == EXPORT_MODES[2]:                          # fails after two BEIR folders were written
            raise RuntimeError("disk full")
        return _query_texts(mode, messages, rewrites)

    with pytest.raises(RuntimeError, match="disk full"):
        export_benchmark(tiny_run, query_texts=failing)
    assert _snapshot(d) == before                            # not one file changed, none half-written
    assert _siblings(tiny_run) == []                         # and the staging folder is gone


def test_a_failing_first_export_leaves_no_folder(tiny_run):
    def failing(mode, messages, rewrites):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        export_benchmark(tiny_run, query_texts=failing)
    assert not (Path(tiny_run.path) / "export").exists() and _siblings(tiny_run) == []


def test_an_export_replaces_the_previous_one_as_a_whole(tiny_run):
    d = Path(export_benchmark(tiny_run, query_texts=_query_texts)["export_dir"])
    (d / "stray.txt").write_text("from an older layout")
    export_benchmark(tiny_run, query_texts=_query_texts)
    assert not (d / "stray.txt").exists() and (d / "qrels.trec").exists()


@pytest.mark.parametrize("bad", ["d1#0\tx", "d1 #0", "d1#0\n"])
def test_ids_tsv_cannot_hold_are_refused_before_writing(tiny_run, bad):
    _write(tiny_run, "qrels", [{"sample_id": "c1:1", "doc_id": bad, "grade": 1, "provenance": "gold",
                                "reason": None}])
    with pytest.raises(StoreError, match=r"cannot export: qrels document id .* contains whitespace"):
        export_benchmark(tiny_run, query_texts=_query_texts)
    assert not (Path(tiny_run.path) / "export").exists() and _siblings(tiny_run) == []
