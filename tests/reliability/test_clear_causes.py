"""Messages that name the real cause (issue: honest outputs #7): a corpus whose every chunk is
below ``chunk.min_size`` says so (not 'run `mtr cluster` first'); a directory given as a file
says it is a directory; an id that shows nothing (zero-width spaces) is refused."""
from __future__ import annotations

import json
from pathlib import Path

from corpus.load import load_corpus

ROOT = Path(__file__).resolve().parents[2]
WIKI = ROOT / "examples" / "wiki"


def test_one_line_documents_say_every_chunk_is_below_min_size(mtr, tmp_path, prefect_harness):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    lines = ["The Nile flows north through eleven countries.", "Mount Everest grew by a few centimetres.",
             "Honey found in tombs was still edible.", "Octopuses have three hearts and blue blood."]
    for i, line in enumerate(lines):
        (corpus / f"d{i}.txt").write_text(line + "\n")
    res = mtr("build", corpus, "--run", tmp_path / "runs" / "short")
    assert res.exit_code == 2, res.output
    err = [line for line in res.err.splitlines() if line.startswith("error:")]
    assert len(err) == 1, res.err
    assert "every chunk of the 4 documents is shorter than chunk.min_size=1024" in err[0]
    assert "--min-size" in err[0] and "mtr cluster" not in err[0]


def test_a_directory_given_as_the_llm_config_is_called_a_directory(mtr, tmp_path):
    for cmd in (("synthesize", "--corpus", WIKI, "--out", tmp_path / "bench"),
                ("audit", "--benchmark", ROOT / "tests" / "data" / "mtrag", "--format", "mtrag",
                 "--out", tmp_path / "audit")):
        res = mtr(*cmd, "--llm-config", tmp_path)
        assert res.exit_code == 2, res.output
        assert res.err.strip() == f"error: LLM config {tmp_path} is a directory, not a file"
    assert not (tmp_path / "bench").exists() and not (tmp_path / "audit").exists()


def test_an_id_that_shows_nothing_is_refused(mtr, tmp_path):
    f = tmp_path / "c.jsonl"
    rows = [{"id": "good", "text": "a visible id"}, {"id": "\u200b", "text": "a zero-width space id"},
            {"id": "\u200b\u2060\ufeff", "text": "only format characters"}]
    f.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    docs, rejected = load_corpus(f)
    assert [d.doc_id for d in docs] == ["good"]
    assert [r.reason for r in rejected] == ["invalid_id", "invalid_id"]
    assert all("empty once invisible characters" in r.detail for r in rejected)
    res = mtr("curate", WIKI, "--run", tmp_path / "runs" / "\u200b")
    assert res.exit_code == 2, res.output
    assert len(res.err.strip().splitlines()) == 1
    assert "run id '\\u200b' is empty once invisible characters" in res.err   # shown escaped
    assert not (tmp_path / "runs" / "\u200b").exists()
