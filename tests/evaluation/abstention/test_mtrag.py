"""The whole analysis on real MTRAG data (ClapNQ and Cloud) with the offline stand-ins, on
the BM25-based rungs (bm25-turn, bm25-history, fusion with pseudo-relevance-feedback
expansions). Checks every output against an independent recomputation from the written
tables and the fixture's qrels file, plus anchor values (the bm25-turn nDCG@10 is the
retrieval suite's pinned BM25 last-turn number)."""
from __future__ import annotations

import csv
import hashlib
import json

import pyarrow.parquet as pq
import pytest

from evaluation.abstention import AbstentionConfig, run_abstention
from evaluation.abstention.rule_metrics import rule_metrics
from storage.formats import read_trec_qrels

from tests.evaluation.abstention.helpers import MTRAG

RUNGS = ["bm25-turn", "bm25-history", "fusion"]
BM25_LASTTURN_NDCG10 = {"clapnq": 0.21864442, "cloud": 0.21466447}   # tests/retrieval/test_mtrag.py
# computed once (regression pins): rule-unanswerable contexts per rung (retrieval only, no judge)
PINNED = {
    "clapnq": {"rule_unanswerable": [132, 147, 119]},
    "cloud": {"rule_unanswerable": [129, 143, 120]},
}


@pytest.fixture(scope="module", params=["clapnq", "cloud"])
def analysed(request, tmp_path_factory):
    domain = request.param
    qrels_path = MTRAG / "qrels" / f"{domain}.tsv"
    before = hashlib.sha256(qrels_path.read_bytes()).hexdigest()
    out = tmp_path_factory.mktemp(f"abst-{domain}")
    res = run_abstention(MTRAG, out, AbstentionConfig(retrievers=RUNGS), format="mtrag", domain=domain)
    assert hashlib.sha256(qrels_path.read_bytes()).hexdigest() == before      # never edited
    return domain, res, out


def table(out, name):
    return pq.read_table(out / f"{name}.parquet").to_pylist()


def test_ladder_and_rule_labels(analysed):
    domain, res, out = analysed
    assert [r["retriever"] for r in res.per_retriever] == RUNGS
    assert res.ladder.ndcg["bm25-turn"] == pytest.approx(BM25_LASTTURN_NDCG10[domain], abs=1e-8)
    qrels = read_trec_qrels(MTRAG / "qrels" / f"{domain}.tsv")
    assert res.ladder.n_queries == len(qrels)
    ctx = table(out, "contexts")
    assert len(ctx) == len(RUNGS) * len(qrels)
    for r in ctx:
        assert len(r["doc_ids"]) <= 5
        assert r["rule_unanswerable"] == (not any(d in qrels[r["sample_id"]] for d in r["doc_ids"]))
    counts = [sum(r["rule_unanswerable"] for r in ctx if r["retriever"] == g) for g in RUNGS]
    assert [row["rule_unanswerable"] for row in res.per_retriever] == counts == PINNED[domain]["rule_unanswerable"]


def test_per_retriever_metrics_match_the_stored_labels(analysed):
    _, res, out = analysed
    ctx = {(r["retriever"], r["sample_id"]): r for r in table(out, "contexts")}
    labels = [r for r in table(out, "content_labels") if r["judge"] == res.config.primary_judge]
    assert len(labels) == len(ctx)
    stored = {r["retriever"]: r for r in table(out, "per_retriever")}
    for g in RUNGS:
        mine = [r for r in labels if r["retriever"] == g]
        m = rule_metrics([ctx[(g, r["sample_id"])]["rule_unanswerable"] for r in mine], [r["label"] for r in mine])
        for key in ("rule_unanswerable", "content_unanswerable", "false_miss_yes", "false_miss_yes_partial",
                    "precision", "youden_j", "abstention_rule", "abstention_content"):
            assert stored[g][key] == pytest.approx(getattr(m, key), nan_ok=True), (g, key)
        assert 0.0 <= stored[g]["false_miss_yes"] <= stored[g]["false_miss_yes_partial"] <= 1.0
    aur = table(out, "auroc")
    assert {(a["retriever"], a["detector"], a["labelling"]) for a in aur} == {
        (g, d, lab) for g in RUNGS for d in ("top1", "answer:heuristic-answerer")
        for lab in ("rule", "content:heuristic-support", "content:heuristic-overlap")}
    assert all(0.0 <= a["auroc"] <= 1.0 for a in aur)


