"""From a :class:`~storage.benchmark.Benchmark` to the units the judges see.

A *unit* is one thing one judge judges once: a (turn, gold passage) pair for alignment, a
turn for faithfulness and quality, a (turn, candidate list, pass) for distinguishability.
Every turn is judged as the **current** turn with its own history (the reference judged
the first exchange of every conversation). Turns that cannot be judged for a metric are
recorded in ``skipped`` with a reason, never scored 0:

* ``no_gold`` — the turn has no gold passage (e.g. unanswerable turns): all metrics;
* ``gold_missing`` — a gold passage id is not in the corpus: all metrics (judging with part
  of the evidence would be unfair to the benchmark);
* ``gold_empty`` — a gold passage has no text: all metrics;
* ``no_answer`` — no reference answer: faithfulness and quality;
* ``no_candidates`` / ``gold_not_in_candidates`` — benchmark candidate mode only;
* ``no_negatives`` — no hard negative could be found / listed.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from evaluation.audit.candidates import (CandidateSet, NegativeMiner, benchmark_negatives, build_query,
                                         counterbalanced_slots, design_seed, ordered_gold, place_candidates,
                                         primary_gold, shuffle_candidates)
from evaluation.audit.config import AuditConfig
from evaluation.audit.heuristics import EvidenceIndex
from storage.benchmark import Benchmark, BenchTurn


@dataclass
class Unit:
    """One judgment to make (per judge).

    Attributes:
        benchmark, sample_id: the turn.
        metric, variant: e.g. ``("distinguishability", "retrieved-reversed")``; variant is
            ``""`` for the 1-5 metrics.
        unit_id: ``sample_id`` or ``sample_id|doc_id`` (alignment).
        inputs: the judge inputs (see each metric module).
        generator: model that wrote the turn, when known.
        doc_id: the judged gold passage (alignment).
        cset: the candidate list (distinguishability).
    """

    benchmark: str
    sample_id: str
    metric: str
    variant: str
    unit_id: str
    inputs: dict[str, Any]
    generator: str | None = None
    doc_id: str | None = None
    cset: CandidateSet | None = None


@dataclass
class PreparedBenchmark:
    """A benchmark ready to judge: units, skips, candidate lists and the shared evidence index."""

    name: str
    format: str
    benchmark: Benchmark
    n_turns: int
    selected: list[str]
    units: list[Unit]
    skipped: list[dict[str, Any]]
    candidate_sets: list[CandidateSet]
    query_source: dict[str, str]
    index: EvidenceIndex
    negatives: dict[str, Any] = field(default_factory=dict)

    def counts(self) -> dict[str, Any]:
        by: dict[str, int] = {}
        for u in self.units:
            key = f"{u.metric}[{u.variant}]" if u.variant else u.metric
            by[key] = by.get(key, 0) + 1
        reasons: dict[str, int] = {}
        for reason, _ in dict.fromkeys((s["reason"], s["sample_id"]) for s in self.skipped):
            reasons[reason] = reasons.get(reason, 0) + 1     # distinct turns per reason
        return {"turns": self.n_turns, "selected": len(self.selected), "units": by, "skipped_by_reason": reasons}


def select_turns(turns: Sequence[BenchTurn], config: AuditConfig) -> list[BenchTurn]:
    """``sample`` (seeded, benchmark order kept) then ``limit`` (first N)."""
    out = list(turns)
    if config.sample is not None and config.sample < len(out):
        keep = sorted(random.Random(config.seed).sample(range(len(out)), config.sample))
        out = [out[i] for i in keep]
    if config.limit is not None:
        out = out[:config.limit]
    return out


def variants(config: AuditConfig) -> list[str]:
    """Distinguishability variants to run (``retrieved``, ``benchmark``, ``*-reversed``)."""
    sources = ["retrieved", "benchmark"] if config.candidates == "both" else [config.candidates]
    out = []
    for s in sources:
        out.append(s)
        if config.reverse_pass:
            out.append(f"{s}-reversed")
    return out


def _passage(bench: Benchmark, doc_id: str) -> dict[str, str]:
    d = bench.corpus[doc_id]
    return {"doc_id": doc_id, "title": d.title or "", "text": d.text}


def prepare_benchmark(bench: Benchmark, config: AuditConfig, *, cache_dir: str | Path | None = None,
                      index: EvidenceIndex | None = None, index_dir: str | Path | None = None) -> PreparedBenchmark:
    """Units, skips and candidate lists of ``bench`` (see module docstring).

    Args:
        bench: the benchmark.
        config: audit settings.
        cache_dir: embedding cache of the dense negatives retriever.
        index: a prebuilt :class:`EvidenceIndex` of the corpus (built here when None).
        index_dir: folder of the persisted hard-negative indexes (the audit run's
            ``cache/index``, :func:`evaluation.audit.run.negatives_index_dir`): built once per
            corpus and settings, reopened memory-mapped by a rerun; the evidence index built
            here shares its BM25. None = in-memory indexes.
    """
    turns = select_turns(bench.turns, config)
    metric_variants = [(m, v) for m in config.metrics for v in (variants(config) if m == "distinguishability" else [""])]
    skipped: list[dict[str, Any]] = []

    def skip(t: BenchTurn, reason: str, detail: str = "", only: Sequence[tuple[str, str]] | None = None) -> None:
        for m, v in (only if only is not None else metric_variants):
            skipped.append({"benchmark": bench.name, "sample_id": t.sample_id, "metric": m, "variant": v,
                            "reason": reason, "detail": detail})

    eligible: list[BenchTurn] = []
    for t in turns:
        if not t.gold:
            skip(t, "no_gold", t.answerability)
            continue
        missing = [d for d in t.gold if d not in bench.corpus]
        if missing:
            skip(t, "gold_missing", ", ".join(missing[:5]))
            continue
        empty = [d for d in t.gold if not bench.corpus[d].text.strip()]
        if empty:
            skip(t, "gold_empty", ", ".join(empty[:5]))
            continue
        eligible.append(t)

    queries: dict[str, str] = {}
    qsource: dict[str, str] = {}
    for t in eligible:
        queries[t.sample_id], qsource[t.sample_id] = build_query(t, config.negatives_query, config.query_max_chars)

    def base(t: BenchTurn) -> dict[str, Any]:
        return {"sample_id": t.sample_id, "question": t.question, "history": [list(h) for h in t.history],
                "rewrite": t.rewrite, "query": queries[t.sample_id]}

    units: list[Unit] = []
    for t in eligible:
        golds = ordered_gold(t.gold)
        if "alignment" in config.metrics:
            for d in golds[:config.max_alignment_passages]:
                units.append(Unit(bench.name, t.sample_id, "alignment", "", f"{t.sample_id}|{d}",
                                  {**base(t), "passage": _passage(bench, d)}, t.generator, doc_id=d))
        for m in ("faithfulness", "quality"):
            if m not in config.metrics:
                continue
            if not t.reference_answer.strip():
                skip(t, "no_answer", only=[(m, "")])
                continue
            units.append(Unit(bench.name, t.sample_id, m, "", t.sample_id,
                              {**base(t), "answer": t.reference_answer,
                               "passages": [_passage(bench, d) for d in golds]}, t.generator))

    csets: list[CandidateSet] = []
    neg_info: dict[str, Any] = {}
    if "distinguishability" in config.metrics and eligible:
        sources = ["retrieved", "benchmark"] if config.candidates == "both" else [config.candidates]
        for source in sources:
            vs = [(m, v) for m, v in metric_variants if m == "distinguishability" and v.startswith(source)]
            negs: dict[str, list[str] | None]
            if source == "retrieved":
                if index_dir is not None:
                    miner = NegativeMiner(bench.corpus, config.negatives, dense_model=config.dense_model,
                                          cache_dir=cache_dir, index_dir=index_dir)
                    index = index or EvidenceIndex(bench.corpus, bm25=miner.bm25)
                else:
                    index = index or EvidenceIndex(bench.corpus)
                    bm25 = index.bm25 if config.negatives in ("hybrid", "rrf", "bm25") else None
                    miner = NegativeMiner(bench.corpus, config.negatives, dense_model=config.dense_model,
                                          cache_dir=cache_dir, bm25=bm25)
                neg_info = miner.describe()
                negs = dict(miner.mine({t.sample_id: queries[t.sample_id] for t in eligible},
                                       {t.sample_id: list(t.gold) for t in eligible}, config.n_negatives))
            else:
                negs = {}
                for t in eligible:
                    n = benchmark_negatives(t, config.n_negatives)
                    negs[t.sample_id] = None if n is None else [
                        d for d in n if d in bench.corpus and bench.corpus[d].text.strip()]
            listed: list[BenchTurn] = []
            for t in eligible:
                ng = negs.get(t.sample_id)
                if ng is None:
                    skip(t, "no_candidates" if not t.candidates else "gold_not_in_candidates", only=vs)
                    continue
                if not ng:
                    skip(t, "no_negatives", only=vs)
                    continue
                listed.append(t)
            dseed = design_seed(config.seed, bench.name, source)
            slots = counterbalanced_slots({t.sample_id: len(negs[t.sample_id]) + 1 for t in listed}, dseed) \
                if config.positions == "counterbalanced" else {}
            for t in listed:
                ng = negs[t.sample_id]
                q = queries[t.sample_id] if source == "retrieved" else ""
                if config.positions == "counterbalanced":
                    cs = place_candidates(t.sample_id, primary_gold(t.gold), ng, config.seed, source,
                                          slots[t.sample_id], dseed, q)
                else:
                    cs = shuffle_candidates(t.sample_id, primary_gold(t.gold), ng, config.seed, source, q)
                csets.append(cs)
                for c in ([cs, cs.reverse()] if config.reverse_pass else [cs]):
                    units.append(Unit(bench.name, t.sample_id, "distinguishability", c.variant, t.sample_id,
                                      {**base(t), "candidates": [_passage(bench, d) for d in c.order]},
                                      t.generator, cset=c))
    index = index or EvidenceIndex(bench.corpus, index_dir=index_dir)
    return PreparedBenchmark(name=bench.name, format=bench.format, benchmark=bench, n_turns=len(bench.turns),
                             selected=[t.sample_id for t in turns], units=units, skipped=skipped,
                             candidate_sets=csets, query_source=qsource, index=index, negatives=neg_info)
