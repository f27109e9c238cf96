"""Human checks of candidate missing positives: Fleiss' kappa, precision, judge agreement, qrels
supplement (hand-computed values)."""
import csv
import math

import pytest
from typer.testing import CliRunner

from common.errors import UserError
from evaluation.audit import AuditConfig, run_audit
from evaluation.audit.agreement import fleiss_kappa
from evaluation.audit.missing_check import (MissingCheckError, check_missing_positives, load_verdicts,
                                            majority_verdict, parse_verdict)
from flows.cli import app
from storage.benchmark import load_benchmark
from storage.formats.trec import read_trec_qrels
from tests.evaluation.audit.conftest import MTRAG

# Fleiss (1971) as worked on Wikipedia's "Fleiss' kappa": 10 items, 14 raters, 5 categories
FLEISS = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
          [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]


def test_fleiss_kappa_published_and_hand_computed():
    assert fleiss_kappa(FLEISS) == pytest.approx(0.210, abs=5e-4)
    # (3,0) (0,3) (2,1): P_i = 1, 1, 1/3; p = 5/9, 4/9 -> (7/9 - 41/81) / (1 - 41/81) = 22/40
    assert fleiss_kappa([[3, 0], [0, 3], [2, 1]]) == pytest.approx(0.55)
    # (3,0) (1,2) (2,1): mean P_i = 5/9 = P_e -> 0
    assert fleiss_kappa([[3, 0], [1, 2], [2, 1]]) == pytest.approx(0.0)
    assert math.isnan(fleiss_kappa([[2, 0], [2, 0]]))                    # one category only
    with pytest.raises(ValueError):
        fleiss_kappa([[2, 0], [1, 0]])                                     # unequal numbers of ratings


def test_verdict_parsing_and_majority():
    assert [parse_verdict(v) for v in ("Yes", " 1", "relevant", "NO", "0", "Not  relevant", "", "?", None)] == \
        [1, 1, 1, 0, 0, 0, None, None, None]
    with pytest.raises(ValueError):
        parse_verdict("maybe")
    assert (majority_verdict([1, 1, 0]), majority_verdict([1, 0]), majority_verdict([0]), majority_verdict([])) == \
        (1, None, 0, None)


def _cand(sid, doc, flagged):
    return {"benchmark": "b", "sample_id": sid, "source": "retrieved", "candidate_doc": doc, "gold_doc": f"g{sid}",
            "ensemble_flagged": flagged}


CANDS = [_cand("s1", "x", True), _cand("s2", "y", True), _cand("s3", "z", False), _cand("s4", "w", False)]


def _score(judge, sid, chosen, status="ok", pass_="forward"):
    return {"benchmark": "b", "sample_id": sid, "metric": "distinguishability", "status": status, "judge": judge,
            "candidate_source": "retrieved", "chosen_doc": chosen, "pass": pass_}


SCORES = [_score("j1", "s1", "x"), _score("j1", "s2", "gs2"), _score("j1", "s3", "z"), _score("j1", "s4", None, "failed"),
          _score("j2", "s1", "gs1"), _score("j2", "s2", "gs2"), _score("j2", "s2", "y", pass_="reversed"),
          _score("j2", "s3", "gs3"), _score("j2", "s4", "w")]
K = {c["sample_id"]: ("b", c["sample_id"], "retrieved", c["candidate_doc"]) for c in CANDS}
VERDICTS = {"A": {K["s1"]: 1, K["s2"]: 0, K["s3"]: 0, K["s4"]: 1},
            "B": {K["s1"]: 1, K["s2"]: 0, K["s3"]: 1, K["s4"]: 0},
            "C": {K["s1"]: 1, K["s2"]: 0, K["s3"]: 1}}


def test_check_hand_computed():
    res = check_missing_positives(CANDS, SCORES, VERDICTS)
    s = res.summary
    # majorities: s1 1, s2 0, s3 1, s4 tie (1 vs 0)
    assert (s["n_candidates"], s["n_checked"], s["n_decided"], s["n_ties"], s["n_confirmed"]) == (4, 4, 3, 1, 2)
    assert s["precision"] == pytest.approx(2 / 3) and s["precision_flagged"] == pytest.approx(1 / 2)
    # complete items s1..s3: counts (3,0) (0,3) (2,1) -> 0.55 (see above)
    assert s["n_complete"] == 3 and s["fleiss_kappa"] == pytest.approx(0.55)
    # alpha over all: o00 = 3, o11 = 3 + 1, o01 = o10 = 1 (s3) + 1 (s4); n0 = 5, n1 = 6, n = 11
    # alpha = 1 - 10 * 4 / (2 * 5 * 6) = 1/3
    assert s["krippendorff_alpha"] == pytest.approx(1 / 3)
    ann = {a["annotator"]: a for a in res.annotators}
    assert ann["A"]["share_relevant"] == 0.5 and ann["C"]["n_rated"] == 3
    j = {r["rater"]: r for r in res.judges}
    # j1 picked x and z, chose gold on s2, failed on s4: agrees on all 3 decided items
    assert (j["j1"]["n"], j["j1"]["agreement"], j["j1"]["n_picks"], j["j1"]["precision"]) == (3, 1.0, 2, 1.0)
    # j2 picked y (reversed pass) and w, gold on s1/s3: disagrees on all 3; its one decided pick is wrong
    assert (j["j2"]["n"], j["j2"]["agreement"], j["j2"]["n_picks"], j["j2"]["precision"]) == (3, 0.0, 1, 0.0)
    # ensemble = flagged: s1 yes (right), s2 yes (wrong), s3 no (wrong)
    assert j["ensemble"]["agreement"] == pytest.approx(1 / 3) and j["ensemble"]["precision"] == 0.5
    assert res.qrels == {"b": {"s1": {"x": 1}, "s3": {"z": 1}}}
    one = check_missing_positives(CANDS, SCORES, {"A": VERDICTS["A"]})
    assert math.isnan(one.summary["fleiss_kappa"]) and math.isnan(one.summary["krippendorff_alpha"])


