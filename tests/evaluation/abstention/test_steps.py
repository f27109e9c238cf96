"""Single statistical steps of the abstention analysis (``evaluation.abstention.steps``) on
hand-built contexts, with hand-computed values.

The toy analysis: judge ``J``, answer model ``answer:m``, two retrievers.

====  ======  =========  =====  ======  ===========  =====================
rung  turn    top-1 doc  score  gold    rule unans.  J's label
====  ======  =========  =====  ======  ===========  =====================
r1    s1      g1         3.0    g1      no (0)       yes -> content 0
r1    s2      x          2.0    g2      yes (1)      no -> content 1
r1    s3      (empty)    -      g3      yes (1)      no (rule) -> 1
r2    s1      x          5.0    g1      yes (1)      partial -> excluded
====  ======  =========  =====  ======  ===========  =====================
"""
from __future__ import annotations

import math

import pytest

from evaluation.abstention import steps
from evaluation.abstention.contexts import Context
from evaluation.abstention.detectors import TOP1
from evaluation.abstention.judges import Judgment
from evaluation.abstention.ladder import LadderResult
from evaluation.abstention.roles import Part

R1 = [Context("r1", "s1", "c1", 1, ("g1",), (3.0,), frozenset({"g1"})),
      Context("r1", "s2", "c2", 1, ("x",), (2.0,), frozenset({"g2"})),
      Context("r1", "s3", "c3", 1, (), (), frozenset({"g3"}))]
R2 = [Context("r2", "s1", "c1", 1, ("x",), (5.0,), frozenset({"g1"}))]
CONTEXTS = R1 + R2
BY_R = {"r1": R1, "r2": R2}
JUDGMENTS = {"J": {("s1", ("g1",)): Judgment("J", "yes", ("g1",)), ("s2", ("x",)): Judgment("J", "no"),
                   ("s3", ()): Judgment("J", "no", backend="rule"), ("s1", ("x",)): Judgment("J", "partial")}}
PROBS = {"answer:m": {("s1", ("g1",)): 0.9, ("s2", ("x",)): 0.2, ("s1", ("x",)): 0.6}}


def test_detector_scores_negate_top1_and_turn_probabilities_into_abstentions():
    scores, abstain = steps.detector_scores(BY_R, CONTEXTS, PROBS, abstain_threshold=0.5)
    # top-1: -score; the empty context gets -(lowest finite top-1 of its retriever - 1) = -(2 - 1)
    assert scores[TOP1] == {("r1", "s1"): -3.0, ("r1", "s2"): -2.0, ("r1", "s3"): -1.0, ("r2", "s1"): -5.0}
    # answer model: 1 - P(answerable); s3's context has no probability and is absent
    assert scores["answer:m"] == pytest.approx({("r1", "s1"): 0.1, ("r1", "s2"): 0.8, ("r2", "s1"): 0.4})
    assert abstain == {"answer:m": {("r1", "s1"): False, ("r1", "s2"): True, ("r2", "s1"): False}}


@pytest.mark.parametrize("label,partial,want", [("yes", "exclude", 0), ("no", "exclude", 1),
                                                ("partial", "exclude", None), ("partial", "answerable", 0),
                                                (None, "exclude", None)])
def test_content_value(label, partial, want):
    assert steps.content_value(Judgment("J", label), partial) == want
    assert steps.content_value(None, partial) is None


def test_context_rows_and_auroc_per_retriever():
    scores, abstain = steps.detector_scores(BY_R, CONTEXTS, PROBS, 0.5)
    rows = steps.context_rows(CONTEXTS, JUDGMENTS, ["J"], scores, abstain, "exclude")
    assert [(r.retriever, r.sample_id, r.labels) for r in rows] == [
        ("r1", "s1", {"rule": 0, "content:J": 0}), ("r1", "s2", {"rule": 1, "content:J": 1}),
        ("r1", "s3", {"rule": 1, "content:J": 1}), ("r2", "s1", {"rule": 1, "content:J": None})]
    assert rows[2].scores == {TOP1: -1.0, "answer:m": None} and rows[2].abstain == {"answer:m": None}
    aurocs = steps.auroc_rows(rows, ["r1", "r2"], [TOP1, "answer:m"], steps.labellings(["J"]))
    got = {(a["retriever"], a["detector"], a["labelling"]): (a["auroc"], a["n_pos"], a["n_neg"]) for a in aurocs}
    assert len(aurocs) == 2 * 2 * 2
    # r1, top-1 vs rule: positives score -2 and -1, the negative -3 -> every pair ordered: AUROC 1
    assert got[("r1", TOP1, "rule")] == (1.0, 2, 1)
    # r1, answer model vs content: s1 (0, 0.1) and s2 (1, 0.8); s3 has no score
    assert got[("r1", "answer:m", "content:J")] == (1.0, 1, 1)
    # r2: one positive, no negative -> undefined
    auroc, n_pos, n_neg = got[("r2", TOP1, "rule")]
    assert math.isnan(auroc) and (n_pos, n_neg) == (1, 0)
    assert got[("r2", TOP1, "content:J")][1:] == (0, 0)


