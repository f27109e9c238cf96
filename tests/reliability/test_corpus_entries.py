"""The corpus loader accounts for every directory entry (issue: honest outputs #5): a document or a
``rejected`` row with its reason, so input entries = documents + rejected. Links are followed once
(a loop ends), dangling links, FIFOs and hidden entries are rejected with a reason (a FIFO is never
opened: reading one would block)."""
from __future__ import annotations

import os

import pytest

from corpus.load import load_corpus


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs and symbolic links")
def test_every_entry_is_a_document_or_a_rejected_row(tmp_path):
    corpus, outside = tmp_path / "corpus", tmp_path / "outside"
    corpus.mkdir()
    outside.mkdir()
    (outside / "c.txt").write_text("A document reached through a linked folder.", encoding="utf-8")
    (corpus / "a.txt").write_text("The first plain document of the corpus.", encoding="utf-8")
    (corpus / "b.md").write_text("# B\n\nThe second plain document.", encoding="utf-8")
    (corpus / "linked").symlink_to(outside, target_is_directory=True)        # followed once
    (corpus / "dangling.txt").symlink_to(tmp_path / "gone.txt")               # broken link
    os.mkfifo(corpus / "pipe.txt")                                            # never opened
    (corpus / ".hidden.txt").write_text("A hidden document.", encoding="utf-8")
    (corpus / ".git").mkdir()                                                 # a hidden folder: one row
    (corpus / ".git" / "notes.txt").write_text("Inside a hidden folder.", encoding="utf-8")
    (corpus / "loop").symlink_to(corpus, target_is_directory=True)            # a link loop
    (corpus / "again.txt").symlink_to(corpus / "a.txt")                       # a second path to a.txt
    docs, rejected = load_corpus(corpus)
    assert [d.source for d in docs] == ["a.txt", "b.md", "linked/c.txt"]
    assert [(r.source, r.reason) for r in rejected] == [
        (".git", "hidden"), (".hidden.txt", "hidden"), ("again.txt", "duplicate_link"),
        ("dangling.txt", "broken_link"), ("loop", "link_loop"), ("pipe.txt", "special_file")]
    assert all(r.detail for r in rejected)
    assert "FIFO" in dict((r.source, r.detail) for r in rejected)["pipe.txt"]
    entries = len(os.listdir(corpus)) - 1 + len(os.listdir(outside))    # 'linked' stands for its one file
    assert len(docs) + len(rejected) == entries == 9


def test_a_link_loop_deeper_down_ends(tmp_path):
    corpus = tmp_path / "corpus"
    (corpus / "a" / "b").mkdir(parents=True)
    (corpus / "a" / "b" / "doc.txt").write_text("A document two folders down.", encoding="utf-8")
    (corpus / "a" / "b" / "up").symlink_to(corpus / "a", target_is_directory=True)
    docs, rejected = load_corpus(corpus)
    assert [d.source for d in docs] == ["a/b/doc.txt"]
    assert [(r.source, r.reason) for r in rejected] == [("a/b/up", "link_loop")]


def test_a_fifo_as_the_corpus_path_is_a_clear_error(tmp_path):
    from corpus.load import CorpusError
    fifo = tmp_path / "corpus"
    os.mkfifo(fifo)
    with pytest.raises(CorpusError, match="neither a regular file nor a directory"):
        load_corpus(fifo)
