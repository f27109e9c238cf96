"""The statistical steps of the abstention analysis, one typed function each.

They run after the LLM calls (ladder, content labels, negative-control labels, answer-model
probes, answer check; see :mod:`.run`) and do no I/O, so each can be a Prefect task and is
unit-testable alone. Step numbers are those of the method (:mod:`evaluation.abstention`):

=====  ===========================================================================
step   functions
=====  ===========================================================================
2      :func:`judge_agreements`, :func:`same_family_notes`
3      :func:`negative_control`
4      :func:`near_duplicate_floors`
5      :func:`rule_metrics_per_judge`
6      :func:`detector_scores`, :func:`context_rows`, :func:`auroc_rows`
8      :func:`turn_facts`, :func:`false_miss_provenance`
9      :func:`comparison_flips`
10     :func:`relabel_suggestions`
main   :func:`auroc_columns`, :func:`per_retriever_rows`
=====  ===========================================================================

Keys: a *context key* is ``(sample_id, doc_ids)`` (:attr:`Context.key`, shared by every
retriever that retrieved the same top-k); a *row key* is ``(retriever, sample_id)``.
"""
from __future__ import annotations

import math
from typing import Any, Literal, Mapping, Sequence

from evaluation.abstention.agreement import Agreement, agreement
from evaluation.abstention.auroc import auroc_test
from evaluation.abstention.contexts import Context
from evaluation.abstention.detectors import TOP1, top1_scores
from evaluation.abstention.flips import Comparison, ContextRow, Flip, FlipSummary, comparisons, flips
from evaluation.abstention.judges import Judgment
from evaluation.abstention.ladder import LadderResult
from evaluation.abstention.near_duplicates import NearDupFloor, ShingleIndex, near_dup_floor
from evaluation.abstention.negative_control import ControlResult, control_result
from evaluation.abstention.provenance import PassageClass, TurnFacts, class_shares, classify, classify_contexts
from evaluation.abstention.relabel import Suggestion, suggestions
from evaluation.abstention.result import AbstainDecisions, DetectorScores
from evaluation.abstention.roles import Part, model_family
from evaluation.abstention.rule_metrics import RuleMetrics, rule_metrics
from evaluation.abstention.sources import PageIndex, conversation_qrels, other_turn_qrels
from storage.benchmark import Benchmark, BenchTurn

Judgments = Mapping[str, Mapping[tuple, Judgment]]
"""``{judge: {context key: Judgment}}``."""


def contexts_by_retriever(contexts: Sequence[Context], retrievers: Sequence[str]) -> dict[str, list[Context]]:
    """The contexts of each retriever, in ``retrievers`` order (contexts keep their order)."""
    return {r: [c for c in contexts if c.retriever == r] for r in retrievers}


def labellings(judge_names: Sequence[str]) -> list[str]:
    """The labellings compared: ``rule`` then ``content:<judge>`` for every judge."""
    return ["rule"] + [f"content:{j}" for j in judge_names]


# -- step 5 ----------------------------------------------------------------------------------
def rule_metrics_per_judge(by_retriever: Mapping[str, Sequence[Context]], judgments: Judgments,
                           judge_names: Sequence[str]) -> dict[tuple[str, str], RuleMetrics]:
    """Step 5: how the rule label fares against each judge's content labels, per
    ``(retriever, judge)`` (a context the judge has no label for counts as unlabelled)."""
    out: dict[tuple[str, str], RuleMetrics] = {}
    for r, ctxs in by_retriever.items():
        for j in judge_names:
            labels = [judgments[j].get(c.key) for c in ctxs]
            out[(r, j)] = rule_metrics([c.rule_unanswerable for c in ctxs],
                                       [x.label if x is not None else None for x in labels])
    return out


# -- step 2 ----------------------------------------------------------------------------------
def _paired_labels(contexts: Sequence[Context], judgments: Judgments, judge_a: str,
                   judge_b: str) -> tuple[list[str | None], list[str | None]]:
    """Labels of both judges on the contexts both really judged (rule, benchmark and
    no-reference labels of the first judge are left out)."""
    labels_a: list[str | None] = []
    labels_b: list[str | None] = []
    for c in contexts:
        a, b = judgments[judge_a].get(c.key), judgments[judge_b].get(c.key)
        if a is None or b is None or a.backend in ("rule", "benchmark", "none"):
            continue
        labels_a.append(a.label)
        labels_b.append(b.label)
    return labels_a, labels_b