def test_rule_metrics_per_judge_counts():
    metrics = steps.rule_metrics_per_judge(BY_R, JUDGMENTS, ["J"])
    m1, m2 = metrics[("r1", "J")], metrics[("r2", "J")]
    # r1: rule-unanswerable s2 and s3, both judged "no": no false miss, precision 1
    assert (m1.n_contexts, m1.rule_unanswerable, m1.content_unanswerable) == (3, 2, 2)
    assert m1.false_miss_yes == 0.0 and m1.precision == 1.0
    # r2: the one rule-unanswerable context is "partial": a false miss only with partial counted
    assert (m2.rule_unanswerable, m2.false_miss_yes, m2.false_miss_yes_partial) == (1, 0.0, 1.0)


def test_negative_control_flags_a_judge_above_the_ceiling():
    labels = {"J": {("a", ("d1",)): Judgment("J", "yes"), ("b", ("d2",)): Judgment("J", "no"),
                    ("c", ("d3",)): Judgment("J", None), ("d", ("d4",)): Judgment("J", "no")},
              "K": {("a", ("d1",)): Judgment("K", "no"), ("b", ("d2",)): Judgment("K", "no")}}
    results, notes = steps.negative_control(labels, ["J", "K"], ceiling=0.2)
    # J: 1 yes of 3 answered (the failed call is left out) = 33.3% > 20%
    assert (results["J"].n, results["J"].n_failed, results["J"].yes_rate, results["J"].unfit) == (3, 1, 1 / 3, True)
    assert (results["K"].yes_rate, results["K"].unfit) == (0.0, False)
    assert notes == ["Judge J is flagged UNFIT: it says yes to 33.3% of other conversations' contexts "
                     "(ceiling 20%)."]
    assert steps.negative_control({}, ["J"], 0.2) == ({}, [])


def test_same_family_notes():
    qwen_a, qwen_b = Part("Qwen/Qwen3-14B", "judge_1", False), Part("qwen3-4b", "judge_2", False)
    assert steps.same_family_notes([qwen_a, qwen_b]) == [
        "Judges Qwen/Qwen3-14B and qwen3-4b look like the same model family (qwen); the method asks for a "
        "second judge of another family."]
    assert steps.same_family_notes([qwen_a, Part("phi-4", "judge_2", False)]) == []
    offline = [Part("heuristic-support", "a", True), Part("heuristic-overlap", "b", True)]
    assert steps.same_family_notes(offline) == []          # stand-ins: never flagged
    assert steps.same_family_notes([qwen_a]) == []


def test_judge_agreements_pairs_only_really_judged_contexts():
    judgments = {"J": dict(JUDGMENTS["J"]),
                 "K": {("s1", ("g1",)): Judgment("K", "yes"), ("s2", ("x",)): Judgment("K", "yes"),
                       ("s3", ()): Judgment("K", "no", backend="rule"), ("s1", ("x",)): Judgment("K", "partial")}}
    got = dict(steps.judge_agreements(BY_R, CONTEXTS, judgments, ["J", "K"]))
    assert list(got) == ["r1", "r2", "all (unique contexts)"]
    # r1: s3's rule label is left out; J/K agree on s1 (yes/yes), not on s2 (no/yes)
    assert (got["r1"].n, got["r1"].raw_agreement) == (2, 0.5)
    assert (got["r2"].n, got["r2"].raw_agreement) == (1, 1.0)
    assert (got["all (unique contexts)"].n, got["all (unique contexts)"].raw_agreement) == (3, 2 / 3)
    assert steps.judge_agreements(BY_R, CONTEXTS, judgments, ["J"]) == []


def test_per_retriever_rows_main_table():
    ladder = LadderResult(runs={"r1": {}, "r2": {}}, ndcg={"r1": 0.25, "r2": 0.5}, recall={"r1": 0.0, "r2": 0.0},
                          n_queries=3, descriptions={"r1": "one", "r2": "two"})
    scores, abstain = steps.detector_scores(BY_R, CONTEXTS, PROBS, 0.5)
    rows = steps.context_rows(CONTEXTS, JUDGMENTS, ["J"], scores, abstain, "exclude")
    aurocs = steps.auroc_rows(rows, ["r1", "r2"], list(scores), steps.labellings(["J"]))
    metrics = steps.rule_metrics_per_judge(BY_R, JUDGMENTS, ["J"])
    table = steps.per_retriever_rows(ladder, metrics, "J", {}, rows, list(abstain), aurocs)
    r1, r2 = table
    assert (r1["position"], r1["retriever"], r1["judge"], r1["ndcg"]) == (1, "r1", "J", 0.25)
    assert math.isnan(r1["near_dup_floor"])                 # no floor computed for r1
    # r1: answer:m decides on s1 (no abstention) and s2 (abstains): rate 1/2; both decisions match
    # the rule (s1 answerable, s2 unanswerable) and the content labels
    assert r1["model_abstention"] == 0.5
    assert r1["abstention_accuracy_rule"] == 1.0 and r1["abstention_accuracy_content"] == 1.0
    # r2: one decision (no abstention) on a rule-unanswerable context; its content label is excluded
    assert r2["model_abstention"] == 0.0 and r2["abstention_accuracy_rule"] == 0.0
    assert math.isnan(r2["abstention_accuracy_content"])
    assert r1[f"auroc:{TOP1}:rule"] == 1.0 and r1["auroc:answer:m:content"] == 1.0
    assert steps.auroc_columns(list(scores)) == [f"auroc:{TOP1}:rule", f"auroc:{TOP1}:content",
                                                 "auroc:answer:m:rule", "auroc:answer:m:content"]
