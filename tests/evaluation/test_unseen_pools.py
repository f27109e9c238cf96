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