def test_agreement_control_provenance_flips(analysed):
    _, res, out = analysed
    ag = table(out, "agreement")
    assert {a["retriever"] for a in ag} == set(RUNGS) | {"all (unique contexts)"}
    assert all(-1.0 <= a["kappa"] <= 1.0 and 0.0 <= a["raw_agreement"] <= 1.0 for a in ag)
    nc = {r["judge"]: r for r in table(out, "negative_control")}
    assert set(nc) == {"heuristic-support", "heuristic-overlap"}
    assert all(r["n"] > 100 and r["yes_rate"] <= r["ceiling"] and not r["unfit"] for r in nc.values())
    prov = table(out, "provenance")
    fm = sum(1 for c in res.contexts if c.gold and c.rule_unanswerable
             and res.judgments["heuristic-support"][c.key].label == "yes")
    assert len({(p["retriever"], p["sample_id"]) for p in prov}) == fm
    comps = table(out, "comparisons")
    per_lab = {}
    for c in comps:
        per_lab.setdefault(c["labelling"], set()).add(c["comparison"])
    assert len(per_lab) == 3 and len({frozenset(v) for v in per_lab.values()}) == 1
    # 3 rungs x 2 detectors (auroc>0.5) + 3 pairs x 2 (between retrievers) + 3 (between detectors)
    # + 3 pairs (abstention accuracy) + 3 (gap) = 21 per labelling
    assert len(per_lab["rule"]) == 21
    assert [(s.labelling_a, s.labelling_b) for s in res.flip_summaries] == [
        ("rule", "content:heuristic-support"), ("content:heuristic-support", "content:heuristic-overlap")]
    assert all(s.n_changed >= s.n_direction for s in res.flip_summaries)


def test_exports_and_demo_notice_everywhere(analysed):
    domain, res, out = analysed
    notice = "DEMONSTRATION: offline stand-ins are in use"
    assert res.offline_demo and res.notes[0].startswith(notice)
    for name in ("summary.md", "report.html", "per_retriever.csv", "review_sample.jsonl", "relabel_suggestions.csv"):
        assert notice in (out / name).read_text(encoding="utf-8"), name
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "data:image/png;base64," in html and "<script" not in html
    assert (out / "ladder.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with (out / "review_sample.csv").open(encoding="utf-8", newline="") as f:
        review = list(csv.DictReader(f))
    assert len(review) == 150 and {r["retriever"] for r in review} == set(RUNGS)
    ctx = {(r["retriever"], r["sample_id"]): r for r in table(out, "contexts")}
    assert all(ctx[(r["retriever"], r["sample_id"])]["rule_unanswerable"] for r in review)
    assert all(r["p1_text"] and r["human_label"] == "" for r in review if r["p1_id"])
    with (out / "review_key.csv").open(encoding="utf-8", newline="") as f:
        key = list(csv.DictReader(f))
    assert [k["review_id"] for k in key] == [r["review_id"] for r in review]
    qrels = read_trec_qrels(MTRAG / "qrels" / f"{domain}.tsv")
    sugg = [json.loads(line) for line in (out / "relabel_suggestions.jsonl").open(encoding="utf-8")]
    assert sugg and all(s["doc_id"] not in qrels.get(s["sample_id"], {}) and s["judges_yes"] for s in sugg)
    assert all(s["hard_negative"] == bool(s["hard_negative_note"]) for s in sugg)
    man = json.loads((out / "manifest.json").read_text())["abstention"]
    assert man["offline_demo"] and man["config"]["retrievers"] == RUNGS
    assert "| bm25-turn |" in res.markdown and "## Negative control" in res.markdown
