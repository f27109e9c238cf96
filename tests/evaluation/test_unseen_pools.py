"""benchmarks/unseen_pools.py: passages of about ``WORDS`` words cut at paragraph ends, ids per page, no titles."""
from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path

_SPEC = importlib.util.spec_from_file_location(
    "unseen_pools", Path(__file__).resolve().parents[2] / "benchmarks" / "unseen_pools.py")
up = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(up)


def test_passages_close_at_the_paragraph_that_reaches_the_word_count():
    paras = [" ".join(["w"] * 70), " ".join(["x"] * 60), " ".join(["y"] * 130), "z z z", "tail words"]
    out = up._passages("man-ls", paras, 3)
    # 70 + 60 = 130 >= 120 closes the first passage; 130 alone closes the second; the rest never reaches 120
    assert [d["doc_id"] for d in out] == ["man-ls-0", "man-ls-1"]
    assert out[0]["text"] == paras[0] + "\n" + paras[1] and out[1]["text"] == paras[2]
    assert all(d["title"] == "" for d in out)
    assert len(up._passages("man-ls", paras * 4, 3)) == 3        # at most ``most`` passages per page


def test_readmes_writes_a_gzipped_jsonl_of_passages(tmp_path, monkeypatch):
    site = tmp_path / "lib" / "python3.11" / "site-packages" / "demo-1.0.dist-info"
    site.mkdir(parents=True)
    prose = "\n\n".join(" ".join(["word"] * 40) + f" paragraph {i}." for i in range(8))
    (site / "METADATA").write_text("Metadata-Version: 2.1\nName: demo\n\n" + prose + "\n\n```\ncode\n```\n")
    monkeypatch.setattr(up.sys, "prefix", str(tmp_path))
    dst = tmp_path / "pkg.jsonl.gz"
    assert up.readmes(str(dst)) == 2
    rows = [json.loads(line) for line in gzip.open(dst, "rt")]
    assert [r["doc_id"] for r in rows] == ["pkg-demo-0", "pkg-demo-1"] and "code" not in rows[0]["text"]


def test_info_reads_the_prose_of_each_node_and_leaves_menus_examples_and_headings_out(tmp_path):
    prose = ("The sort command writes the sorted lines of its input files to standard output. It compares whole\n"
             "lines unless keys are given, and it merges files that are already sorted.")
    node = ("\x1f\nFile: demo.info,  Node: Sorting,  Next: Merging,  Up: Top\n\n1.1 Sorting\n===========\n\n"
            + (prose + "\n\n") * 4
            + "* Menu:\n\n* Merging::   Merging sorted files of lines that are already in the right order.\n\n"
            + "     sort -k2 data.txt > sorted.txt\n     uniq sorted.txt | head -n 20 > top.txt\n     wc -l top.txt\n\n"
            + (prose + "\n\n") * 4)
    tags = "\x1f\nTag Table:\nNode: Sorting\x7f120\n\x1f\nEnd Tag Table\n"
    with gzip.open(tmp_path / "demo.info.gz", "wt") as g:
        g.write("This is demo.info, produced by makeinfo.\n" + node + tags)
    dst = tmp_path / "info.jsonl.gz"
    assert up.info(str(dst), str(tmp_path)) == 2            # 8 paragraphs of 30 words: 4 (120 words) close a passage
    rows = [json.loads(line) for line in gzip.open(dst, "rt")]
    assert [r["doc_id"] for r in rows] == ["info-demo-Sorting-0", "info-demo-Sorting-1"]
    text = " ".join(r["text"] for r in rows)
    assert rows[0]["text"].split("\n")[0] == " ".join(prose.split())         # a paragraph's lines joined
    assert "Merging::" not in text and "sort -k2" not in text
    assert "=====" not in text and "Sorting" not in text and rows[0]["text"].startswith("The sort command writes")