def judge_agreements(by_retriever: Mapping[str, Sequence[Context]], contexts: Sequence[Context],
                     judgments: Judgments, judge_names: Sequence[str]) -> list[tuple[str, Agreement]]:
    """Step 2: agreement (Cohen's kappa) of the primary judge with every other judge, per
    retriever and over all unique contexts (``"all (unique contexts)"``)."""
    primary = judge_names[0]
    out: list[tuple[str, Agreement]] = []
    unique = list({c.key: c for c in contexts}.values())
    for other in judge_names[1:]:
        for r, ctxs in by_retriever.items():
            la, lb = _paired_labels(ctxs, judgments, primary, other)
            out.append((r, agreement(primary, la, other, lb)))
        la, lb = _paired_labels(unique, judgments, primary, other)
        out.append(("all (unique contexts)", agreement(primary, la, other, lb)))
    return out


def same_family_notes(judges: Sequence[Part]) -> list[str]:
    """Step 2: a note for every other judge of the primary judge's model family (the method
    asks for a second judge of another family); none when the first two judges are both
    offline stand-ins."""
    primary = judges[0].name
    both_offline = len(judges) > 1 and judges[0].offline and judges[1].offline
    notes = []
    for part in judges[1:]:
        fam_a, fam_b = model_family(primary), model_family(part.name)
        if fam_a == fam_b and not both_offline:
            notes.append(f"Judges {primary} and {part.name} look like the same model family ({fam_a}); "
                         "the method asks for a second judge of another family.")
    return notes


# -- step 3 ----------------------------------------------------------------------------------
def negative_control(control_labels: Judgments, judge_names: Sequence[str],
                     ceiling: float) -> tuple[dict[str, ControlResult], list[str]]:
    """Step 3: each judge's yes-rate on other conversations' contexts, and a note for every
    judge above ``ceiling`` (flagged UNFIT). No labels (fewer than two conversations): ``{}``."""
    results: dict[str, ControlResult] = {}
    notes: list[str] = []
    if not control_labels:
        return results, notes
    for j in judge_names:
        res = control_result(j, [x.label for x in control_labels[j].values()], ceiling)
        results[j] = res
        if res.unfit:
            notes.append(f"Judge {j} is flagged UNFIT: it says yes to {res.yes_rate:.1%} of other "
                         f"conversations' contexts (ceiling {ceiling:.0%}).")
    return results, notes


# -- step 4 ----------------------------------------------------------------------------------
def near_duplicate_floors(contexts: Sequence[Context], shingle_index: ShingleIndex,
                          threshold: float) -> dict[str, NearDupFloor]:
    """Step 4: per retriever, the share of rule-unanswerable contexts (of turns with qrels)
    holding a near-duplicate (shingle Jaccard >= ``threshold``) of a qrels passage."""
    return near_dup_floor([c for c in contexts if c.gold], shingle_index, threshold)


# -- step 6 ----------------------------------------------------------------------------------
def detector_scores(by_retriever: Mapping[str, Sequence[Context]], contexts: Sequence[Context],
                    probabilities: Mapping[str, Mapping[tuple, float]],
                    abstain_threshold: float) -> tuple[DetectorScores, AbstainDecisions]:
    """Step 6: unanswerability scores of every detector per row key, and the answer models'
    abstain decisions.

    Args:
        by_retriever: contexts per retriever (the top-1 detector scores each retriever's list).
        contexts: every context.
        probabilities: ``{answer-model detector: {context key: P(answerable)}}``.
        abstain_threshold: an answer model abstains when P(answerable) is below it.

    Returns:
        ``(scores, abstain)``: ``scores[TOP1]`` is the negated retriever top-1 score;
        ``scores[model] = 1 - P(answerable)``; contexts without a probability are absent.
    """
    scores: DetectorScores = {TOP1: {}}
    for r, ctxs in by_retriever.items():
        for c, s in zip(ctxs, top1_scores(ctxs)):
            scores[TOP1][(r, c.sample_id)] = s
    abstain: AbstainDecisions = {}
    for name, p in probabilities.items():
        scores[name] = {}
        abstain[name] = {}
        for c in contexts:
            if c.key in p:
                scores[name][(c.retriever, c.sample_id)] = 1.0 - p[c.key]
                abstain[name][(c.retriever, c.sample_id)] = p[c.key] < abstain_threshold
    return scores, abstain


def content_value(judgment: Judgment | None, partial: Literal["exclude", "answerable"]) -> int | None:
    """A content label as a binary unanswerability label: ``no`` -> 1, ``yes`` -> 0,
    ``partial`` -> 0 (``partial="answerable"``) or None (``"exclude"``); no label -> None."""
    if judgment is None or judgment.label is None:
        return None
    if judgment.label == "partial":
        return None if partial == "exclude" else 0
    return 1 if judgment.label == "no" else 0


