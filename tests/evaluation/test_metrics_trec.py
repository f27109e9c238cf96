"""Hand-computed checks of the trec_eval metric semantics, plus a randomised cross-check
against pytrec_eval (pytrec-eval-terrier)."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest
import pytrec_eval

from evaluation.metrics import (DEFAULT_KS, EvalResult, evaluate, expand_measures, measure_label,
                                parse_measure)
from evaluation.ranking import trec_ranking

L2_3 = math.log2(3)


def one(qrels, run, metrics=("recall", "ndcg_cut", "P", "mrr", "recip_rank"), ks=(1, 3, 5), **kw):
    res = evaluate(qrels, run, metrics=metrics, ks=ks, **kw)
    return res.per_query


def test_ties_broken_by_doc_id_descending():
    assert trec_ranking({"a": 1.0, "b": 1.0, "c": 2.0}) == ["c", "b", "a"]
    # string comparison: "doc9" > "doc10"
    assert trec_ranking({"doc10": 0.5, "doc9": 0.5}) == ["doc9", "doc10"]
    pq = one({"q": {"a": 1}}, {"q": {"a": 1.0, "b": 1.0}})["q"]
    assert pq["recall_1"] == 0.0 and pq["P_1"] == 0.0 and pq["ndcg_cut_1"] == 0.0
    assert pq["recall_3"] == 1.0
    assert pq["recip_rank"] == 0.5
    assert pq["ndcg_cut_3"] == pytest.approx(1 / L2_3, abs=1e-15)


def test_ranks_come_from_scores_not_insertion_order():
    pq = one({"q": {"x": 1}}, {"q": {"y": 0.1, "x": 0.9}})["q"]
    assert pq["recall_1"] == 1.0 and pq["recip_rank"] == 1.0


def test_graded_relevance():
    qrels = {"q": {"d1": 2, "d2": 1, "d3": 0}}
    run = {"q": {"d3": 3.0, "d2": 2.0, "d1": 1.0}}
    pq = one(qrels, run)["q"]
    dcg3 = 0 + 1 / L2_3 + 2 / 2.0
    idcg3 = 2 + 1 / L2_3
    assert pq["ndcg_cut_3"] == pytest.approx(dcg3 / idcg3, abs=1e-15)
    assert pq["ndcg_cut_3"] == pytest.approx(0.6199062332840657, abs=1e-12)
    assert pq["ndcg_cut_1"] == 0.0
    assert pq["recall_1"] == 0.0 and pq["recall_3"] == 1.0
    assert pq["P_3"] == pytest.approx(2 / 3) and pq["P_1"] == 0.0
    assert pq["recip_rank"] == 0.5 and pq["recip_rank_1"] == 0.0 and pq["recip_rank_3"] == 0.5


def test_short_list_uses_all_relevant_documents():
    qrels = {"q": {"r1": 1, "r2": 1, "r3": 1}}
    pq = one(qrels, {"q": {"r1": 5.0}})["q"]
    assert pq["recall_5"] == pytest.approx(1 / 3)
    assert pq["P_5"] == pytest.approx(0.2)          # denominator is k, not the list length
    assert pq["ndcg_cut_5"] == pytest.approx(1 / (1 + 1 / L2_3 + 0.5), abs=1e-15)
    assert pq["ndcg_cut_1"] == 1.0


def test_idcg_is_cut_at_k():
    qrels = {"q": {f"r{i}": 1 for i in range(10)}}
    pq = one(qrels, {"q": {"r0": 2.0, "x": 1.0}}, ks=(1, 3))["q"]
    assert pq["ndcg_cut_1"] == 1.0
    assert pq["ndcg_cut_3"] == pytest.approx(1 / (1 + 1 / L2_3 + 0.5))
    assert pq["recall_3"] == pytest.approx(0.1)


def test_mrr_cut_and_uncut():
    qrels = {"q": {"rel": 1}}
    run = {"q": {"a": 9.0, "b": 8.0, "c": 7.0, "rel": 6.0, "e": 5.0}}
    pq = one(qrels, run)["q"]
    assert pq["recip_rank_3"] == 0.0 and pq["recip_rank_5"] == 0.25 and pq["recip_rank"] == 0.25
    # the uncut measure looks past the deepest cutoff computed
    shallow = one(qrels, run, metrics=("recip_rank", "recall"), ks=(1,))["q"]
    assert shallow == {"recip_rank": 0.25, "recall_1": 0.0}
    # ties: the relevant document loses the tie (doc id "rel" < "zz" descending order)
    tied = one({"q": {"rel": 1}}, {"q": {"rel": 1.0, "zz": 1.0, "aa": 1.0}}, metrics=("recip_rank",))["q"]
    assert tied == {"recip_rank": 0.5}


def test_negative_grades_are_not_relevant():
    qrels = {"q": {"neg": -1, "rel": 1}}
    pq = one(qrels, {"q": {"neg": 2.0, "rel": 1.0}})["q"]
    assert pq["recall_1"] == 0.0 and pq["P_1"] == 0.0 and pq["ndcg_cut_1"] == 0.0
    assert pq["ndcg_cut_3"] == pytest.approx(1 / L2_3)


QRELS = {"q1": {"a": 1}, "q2": {"b": 1, "c": 2}, "q3": {"z": 0}}
RUN = {"q1": {"a": 1.0}, "q3": {"z": 1.0}, "extra": {"a": 1.0}}


def test_missing_zero_scores_and_averages_absent_queries():
    res = evaluate(QRELS, RUN, metrics=("recall",), ks=(1,), missing="zero")
    assert res.qids == ("q1", "q2", "q3")
    assert res.per_query["q2"] == {"recall_1": 0.0}
    assert res.missing_qids == ("q2",)
    assert res.means()["recall_1"] == pytest.approx(1 / 3)
    assert res.n_run_only == 1
    assert 'missing="zero"' in res.policy_note() and "1 missing" in res.policy_note()


def test_missing_skip_leaves_absent_queries_out():
    res = evaluate(QRELS, RUN, metrics=("recall",), ks=(1,), missing="skip")
    assert res.qids == ("q1", "q3")
    assert res.means()["recall_1"] == pytest.approx(0.5)
    assert 'missing="skip"' in res.policy_note()


def test_queries_without_relevant_documents():
    scored = evaluate(QRELS, RUN, metrics=("recall", "ndcg_cut"), ks=(1,))
    assert scored.no_relevant_qids == ("q3",)
    assert scored.per_query["q3"] == {"recall_1": 0.0, "ndcg_cut_1": 0.0}
    assert "without relevant documents were scored" in scored.policy_note()
    skipped = evaluate(QRELS, RUN, metrics=("recall",), ks=(1,), no_relevant="skip")
    assert skipped.qids == ("q1", "q2")


def test_matches_pytrec_eval_on_missing_and_no_relevant_queries():
    ev = pytrec_eval.RelevanceEvaluator(QRELS, {"recall.1", "ndcg_cut.1"})
    ref = ev.evaluate(RUN)
    mine = evaluate(QRELS, RUN, metrics=("recall", "ndcg_cut"), ks=(1,), missing="skip").per_query
    assert set(ref) == set(mine)
    for q in ref:
        for m in ref[q]:
            assert mine[q][m] == pytest.approx(ref[q][m], abs=1e-12)


def test_empty_list_in_run_counts_as_present():
    res = evaluate({"q": {"a": 1}, "p": {"a": 1}}, {"q": {}, "p": {"a": 1.0}}, metrics=("recall",), ks=(1,),
                   missing="skip")
    assert res.qids == ("q", "p") and res.per_query["q"]["recall_1"] == 0.0
    assert res.missing_qids == ()


def test_disjoint_run_is_an_error_but_empty_run_is_not():
    with pytest.raises(ValueError, match="share no query id"):
        evaluate({"q1": {"a": 1}}, {"Q1": {"a": 1.0}})
    res = evaluate({"q1": {"a": 1}}, {}, metrics=("recall",), ks=(1,))
    assert res.per_query == {"q1": {"recall_1": 0.0}}


def test_bad_policies():
    with pytest.raises(ValueError, match="missing"):
        evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, missing="drop")
    with pytest.raises(ValueError, match="no_relevant"):
        evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, no_relevant="drop")


def test_measure_names():
    assert expand_measures() == tuple(f"{f}_{k}" for f in ("recall", "ndcg_cut", "recip_rank", "P")
                                      for k in DEFAULT_KS)
    assert expand_measures(["ndcg", "ndcg_cut_5", "recip_rank"], [5, 10]) == ("ndcg_cut_5", "ndcg_cut_10",
                                                                             "recip_rank")
    assert expand_measures(["precision", "mrr"], [3]) == ("P_3", "recip_rank_3")
    assert parse_measure("recip_rank") == ("recip_rank", None)
    assert parse_measure("P_10") == ("P", 10)
    assert measure_label("ndcg_cut_5") == "nDCG@5" and measure_label("recip_rank_10") == "MRR@10"
    for bad in ("map", "ndcg_cut_0", "recall_x", "P5"):
        with pytest.raises(ValueError):
            expand_measures([bad])
    with pytest.raises(ValueError):
        expand_measures(["recall"], [0])


def test_result_accessors():
    res = evaluate(QRELS, RUN, metrics=("recall",), ks=(1, 3))
    assert isinstance(res, EvalResult)
    assert res.series("recall_1") == {"q1": 1.0, "q2": 0.0, "q3": 0.0}
    np.testing.assert_array_equal(res.column("recall_3"), [1.0, 0.0, 0.0])
    with pytest.raises(KeyError):
        res.column("ndcg_cut_5")
    sub = res.subset(["q2", "q1"])
    assert sub.qids == ("q2", "q1") and sub.missing_qids == ("q2",)
    empty = evaluate({"q": {"a": 1}}, {"x": {}, "q": {"a": 1.0}}, metrics=("recall",), ks=(1,)).subset([])
    assert math.isnan(empty.means()["recall_1"])


def _random_case(seed: int):
    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(30)]
    qrels, run = {}, {}
    for q in range(25):
        qid = f"q{q}"
        judged = rng.sample(docs, rng.randint(1, 12))
        qrels[qid] = {d: rng.choice([0, 0, 1, 1, 2, 3, -1]) for d in judged}
        if rng.random() < 0.1:
            continue  # absent from the run
        n = rng.randint(1, 25)
        # few distinct scores -> many ties
        run[qid] = {d: float(rng.randint(0, 4)) / 2 for d in rng.sample(docs, n)}
    return qrels, run


@pytest.mark.parametrize("seed", range(6))
def test_random_runs_match_pytrec_eval(seed):
    qrels, run = _random_case(seed)
    ks = (1, 3, 5, 10, 20)
    ev = pytrec_eval.RelevanceEvaluator(qrels, {"recall.1,3,5,10,20", "ndcg_cut.1,3,5,10,20",
                                                "P.1,3,5,10,20", "recip_rank"})
    ref = ev.evaluate(run)
    mine = evaluate(qrels, run, metrics=("recall", "ndcg_cut", "P", "recip_rank", "mrr"), ks=ks,
                    missing="skip").per_query
    assert set(mine) == set(ref)
    for q, vals in ref.items():
        for m, v in vals.items():
            assert mine[q][m] == pytest.approx(v, abs=1e-12), (q, m)
    # MRR@k equals pytrec_eval's recip_rank on the run cut to its top k (trec order)
    for k in ks:
        cut = {q: {d: docs[d] for d in trec_ranking(docs, k)} for q, docs in run.items()}
        ref_k = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(cut)
        for q in ref_k:
            assert mine[q][f"recip_rank_{k}"] == pytest.approx(ref_k[q]["recip_rank"], abs=1e-12)
    zero = evaluate(qrels, run, ks=ks, metrics=("recall", "ndcg_cut", "P", "recip_rank"))
    assert set(zero.qids) == set(qrels)
    for q in set(qrels) - set(run):
        assert all(v == 0.0 for v in zero.per_query[q].values())
