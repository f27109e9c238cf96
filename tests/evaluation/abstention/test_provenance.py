"""Step 8: provenance classes (priority order) and their shares, on a constructed case."""
import pytest

from evaluation.abstention.near_duplicates import ShingleIndex
from evaluation.abstention.provenance import CLASSES, TurnFacts, class_shares, classify, classify_contexts
from evaluation.abstention.sources import PageIndex, page_position

IDS = ["100_0-50-0-50", "100_50-90-50-90", "100_90-200-90-200", "100_300-400-300-400", "200_0-10-0-10",
       "ibmcld_001-0-100", "ibmcld_001-100-250", "doc#0", "doc#1", "doc#2"]
WORDS = ["alpha beta gamma", "delta epsilon zeta", "eta theta iota", "kappa lambda mu", "nu xi omicron",
         "pi rho sigma", "tau upsilon phi", "chi psi omega", "red green blue", "north south east"]
TEXTS = {d: f"{w} are words number {i} in a test passage" for i, (d, w) in enumerate(zip(IDS, WORDS))}
TEXTS["copy"] = TEXTS["100_0-50-0-50"] + "!"
TEXTS["hn-copy"] = TEXTS["100_0-50-0-50"]


def test_page_positions_and_neighbours():
    assert page_position("100_50-90-50-90") == ("100", (50, 90))
    assert page_position("ibmcld_001-100-250") == ("ibmcld_001", (100, 250))
    assert page_position("doc#2") == ("doc", (2,))
    assert page_position("no-position") is None
    pages = PageIndex(IDS)
    assert pages.neighbours("100_0-50-0-50", "100_50-90-50-90")
    assert not pages.neighbours("100_0-50-0-50", "100_90-200-90-200")           # two places apart
    assert pages.neighbours("100_0-50-0-50", "100_90-200-90-200", window=2)
    assert not pages.neighbours("100_0-50-0-50", "200_0-10-0-10")               # another page
    assert pages.neighbours("doc#0", "doc#1") and pages.neighbours("ibmcld_001-0-100", "ibmcld_001-100-250")
    assert not pages.neighbours("doc#1", "doc#1")


def test_classes_in_priority_order():
    idx = ShingleIndex(TEXTS, n=5)
    pages = PageIndex(IDS + ["copy", "hn-copy"])
    f = TurnFacts(qrels=frozenset({"100_0-50-0-50"}), hard_negatives=frozenset({"hn-copy", "doc#0"}),
                  other_turn_qrels=frozenset({"200_0-10-0-10", "100_50-90-50-90"}))
    c = lambda d: classify(d, f, idx, pages, threshold=0.8)  # noqa: E731
    assert c("hn-copy") == "hard_negative"           # also a verbatim copy: hard negative wins
    assert idx.similarity("copy", "100_0-50-0-50") >= 0.8 and c("copy") == "near_duplicate"
    assert c("100_50-90-50-90") == "other_turn_qrels"   # also a neighbour: other-turn qrels wins
    assert c("200_0-10-0-10") == "other_turn_qrels"
    f2 = TurnFacts(qrels=frozenset({"100_0-50-0-50"}), hard_negatives=frozenset(), other_turn_qrels=frozenset())
    assert classify("100_50-90-50-90", f2, idx, pages, 0.8) == "neighbouring_chunk"
    assert classify("100_300-400-300-400", f2, idx, pages, 0.8) == "other"


def test_shares_over_supporting_and_all_passages():
    idx = ShingleIndex(TEXTS, n=5)
    pages = PageIndex(IDS)
    facts = {"t1": TurnFacts(frozenset({"100_0-50-0-50"}), frozenset({"doc#0"}), frozenset({"200_0-10-0-10"}))}
    items = [("fusion", "t1", ("doc#0", "200_0-10-0-10", "100_50-90-50-90", "doc#2"), ("doc#0", "200_0-10-0-10")),
             ("hybrid", "t1", ("doc#0", "doc#2"), ("doc#0",))]
    rows = classify_contexts(items, facts, idx, pages, threshold=0.8)
    assert [(r.doc_id, r.cls, r.supporting) for r in rows[:4]] == [
        ("doc#0", "hard_negative", True), ("200_0-10-0-10", "other_turn_qrels", True),
        ("100_50-90-50-90", "neighbouring_chunk", False), ("doc#2", "other", False)]
    sup = class_shares(rows, supporting_only=True)
    # supporting: fusion hard_negative + other_turn_qrels, hybrid hard_negative -> all: 2/3 and 1/3
    assert sup["all"]["n"] == 3
    assert sup["all"]["hard_negative"] == pytest.approx(2 / 3)
    assert sup["all"]["other_turn_qrels"] == pytest.approx(1 / 3)
    assert sup["fusion"]["hard_negative"] == 0.5 and sup["hybrid"]["hard_negative"] == 1.0
    allp = class_shares(rows, supporting_only=False)
    # all six passages: hard_negative 2, other_turn 1, neighbour 1, other 2
    assert allp["all"]["n"] == 6
    assert [allp["all"][c] for c in CLASSES] == pytest.approx([2 / 6, 0, 1 / 6, 1 / 6, 2 / 6])
