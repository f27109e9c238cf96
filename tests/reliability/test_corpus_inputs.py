"""Corpus inputs a careless user gives: every unusable part becomes a ``rejected`` row with a reason,
the rest is kept, and counts in = counts out (integrity #7, #9, #12)."""
from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpus.load import LoadConfig, load_corpus


def _jsonl(path, rows):
    import json
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_unreadable_subdirectory_is_a_rejected_row(tmp_path, monkeypatch):
    (tmp_path / "ok").mkdir()
    (tmp_path / "ok" / "a.txt").write_text("A readable document about rivers.", encoding="utf-8")
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "b.txt").write_text("A document nobody can list.", encoding="utf-8")
    real_scandir = os.scandir

    def scandir(path="."):  # tests run as root, where chmod 000 does not stop reading
        if os.fspath(path) == os.fspath(locked):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    docs, rejected = load_corpus(tmp_path)
    assert [d.source for d in docs] == ["ok/a.txt"]
    assert [(r.source, r.reason) for r in rejected] == [("locked", "unreadable")]
    assert "Permission denied" in rejected[0].detail


def test_ids_with_whitespace_are_rejected_at_load(tmp_path):
    f = tmp_path / "c.jsonl"
    _jsonl(f, [{"id": "good-1", "text": "first text"}, {"id": "bad id", "text": "second text"},
               {"id": "tab\tid", "text": "third"}, {"id": "x#1", "text": "fourth"}, {"id": "good-2", "text": "fifth"}])
    docs, rejected = load_corpus(f)
    assert [d.doc_id for d in docs] == ["good-1", "good-2"]
    assert [(r.source.rsplit(":", 1)[1], r.reason) for r in rejected] == [("2", "invalid_id"), ("3", "invalid_id"),
                                                                         ("4", "invalid_id")]
    assert len(docs) + len(rejected) == 5


def test_csv_broken_quote_is_one_rejected_row_not_junk_documents(tmp_path):
    f = tmp_path / "c.csv"
    f.write_text('id,title,text\n'
                 'a,T1,"first document text\n'          # line 2: quote never closed
                 'b,T2,second document text\n'
                 'c,T3,"third, quoted" x\n'             # line 4: junk after the closing quote
                 'd,T4,fourth,extra\n'                  # line 5: an extra field
                 'e,T5\n'                               # line 6: a missing field
                 'f,T6,"sixth\nspans two lines"\n',     # lines 7-8: a valid multi-line field
                 encoding="utf-8")
    docs, rejected = load_corpus(f)
    assert [d.doc_id for d in docs] == ["b", "f"]
    assert docs[1].text == "sixth\nspans two lines"
    assert [(r.source.rsplit(":", 1)[1], r.reason) for r in rejected] == [
        ("2", "malformed"), ("4", "malformed"), ("5", "malformed"), ("6", "malformed")]
    assert "header has 3" in rejected[2].detail


def test_one_corrupt_parquet_file_does_not_abort_the_corpus(tmp_path):
    pq.write_table(pa.table({"id": ["p1", "p2"], "text": ["one", "two"]}), tmp_path / "good.parquet")
    (tmp_path / "bad.parquet").write_bytes(b"PAR1 this is not parquet")
    (tmp_path / "note.txt").write_text("A plain text document.", encoding="utf-8")
    docs, rejected = load_corpus(tmp_path)
    assert sorted(d.doc_id for d in docs if "#row" in d.source) == ["p1", "p2"]
    assert len(docs) == 3
    assert [(r.source, r.reason) for r in rejected] == [("bad.parquet", "unreadable")]


def test_unknown_encoding_is_a_config_error(tmp_path):
    with pytest.raises(ValueError, match="unknown text encoding 'utf-99'"):
        LoadConfig(encoding="utf-99")


def test_unknown_encoding_on_the_cli_is_one_line_exit_2(tmp_path, mtr):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("Some text for a document.", encoding="utf-8")
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'runs_root = "{tmp_path / "runs"}"\n[load]\nencoding = "utf-99"\n', encoding="utf-8")
    res = mtr("curate", tmp_path / "docs", "--config", cfg)
    assert res.exit_code == 2, res.output
    assert "utf-99" in res.err and "Traceback" not in res.output
    assert len(res.err.strip().splitlines()) == 1
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