def context_rows(contexts: Sequence[Context], judgments: Judgments, judge_names: Sequence[str],
                 scores: DetectorScores, abstain: AbstainDecisions,
                 partial: Literal["exclude", "answerable"]) -> list[ContextRow]:
    """One row per context: its binary labels (``rule`` and ``content:<judge>``, see
    :func:`content_value`), detector scores and abstain decisions (None where missing)."""
    rows: list[ContextRow] = []
    for c in contexts:
        labels: dict[str, int | None] = {"rule": int(c.rule_unanswerable)}
        for j in judge_names:
            labels[f"content:{j}"] = content_value(judgments[j].get(c.key), partial)
        key = (c.retriever, c.sample_id)
        rows.append(ContextRow(c.retriever, c.sample_id, labels, {d: scores[d].get(key) for d in scores},
                               {m: abstain[m].get(key) for m in abstain}))
    return rows


def auroc_rows(rows: Sequence[ContextRow], retrievers: Sequence[str], detectors: Sequence[str],
               labelling_names: Sequence[str]) -> list[dict]:
    """Step 6: AUROC (positive = unanswerable) of every detector against every labelling, per
    retriever, on the rows that have both a label and a score; with its Mann-Whitney p-value."""
    out: list[dict] = []
    for r in retrievers:
        mine = [x for x in rows if x.retriever == r]
        for d in detectors:
            for lab in labelling_names:
                pairs = [(x.labels[lab], x.scores[d]) for x in mine
                         if x.labels[lab] is not None and x.scores[d] is not None]
                res = auroc_test([a for a, _ in pairs], [b for _, b in pairs])
                out.append({"retriever": r, "detector": d, "labelling": lab, "auroc": res.auroc,
                            "n_pos": res.n_pos, "n_neg": res.n_neg, "p_value": res.p_value})
    return out


# -- step 8 ----------------------------------------------------------------------------------
def turn_facts(benchmark: Benchmark, turns: Sequence[BenchTurn],
               hard_negatives: Mapping[str, Mapping[str, str]]) -> dict[str, TurnFacts]:
    """Per analysed turn: its relevant qrels passages, its hard negatives and the qrels of
    the conversation's other turns (what provenance and relabel suggestions check against)."""
    conv_qrels = conversation_qrels(benchmark)
    return {t.sample_id: TurnFacts(qrels=frozenset(d for d, g in t.gold.items() if g >= 1),
                                   hard_negatives=frozenset(hard_negatives.get(t.sample_id, {})),
                                   other_turn_qrels=other_turn_qrels(conv_qrels, t.conv_id, t.sample_id))
            for t in turns}


def false_miss_provenance(contexts: Sequence[Context], primary_judgments: Mapping[tuple, Judgment],
                          facts: Mapping[str, TurnFacts], shingle_index: ShingleIndex, pages: PageIndex,
                          threshold: float, window: int
                          ) -> tuple[list[PassageClass], dict[str, dict[str, dict[str, float]]]]:
    """Step 8: where the passages of false-miss contexts (rule-unanswerable, the primary judge
    says ``yes``) come from, and the class shares (``supporting`` passages only and
    ``all_passages``)."""
    items = []
    for c in contexts:
        j = primary_judgments.get(c.key)
        if c.gold and c.rule_unanswerable and j is not None and j.label == "yes":
            items.append((c.retriever, c.sample_id, c.doc_ids, j.supporting))
    classes = classify_contexts(items, facts, shingle_index, pages, threshold, window)
    return classes, {"supporting": class_shares(classes, True), "all_passages": class_shares(classes, False)}


# -- step 9 ----------------------------------------------------------------------------------
def comparison_flips(rows: Sequence[ContextRow], labelling_names: Sequence[str], retrievers: Sequence[str],
                     detectors: Sequence[str], models: Sequence[str], judge_names: Sequence[str], alpha: float,
                     n_resamples: int, seed: int
                     ) -> tuple[dict[str, list[Comparison]], list[Flip], list[FlipSummary]]:
    """Step 9: the comparisons a study would report under every labelling, and which change
    between rule and primary-judge labels (and between the first two judges)."""
    comps = {lab: comparisons(rows, lab, retrievers, detectors, models, alpha, n_resamples, seed)
             for lab in labelling_names}
    flip_rows: list[Flip] = []
    summaries: list[FlipSummary] = []
    pairs = [("rule", f"content:{judge_names[0]}")]
    if len(judge_names) > 1:
        pairs.append((f"content:{judge_names[0]}", f"content:{judge_names[1]}"))
    for a, b in pairs:
        changed, summary = flips(comps[a], comps[b])
        flip_rows.extend(changed)
        summaries.append(summary)
    return comps, flip_rows, summaries


