import gzip
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpus.load import CorpusError, LoadConfig, html_to_text, load_corpus
from storage.records import hash_doc_id


def test_directory_inputs_and_rejections(tmp_path):
    (tmp_path / "a.txt").write_text("Plain text document.\nSecond line.")
    (tmp_path / "b.md").write_text("# My Title\n\nBody of the markdown file.")
    (tmp_path / "c.html").write_text("<html><head><title>Page T</title><script>var x=1;</script></head>"
                                     "<body><p>First para.</p><p>Second &amp; last.</p></body></html>")
    (tmp_path / "empty.txt").write_text("   \n\n")
    (tmp_path / "bin.txt").write_bytes(b"\x00\x01\x02binary\x00")
    (tmp_path / "latin.txt").write_bytes("caf\xe9".encode("latin-1"))
    (tmp_path / "big.txt").write_text("x" * 200)
    (tmp_path / "img.png").write_bytes(b"\x89PNG")
    (tmp_path / ".hidden.txt").write_text("hidden file: rejected, not read")
    docs, rej = load_corpus(tmp_path, LoadConfig(max_bytes=180))
    by_src = {d.source: d for d in docs}
    assert set(by_src) == {"a.txt", "b.md", "c.html"}
    assert by_src["b.md"].title == "My Title"
    assert by_src["a.txt"].title == "a"
    assert by_src["c.html"].title == "Page T"
    assert by_src["c.html"].text == "First para.\n\nSecond & last."
    assert by_src["a.txt"].doc_id == hash_doc_id("Plain text document.\nSecond line.")
    reasons = {r.source: r.reason for r in rej}
    assert reasons == {"empty.txt": "empty", "bin.txt": "binary", "latin.txt": "undecodable",
                       "big.txt": "oversized", "img.png": "unsupported_type", ".hidden.txt": "hidden"}
    assert all(r.detail for r in rej)


def test_jsonl_fields_malformed_and_duplicate_ids(tmp_path):
    p = tmp_path / "c.jsonl"
    lines = [json.dumps({"pid": "p1", "name": "One", "body": "text one"}),
             "{not json",
             json.dumps({"pid": "p2", "name": "Two"}),
             json.dumps({"pid": "p1", "name": "Dup", "body": "other text"}),
             json.dumps({"name": "NoId", "body": "text without id"}),
             json.dumps({"pid": "p3", "body": ""})]
    p.write_text("\n".join(lines) + "\n")
    docs, rej = load_corpus(p, LoadConfig(id_field="pid", title_field="name", text_field="body"))
    assert [(d.doc_id, d.title) for d in docs] == [("p1", "One"), (hash_doc_id("text without id"), "NoId")]
    got = [(r.source.rsplit(":", 1)[1], r.reason) for r in rej]
    assert got == [("2", "malformed"), ("3", "missing_field"), ("4", "duplicate_id"), ("6", "empty")]


def test_gz_csv_parquet(tmp_path):
    g = tmp_path / "c.jsonl.gz"
    with gzip.open(g, "wt") as f:
        f.write(json.dumps({"doc_id": "d1", "title": "T", "text": "hello world"}) + "\n")
    assert [d.doc_id for d in load_corpus(g)[0]] == ["d1"]
    c = tmp_path / "c.csv"
    c.write_text('id,title,text\n1,A,"multi\nline text"\n2,B,\n')
    docs, rej = load_corpus(c)
    assert [(d.doc_id, d.text) for d in docs] == [("1", "multi\nline text")]
    assert [r.reason for r in rej] == ["empty"]
    pth = tmp_path / "c.parquet"
    pq.write_table(pa.table({"id": ["x", "y"], "text": ["alpha", "beta"]}), pth)
    assert [d.doc_id for d in load_corpus(pth)[0]] == ["x", "y"]


def test_bad_paths(tmp_path):
    with pytest.raises(CorpusError, match="does not exist"):
        load_corpus(tmp_path / "nope")
    (tmp_path / "d").mkdir()
    with pytest.raises(CorpusError, match="no files"):
        load_corpus(tmp_path / "d")
    (tmp_path / "x.docx").write_bytes(b"PK")
    with pytest.raises(CorpusError, match="unsupported"):
        load_corpus(tmp_path / "x.docx")


def test_html_to_text_drops_scripts():
    title, text = html_to_text("<title>X</title><style>p{}</style><div>a<br>b</div><nav>menu</nav>")
    assert title == "X" and text == "a\n\nb"
