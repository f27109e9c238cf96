"""The verb of the package: :func:`run_abstention` runs the ten steps of the content-based
abstention analysis (listed in :mod:`evaluation.abstention`) on one benchmark and writes
every table, the human-review export, the relabel suggestions, a plot, a Markdown summary
and one self-contained HTML report into a run directory.

It runs in three parts: the LLM phase (:class:`~.llm_phase.LLMPhase`: the ladder, content labels,
negative-control labels, answer-model probes and the answer check, in one LLM session,
giving :class:`LLMLabels`), the statistics (:func:`analyse`, one function of :mod:`.steps`
per step, no I/O) and the outputs (:func:`write_run`: :mod:`.tables`, :mod:`.review`,
:mod:`.relabel`, :mod:`.report`, the manifest).

Inputs:
    a :class:`storage.benchmark.Benchmark` (or a path + format + domain), an
    :class:`AbstentionConfig` and optionally an :class:`agents.LLMConfig`.

Outputs (``out_dir``):
    ``ladder``, ``contexts``, ``content_labels``, ``judge_calls``, ``rule_metrics``,
    ``per_retriever``, ``agreement``, ``negative_control``, ``near_duplicates``,
    ``detector_scores``, ``auroc``, ``provenance``, ``comparisons``, ``flips``,
    ``answer_check`` (Parquet); ``per_retriever.csv``; ``review_sample.{jsonl,csv}`` +
    ``review_key.csv``; ``relabel_suggestions.{jsonl,csv}``; ``ladder.png``; ``summary.md``;
    ``report.html``; ``manifest.json`` (config, stand-ins, notes); the LLM layer's
    ``llm_calls`` table and call cache.

Offline (no LLM config) every LLM part is a heuristic stand-in, and every output says that
the numbers are a demonstration, not a finding.

Examples:
    >>> from storage.benchmark import load_benchmark                      # doctest: +SKIP
    >>> bench = load_benchmark("tests/data/mtrag", "mtrag", "clapnq")      # doctest: +SKIP
    >>> res = run_abstention(bench, "out/abst", AbstentionConfig(retrievers=["bm25-turn", "fusion"]))  # doctest: +SKIP
    >>> print(res.markdown)                                                 # doctest: +SKIP
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

from common.aio import run as aio_run
from agents.config import LLMConfig
from evaluation.abstention import steps
from evaluation.abstention.config import AbstentionConfig, AbstentionError
from evaluation.abstention.ladder import LadderError, parse_rung
from evaluation.abstention.llm_phase import LLMLabels, LLMPhase, Progress
from evaluation.abstention.near_duplicates import ShingleIndex
from evaluation.abstention.relabel import write_suggestions
from evaluation.abstention.report import write_outputs
from evaluation.abstention.result import AbstentionResult
from evaluation.abstention.review import sample_for_review, write_review
from evaluation.abstention.roles import Roles, resolve_roles
from evaluation.abstention.sources import PageIndex
from evaluation.abstention.sources import hard_negatives as find_hard_negatives
from evaluation.abstention.tables import write_tables
from storage.benchmark import Benchmark, BenchTurn, load_benchmark
from storage.store import RunStore


# --------------------------------------------------------------------------------------
# inputs
# --------------------------------------------------------------------------------------
def select_turns(benchmark: Benchmark, cfg: AbstentionConfig) -> list[BenchTurn]:
    """Turns analysed: those with a relevant qrels passage (plus, with
    ``include_unanswerable_turns``, the other non-conversational turns), the first ``limit``."""
    out = []
    for t in benchmark.turns:
        if any(g >= 1 for g in t.gold.values()):
            out.append(t)
        elif cfg.include_unanswerable_turns and t.answerability != "CONVERSATIONAL":
            out.append(t)
    return out[:cfg.limit] if cfg.limit else out


def load_for_abstention(path: str | Path, format: str, domain: str | None = None
                        ) -> tuple[Benchmark, dict[str, dict[str, str]]]:
    """The benchmark and its hard negatives (:func:`sources.hard_negatives`)."""
    bench = load_benchmark(path, format, domain)
    return bench, find_hard_negatives(bench, path, domain)


# --------------------------------------------------------------------------------------
# the verb
# --------------------------------------------------------------------------------------
def run_abstention(benchmark: Benchmark | str | Path, out_dir: str | Path, config: AbstentionConfig | None = None,
                   llm_config: LLMConfig | None = None, *, format: str | None = None, domain: str | None = None,
                   hard_negatives: Mapping[str, Mapping[str, str]] | None = None,
                   progress: Progress | None = None) -> AbstentionResult:
    """Run the content-based abstention analysis (module docstring) and write its outputs.

    Args:
        benchmark: a loaded benchmark, or its path (then ``format`` and, for MTRAG, ``domain``).
        out_dir: run directory (created).
        config: the analysis settings (default: :class:`AbstentionConfig`).
        llm_config: endpoints and roles for LLM judges / answer models / expansions; None =
            every part offline.
        hard_negatives: ``{sample_id: {doc_id: note}}``; default: from the benchmark (grade <= 0
            qrels, and MTRAG's judged-``no`` contexts when loaded from a path).
        progress: ``progress(label, advance, total)`` callback.

    Returns:
        The :class:`AbstentionResult`.

    Raises:
        AbstentionError: unusable inputs (no analysable turn, unknown retriever, an LLM part
            without an endpoint ...).
    """
    cfg = config or AbstentionConfig()
    if isinstance(benchmark, (str, Path)):
        if not format:
            raise AbstentionError("a benchmark path needs its format (mtrag, ours or beir)")
        bench, negatives = load_for_abstention(benchmark, format, domain)
    else:
        bench, negatives = benchmark, find_hard_negatives(benchmark)
    if hard_negatives is not None:
        negatives = {k: dict(v) for k, v in hard_negatives.items()}
    try:
        for r in cfg.retrievers:
            parse_rung(r)
    except LadderError as exc:
        raise AbstentionError(str(exc)) from None
    roles = resolve_roles(cfg, llm_config)
    turns = select_turns(bench, cfg)
    if not turns:
        raise AbstentionError(f"benchmark {bench.name} has no turn with a relevant qrels passage to analyse")
    store = RunStore(str(out_dir)).ensure()
    labels = aio_run(LLMPhase(bench, turns, cfg, roles, store, progress or (lambda *a: None)).run())
    result = analyse(bench, turns, cfg, roles, negatives, labels, Path(store.path))
    write_run(store, result, bench, turns, roles, labels.call_rows)
    return result


# --------------------------------------------------------------------------------------
# statistics (steps 2-10) and outputs
# --------------------------------------------------------------------------------------
def analyse(bench: Benchmark, turns: list[BenchTurn], cfg: AbstentionConfig, roles: Roles,
            hard_negatives: Mapping[str, Mapping[str, str]], labels: LLMLabels, out_dir: Path) -> AbstentionResult:
    """The statistics of steps 2-10 (:mod:`.steps`) on the LLM phase's labels; no I/O.

    Args:
        bench: the benchmark.
        turns: the analysed turns (:func:`select_turns`).
        cfg: the analysis settings.
        roles: the resolved judges, answer models and expander.
        hard_negatives: ``{sample_id: {doc_id: note}}``.
        labels: what the LLM phase produced.
        out_dir: the run directory (recorded in the result).
    """
    judge_names = [p.name for p in roles.judges]
    primary = judge_names[0]
    notes = list(labels.notes)
    contexts, judgments = labels.contexts, labels.judgments
    retrievers = list(labels.ladder.runs)
    by_retriever = steps.contexts_by_retriever(contexts, retrievers)

    metrics = steps.rule_metrics_per_judge(by_retriever, judgments, judge_names)                     # step 5
    agreements = steps.judge_agreements(by_retriever, contexts, judgments, judge_names)             # step 2
    notes += steps.same_family_notes(roles.judges)
    control, control_notes = steps.negative_control(labels.control_labels, judge_names,              # step 3
                                                    cfg.negative_control_ceiling)
    notes += control_notes
    shingle_index = ShingleIndex({d: doc.text for d, doc in bench.corpus.items()}, cfg.near_dup_ngram)
    floors = steps.near_duplicate_floors(contexts, shingle_index, cfg.near_dup_threshold)           # step 4
    scores, abstain = steps.detector_scores(by_retriever, contexts, labels.probabilities,            # step 6
                                            cfg.abstain_threshold)
    detectors, models, labellings = list(scores), list(abstain), steps.labellings(judge_names)
    rows = steps.context_rows(contexts, judgments, judge_names, scores, abstain, cfg.partial)
    aurocs = steps.auroc_rows(rows, retrievers, detectors, labellings)
    pages = PageIndex(bench.corpus)                                                                  # step 8
    facts = steps.turn_facts(bench, turns, hard_negatives)
    provenance, shares = steps.false_miss_provenance(contexts, judgments[primary], facts, shingle_index, pages,
                                                     cfg.near_dup_threshold, cfg.neighbour_window)
    comps, flip_rows, flip_summaries = steps.comparison_flips(rows, labellings, retrievers, detectors,  # step 9
                                                              models, judge_names, cfg.alpha, cfg.n_resamples,
                                                              cfg.seed)
    suggestions = steps.relabel_suggestions(contexts, judgments, judge_names, hard_negatives, facts,    # step 10
                                            shingle_index, pages, cfg.near_dup_threshold, cfg.neighbour_window)
    per_retriever = steps.per_retriever_rows(labels.ladder, metrics, primary, floors, rows, models, aurocs)

    stand_ins = roles.stand_ins
    if stand_ins:
        notes.insert(0, "DEMONSTRATION: offline stand-ins are in use (" + "; ".join(stand_ins) + "). "
                     "The numbers show the method at work; they are not a finding.")
    return AbstentionResult(
        out_dir=out_dir, benchmark=bench.name, config=cfg, offline_demo=bool(stand_ins), stand_ins=stand_ins,
        ladder=labels.ladder, contexts=contexts, judgments=judgments, rule_metrics=metrics,
        per_retriever=per_retriever, auroc_columns=steps.auroc_columns(detectors), agreements=agreements,
        negative_control=control, near_dup=floors, aurocs=aurocs, detectors=labels.detectors,
        provenance=provenance, provenance_shares=shares, comparisons=[c for lab in labellings for c in comps[lab]],
        flips=flip_rows, flip_summaries=flip_summaries, answer_check=labels.answer_check, suggestions=suggestions,
        detector_scores=scores, abstain=abstain, notes=notes)


def write_run(store: RunStore, res: AbstentionResult, bench: Benchmark, turns: list[BenchTurn], roles: Roles,
              call_rows: list[dict]) -> None:
    """Every output of the run: the Parquet tables (:mod:`.tables`), the human-review export,
    the relabel suggestions, the reports (:mod:`.report`) and the manifest; fills ``res.files``."""
    cfg = res.config
    judge_names = [p.name for p in roles.judges]
    write_tables(store, res, judge_names, call_rows)
    note = res.notes[0] if res.offline_demo else ""
    sample = sample_for_review(res.contexts, cfg.review_n, cfg.seed)
    review = write_review(sample, bench, store.path, {j: {k: v.label for k, v in res.judgments[j].items()}
                                                      for j in judge_names}, cfg.context_k, note)
    res.files.update({f"review_{k}": v for k, v in review.items()})
    texts = {d: doc.text for d, doc in bench.corpus.items()}
    sug = write_suggestions(res.suggestions, store.path, texts, {t.sample_id: t for t in turns}, note)
    res.files.update({f"relabel_{k}": v for k, v in sug.items()})
    if len(sample) < min(100, cfg.review_n):
        res.notes.append(f"Only {len(sample)} rule-unanswerable contexts were available for the human-review "
                         "sample (100-200 recommended).")
    write_outputs(res)
    store.write_manifest(abstention={
        "benchmark": bench.name, "config": cfg.model_dump(mode="json"), "offline_demo": res.offline_demo,
        "stand_ins": res.stand_ins, "notes": res.notes, "n_turns": len(turns),
        "judges": [{"name": p.name, "role": p.role, "offline": p.offline} for p in roles.judges],
        "answer_models": [{"name": p.name, "role": p.role, "offline": p.offline} for p in roles.answerers],
        "expander": {"name": roles.expander.name, "offline": roles.expander.offline},
        "detectors": [{"name": d.name, "available": d.available, "message": d.message} for d in res.detectors],
        "files": {k: str(v) for k, v in res.files.items()}})


__all__ = ["AbstentionResult", "LLMLabels", "analyse", "load_for_abstention", "run_abstention", "select_turns",
           "write_run"]