def _write(path, header, rows):
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return path


def test_load_verdicts_from_copies(tmp_path):
    a = _write(tmp_path / "ann1.csv", ["benchmark", "sample_id", "source", "candidate_doc", "human_verdict"],
               [["b", "s1", "retrieved", "x", "yes"], ["b", "s2", "retrieved", "y", "No"], ["b", "s3", "retrieved", "z", ""]])
    b = _write(tmp_path / "ann2.csv", ["sample_id", "candidate_doc", "human_verdict", "annotator"],
               [["s1", "x", "1", "kim"], ["s3", "z", "relevant", "kim"], ["s4", "w", "?", "kim"]])
    v = load_verdicts([a, b], CANDS)
    assert v == {"ann1": {K["s1"]: 1, K["s2"]: 0}, "kim": {K["s1"]: 1, K["s3"]: 1}}
    sub = tmp_path / "other"
    sub.mkdir()
    same = _write(sub / "ann1.csv", ["sample_id", "candidate_doc", "human_verdict"], [["s2", "y", "1"]])
    assert load_verdicts([a, same], CANDS)["ann1#2"] == {K["s2"]: 1}
    bad = _write(tmp_path / "bad.csv", ["sample_id", "candidate_doc", "human_verdict"], [["s1", "x", "maybe"]])
    with pytest.raises(MissingCheckError, match="line 2"):
        load_verdicts([bad], CANDS)
    unknown = _write(tmp_path / "u.csv", ["sample_id", "candidate_doc", "human_verdict"], [["s1", "nope", "1"]])
    with pytest.raises(MissingCheckError, match="not a candidate"):
        load_verdicts([unknown], CANDS)
    with pytest.raises(MissingCheckError, match="human_verdict"):
        load_verdicts([_write(tmp_path / "h.csv", ["sample_id", "candidate_doc"], [])], CANDS)
    twice = _write(tmp_path / "t.csv", ["sample_id", "candidate_doc", "human_verdict"], [["s1", "x", "1"], ["s1", "x", "0"]])
    with pytest.raises(MissingCheckError, match="twice"):
        load_verdicts([twice], CANDS)


def test_cli_audit_missing_writes_a_qrels_supplement(tmp_path):
    bench = load_benchmark(MTRAG, "mtrag", domain="clapnq")
    out = tmp_path / "run"
    run_audit(bench, ["overlap", "retrieval"], out=out,
              config=AuditConfig(negatives="bm25", metrics=["distinguishability"], sample=30, n_resamples=100))
    with (out / "missing_positives.csv").open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) >= 3 and all(r["human_verdict"] == "" for r in rows)
    fields = list(rows[0])
    copies = []
    for name, pattern in (("ann1", [1, 1, 0]), ("ann2", [1, 0, 0])):
        filled = [{**r, "human_verdict": ("yes" if pattern[i % 3] else "no")} for i, r in enumerate(rows)]
        p = tmp_path / f"{name}.csv"
        with p.open("w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=fields)
            w.writeheader()
            w.writerows(filled)
        copies.append(p)
    r = CliRunner().invoke(app, ["audit-missing", str(out), *map(str, copies)])
    assert r.exit_code == 0, r.output
    assert "Fleiss" in r.output and "ensemble" in r.output and "qrels supplement" in r.output
    # both say yes on rows 0, 3, 6, ...; row 1 is a tie; rows 2, 5, ... both no
    expected = {}
    for i, row in enumerate(rows):
        if i % 3 == 0:
            expected.setdefault(row["sample_id"], {})[row["candidate_doc"]] = 1
    assert dict(read_trec_qrels(out / "qrels_supplement" / "mtrag-clapnq.qrels")) == expected
    import json
    man = json.loads((out / "manifest.json").read_text())["human_checks"]
    n_dec = len(rows) - sum(1 for i in range(len(rows)) if i % 3 == 1)
    n_yes = sum(1 for i in range(len(rows)) if i % 3 == 0)
    assert man["n_decided"] == n_dec and man["precision"] == pytest.approx(n_yes / n_dec)
    assert man["n_annotators"] == 2 and man["n_complete"] == len(rows)
    # the benchmark's own qrels are untouched
    assert all(d not in bench.by_id()[q].gold for q, docs in expected.items() for d in docs)
    r = CliRunner().invoke(app, ["audit-missing", str(out), str(tmp_path / "nope.csv")])
    assert isinstance(r.exception, UserError) and "does not exist" in str(r.exception)
