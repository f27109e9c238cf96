"""The human-review export (sampling, blind key file, precision read back from human labels)
and the relabel suggestions (candidates only, ordering, the qrels untouched)."""
import csv

import pytest

from evaluation.abstention.contexts import Context
from evaluation.abstention.judges import Judgment
from evaluation.abstention.relabel import suggestions, write_suggestions
from evaluation.abstention.review import review_precision, sample_for_review, write_review
from storage.benchmark import Benchmark, BenchTurn
from storage.records import Document


def bench():
    corpus = {d: Document(d, "", f"text {d}", d) for d in ("g1", "g2", "a", "b", "c", "hn")}
    turns = [BenchTurn("c:1", "c", 1, "q one", gold={"g1": 1, "hn": 0}, reference_answer="answer one"),
             BenchTurn("c:2", "c", 2, "q two", history=(("user", "q one"), ("assistant", "answer one")),
                       gold={"g2": 1}, reference_answer="answer two")]
    return Benchmark("b", "ours", corpus, turns)


def contexts():
    return [Context("r1", "c:1", "c", 1, ("a", "hn"), (2.0, 1.0), frozenset({"g1"})),
            Context("r2", "c:1", "c", 1, ("hn", "g1"), (2.0, 1.0), frozenset({"g1"})),   # rule-answerable
            Context("r1", "c:2", "c", 2, ("b", "c"), (2.0, 1.0), frozenset({"g2"})),
            Context("r2", "c:2", "c", 2, ("c", "a"), (2.0, 1.0), frozenset({"g2"}))]


def test_review_sample_is_spread_blind_and_scorable(tmp_path):
    cs = contexts()
    sample = sample_for_review(cs, n=10, seed=1)
    assert len(sample) == 3 and all(c.rule_unanswerable for c in sample)
    assert [c.retriever for c in sample[:2]] in (["r1", "r2"], ["r2", "r1"])      # alternating retrievers
    labels = {"A": {c.key: "yes" for c in cs}}
    paths = write_review(sample, bench(), tmp_path, labels, k=2, note="demo")
    rows = list(csv.DictReader(paths["csv"].open(encoding="utf-8")))
    assert [r["p1_text"] for r in rows] == [f"text {c.doc_ids[0]}" for c in sample]
    assert all(r["note"] == "demo" and r["human_label"] == "" and "judge:A" not in r for r in rows)
    key = list(csv.DictReader(paths["key"].open(encoding="utf-8")))
    assert [k["judge:A"] for k in key] == ["yes"] * 3
    # a reviewer fills in labels: yes, no, (blank) -> precision 1/2, false-miss 1/2
    for r, lab in zip(rows, ["yes", "no", ""]):
        r["human_label"] = lab
    with paths["csv"].open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    m = review_precision(paths["csv"])
    assert m.n_judged == 2 and m.precision == pytest.approx(0.5) and m.false_miss_yes == pytest.approx(0.5)
    rows[2]["human_label"] = "maybe"
    with paths["csv"].open("w", encoding="utf-8", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    with pytest.raises(ValueError, match="human_label must be yes, partial or no"):
        review_precision(paths["csv"])


def test_relabel_suggestions(tmp_path):
    b = bench()
    cs = contexts()
    j = {"A": {cs[0].key: Judgment("A", "yes", ("hn", "a")), cs[1].key: Judgment("A", "yes", ("g1", "hn")),
               cs[2].key: Judgment("A", "partial", ("b",)), cs[3].key: Judgment("A", "yes", ("a",))},
         "B": {cs[0].key: Judgment("B", "yes", ("hn",)), cs[1].key: Judgment("B", "no", ()),
               cs[2].key: Judgment("B", "yes", ("b",)), cs[3].key: Judgment("B", "no", ())}}
    hn = {"c:1": {"hn": "qrels grade 0"}}
    rows = suggestions(cs, j, ["A", "B"], hn, classify=lambda s, d: "hard_negative" if d == "hn" else "other",
                       jaccard_to_qrels=lambda s, d: 0.25)
    got = [(s.sample_id, s.doc_id, s.judges_yes, s.judges_partial, s.retrievers, s.best_rank, s.all_judges_yes,
            s.hard_negative) for s in rows]
    assert got == [
        ("c:1", "hn", ["A", "B"], [], ["r1", "r2"], 1, True, True),    # both judges, a hard negative first
        ("c:1", "a", ["A"], [], ["r1"], 1, False, False),               # then by support, then by id
        ("c:2", "a", ["A"], [], ["r2"], 2, False, False),
        ("c:2", "b", ["B"], ["A"], ["r1"], 1, False, False)]
    assert all(s.doc_id not in ("g1", "g2") for s in rows)          # qrels passages are never suggested
    paths = write_suggestions(rows, tmp_path, {d: doc.text for d, doc in b.corpus.items()}, b.by_id(), note="demo")
    out = list(csv.DictReader(paths["csv"].open(encoding="utf-8")))
    assert out[0]["passage"] == "text hn" and out[0]["suggested_grade"] == "1" and out[0]["note"] == "demo"
    assert b.turns[0].gold == {"g1": 1, "hn": 0}                     # the benchmark is not edited