# -- step 10 ---------------------------------------------------------------------------------
def relabel_suggestions(contexts: Sequence[Context], judgments: Judgments, judge_names: Sequence[str],
                        hard_negatives: Mapping[str, Mapping[str, str]], facts: Mapping[str, TurnFacts],
                        shingle_index: ShingleIndex, pages: PageIndex, threshold: float,
                        window: int) -> list[Suggestion]:
    """Step 10: candidate qrels additions (passages judges cite from false-miss contexts),
    with each passage's provenance class and its best Jaccard to the turn's qrels."""
    def class_of(sample_id: str, doc_id: str) -> str:
        return classify(doc_id, facts[sample_id], shingle_index, pages, threshold, window)

    def best_jaccard(sample_id: str, doc_id: str) -> float:
        return max((shingle_index.similarity(doc_id, q) for q in facts[sample_id].qrels), default=0.0)

    return suggestions(contexts, judgments, judge_names, hard_negatives, class_of, best_jaccard)


# -- main table ------------------------------------------------------------------------------
def auroc_columns(detectors: Sequence[str]) -> list[str]:
    """The AUROC columns of the main table: ``auroc:<detector>:rule`` and ``...:content``."""
    return [f"auroc:{d}:{lab}" for d in detectors for lab in ("rule", "content")]


def per_retriever_rows(ladder: LadderResult, metrics: Mapping[tuple[str, str], RuleMetrics], primary: str,
                       floors: Mapping[str, NearDupFloor], rows: Sequence[ContextRow], models: Sequence[str],
                       aurocs: Sequence[Mapping[str, Any]]) -> list[dict]:
    """The main table, one dict per rung in ladder order: nDCG, the primary judge's rule
    metrics, the near-duplicate floor, the first answer model's abstention rate and accuracy
    (against rule and content labels) and the AUROC columns (:func:`auroc_columns`)."""
    first_model = models[0] if models else None
    content = f"content:{primary}"
    out: list[dict] = []
    for i, r in enumerate(ladder.runs):
        m = metrics[(r, primary)]
        row: dict[str, Any] = {
            "position": i + 1, "retriever": r, "judge": primary, "ndcg": ladder.ndcg[r],
            "n_contexts": m.n_contexts, "rule_unanswerable": m.rule_unanswerable,
            "content_unanswerable": m.content_unanswerable, "false_miss_yes": m.false_miss_yes,
            "false_miss_yes_partial": m.false_miss_yes_partial, "precision": m.precision,
            "precision_partial_answerable": m.precision_partial_answerable, "youden_j": m.youden_j,
            "youden_j_partial_answerable": m.youden_j_partial_answerable,
            "near_dup_floor": floors[r].floor if r in floors else math.nan,
            "abstention_rule": m.abstention_rule, "abstention_content": m.abstention_content,
            "model_abstention": math.nan, "abstention_accuracy_rule": math.nan,
            "abstention_accuracy_content": math.nan}
        if first_model is not None:
            decisions = [(x, x.abstain[first_model]) for x in rows
                         if x.retriever == r and x.abstain[first_model] is not None]
            if decisions:
                row["model_abstention"] = sum(a for _, a in decisions) / len(decisions)
                for lab, col in (("rule", "abstention_accuracy_rule"), (content, "abstention_accuracy_content")):
                    ok = [bool(a) == bool(x.labels[lab]) for x, a in decisions if x.labels[lab] is not None]
                    row[col] = sum(ok) / len(ok) if ok else math.nan
        for a in aurocs:
            if a["retriever"] == r and a["labelling"] in ("rule", content):
                row[f"auroc:{a['detector']}:{'rule' if a['labelling'] == 'rule' else 'content'}"] = a["auroc"]
        out.append(row)
    return out


__all__ = ["Judgments", "auroc_columns", "auroc_rows", "comparison_flips", "content_value", "context_rows",
           "contexts_by_retriever", "detector_scores", "false_miss_provenance", "judge_agreements", "labellings",
           "near_duplicate_floors", "negative_control", "per_retriever_rows", "relabel_suggestions",
           "rule_metrics_per_judge", "same_family_notes", "turn_facts"]
