"""Step 4: the near-duplicate floor on hand-countable shingles."""
import math

from corpus.dedup import exact_jaccard
from evaluation.abstention.contexts import Context
from evaluation.abstention.near_duplicates import ShingleIndex, near_dup_floor, near_duplicates

TEXTS = {"q1": "abcd", "copy": "abce", "far": "wxyz", "q2": "hello world", "same": "Hello   World"}
# 3-grams: q1 {abc, bcd}, copy {abc, bce} -> Jaccard 1/3; "same" normalises to "hello world" -> 1.0


def test_jaccard_matches_corpus_dedup():
    idx = ShingleIndex(TEXTS, n=3)
    assert idx.similarity("q1", "copy") == exact_jaccard("abcd", "abce", 3) == 1 / 3
    assert idx.similarity("q2", "same") == 1.0
    assert idx.similarity("q1", "far") == 0.0


def test_near_duplicates_and_floor():
    idx = ShingleIndex(TEXTS, n=3)
    dups = near_duplicates(["far", "copy", "q1"], ["q1"], idx, threshold=0.3)
    assert [(d.doc_id, d.qrels_doc, round(d.jaccard, 4)) for d in dups] == [("copy", "q1", 0.3333)]
    assert near_duplicates(["copy"], ["q1"], idx, threshold=0.5) == []
    cs = [Context("r", "t1", "c", 1, ("far", "copy"), (2.0, 1.0), frozenset({"q1"})),   # explained
          Context("r", "t2", "c", 2, ("far",), (1.0,), frozenset({"q1"})),              # not explained
          Context("r", "t3", "c", 3, ("same", "far"), (1.0, 0.5), frozenset({"q2"})),   # explained (1.0)
          Context("r", "t4", "c", 4, ("q1", "copy"), (1.0, 0.5), frozenset({"q1"})),    # rule-answerable
          Context("s", "t1", "c", 1, ("q1",), (1.0,), frozenset({"q1"}))]
    floors = near_dup_floor(cs, idx, threshold=0.3)
    assert (floors["r"].rule_unanswerable, floors["r"].explained) == (3, 2)
    assert floors["r"].floor == 2 / 3
    assert {(s, d.doc_id) for s, d in floors["r"].pairs} == {("t1", "copy"), ("t3", "same")}
    assert floors["s"].rule_unanswerable == 0 and math.isnan(floors["s"].floor)
