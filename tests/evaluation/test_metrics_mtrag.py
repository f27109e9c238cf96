"""MTRAG metric regression: our metrics reproduce the official per-query scores and aggregate
means of every baseline run (including queries that retrieved nothing and so have no line in
the run file), and equal pytrec_eval on the same files."""
from __future__ import annotations

import csv
from pathlib import Path

import pytest
import pytrec_eval

from evaluation.metrics import evaluate
from storage.formats import read_per_query_jsonl, read_trec_qrels, read_trec_run

MTRAG = Path(__file__).resolve().parents[1] / "data" / "mtrag"
RUNS = sorted(p.name[: -len(".trec.gz")] for p in (MTRAG / "trec_runs").glob("*.trec.gz"))
OFFICIAL_MEASURES = ("recall_1", "recall_3", "recall_5", "recall_10",
                     "ndcg_cut_1", "ndcg_cut_3", "ndcg_cut_5", "ndcg_cut_10")


def _aggregate() -> dict[str, dict[str, str]]:
    with open(MTRAG / "official" / "aggregate.csv", encoding="utf-8") as f:
        return {f"{r['retriever']}_{r['domain']}_{r['query_type']}": r for r in csv.DictReader(f)}


def _domain(name: str) -> str:
    return name.split("_")[-2]


def test_fixture_is_complete():
    assert len(RUNS) == 24
    assert set(RUNS) == set(_aggregate())
    for name in RUNS:
        assert (MTRAG / "official" / f"{name}.jsonl.gz").is_file()


@pytest.fixture(scope="module")
def qrels():
    return {d: read_trec_qrels(MTRAG / "qrels" / f"{d}.tsv") for d in ("clapnq", "cloud")}


@pytest.mark.parametrize("name", RUNS)
def test_official_per_query_and_aggregate(name, qrels):
    run = read_trec_run(MTRAG / "trec_runs" / f"{name}.trec.gz")
    official = read_per_query_jsonl(MTRAG / "official" / f"{name}.jsonl.gz")
    q = qrels[_domain(name)]
    res = evaluate(q, run, metrics=OFFICIAL_MEASURES, missing="zero")

    # every official row is scored, including queries absent from the run file
    assert set(res.qids) == set(official)
    empty = {qid for qid, row in official.items() if row["n_retrieved"] == 0}
    assert set(res.missing_qids) == empty
    pq = res.per_query
    for qid, row in official.items():
        for m in OFFICIAL_MEASURES:
            assert abs(pq[qid][m] - row[m]) <= 1e-9, (name, qid, m, pq[qid][m], row[m])

    agg = _aggregate()[name]
    assert int(agg["count"]) == res.n_queries
    means = res.means()
    for m in OFFICIAL_MEASURES:
        assert round(means[m], 5) == pytest.approx(float(agg[m]), abs=1e-12), (name, m)


@pytest.mark.parametrize("name", RUNS)
def test_equals_pytrec_eval(name, qrels):
    run = read_trec_run(MTRAG / "trec_runs" / f"{name}.trec.gz")
    q = qrels[_domain(name)]
    ref = pytrec_eval.RelevanceEvaluator(q, {"recall.1,3,5,10,20", "ndcg_cut.1,3,5,10,20", "P.1,3,5,10,20",
                                             "recip_rank"}).evaluate(run)
    skip = evaluate(q, run, metrics=("recall", "ndcg_cut", "P", "recip_rank"), missing="skip").per_query
    zero = evaluate(q, run, metrics=("recall", "ndcg_cut", "P", "recip_rank"), missing="zero").per_query
    assert set(skip) == set(ref)
    for qid, vals in ref.items():
        for m, v in vals.items():
            assert abs(skip[qid][m] - v) <= 1e-12, (qid, m)
            assert zero[qid][m] == skip[qid][m]
    for qid in set(zero) - set(ref):
        assert all(v == 0.0 for v in zero[qid].values())


def test_tie_rule_matters_on_this_fixture(qrels):
    """Guard that the fixture exercises ties: ascending doc-id tie-breaking would disagree."""
    name = "bm25_cloud_lastturn"
    run = read_trec_run(MTRAG / "trec_runs" / f"{name}.trec.gz")
    official = read_per_query_jsonl(MTRAG / "official" / f"{name}.jsonl.gz")
    # negate doc order among ties by mapping ids to reversed-order surrogates
    flipped = {qid: {"".join(chr(0x10FFFF - ord(c)) for c in d): s for d, s in docs.items()}
               for qid, docs in run.items()}
    q = {qid: {"".join(chr(0x10FFFF - ord(c)) for c in d): g for d, g in docs.items()}
         for qid, docs in qrels["cloud"].items()}
    pq = evaluate(q, flipped, metrics=("ndcg_cut",), ks=(1, 3, 5, 10)).per_query
    diffs = sum(abs(pq[qid][f"ndcg_cut_{k}"] - official[qid][f"ndcg_cut_{k}"]) > 1e-9
                for qid in official for k in (1, 3, 5, 10))
    assert diffs > 0
