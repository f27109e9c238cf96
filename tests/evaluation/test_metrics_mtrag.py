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


def test_ties_are_broken_by_doc_id_descending():
    """trec_eval ranks by score, then doc id descending; neither run order nor ascending ids count.

    q1: a, b, c tie at 0.5 -> ranking c, b, a, d. Gains (linear, as trec_eval): c=2, a=1.
        nDCG@1 = 2/2 = 1 (ascending ids would put a first: 1/2).
        nDCG@3 = (2 + 0 + 1/log2(4)) / (2 + 1/log2(3)) = 2.5 / 2.6309...
    q2: x, y, z tie -> z, y, x; only z relevant: P@1 = 1, RR = 1 (ascending: 0 and 1/3).
    """
    import math
    qrels = {"q1": {"a": 1, "c": 2}, "q2": {"z": 1}}
    run = {"q1": {"a": 0.5, "b": 0.5, "c": 0.5, "d": 0.1}, "q2": {"x": 1.0, "y": 1.0, "z": 1.0}}
    pq = evaluate(qrels, run, metrics=("ndcg_cut", "P", "recip_rank"), ks=(1, 3)).per_query
    assert pq["q1"]["ndcg_cut_1"] == 1.0
    assert pq["q1"]["ndcg_cut_3"] == pytest.approx(2.5 / (2 + 1 / math.log2(3)), abs=1e-12)
    assert pq["q2"]["P_1"] == 1.0 and pq["q2"]["recip_rank"] == 1.0
