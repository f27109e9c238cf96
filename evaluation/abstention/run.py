"""The verb of the package: :func:`run_abstention` runs the ten steps of the content-based
abstention analysis (``shared/docs/abstention-method.md``) on one benchmark and writes
every table, the human-review export, the relabel suggestions, a plot, a Markdown summary
and one self-contained HTML report into a run directory.

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

import asyncio
import hashlib
import math
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from agents.config import LLMConfig
from agents.errors import LogprobsUnsupported
from agents.session import LLMSession
from evaluation.abstention import schemas as S
from evaluation.abstention.agreement import Agreement, agreement
from evaluation.abstention.answer_check import GROUPS, AnswerQuestion, GroupAccuracy, JudgeAnswer, group_accuracy
from evaluation.abstention.auroc import auroc_test
from evaluation.abstention.config import AbstentionConfig, AbstentionError
from evaluation.abstention.contexts import Context, build_contexts, step_input
from evaluation.abstention.detectors import TOP1, AnswerabilityProbe, DetectorStatus, p_answerable, top1_scores
from evaluation.abstention.expansions import ExpandQuery
from evaluation.abstention.flips import Comparison, ContextRow, Flip, FlipSummary, comparisons, flips
from evaluation.abstention.judges import Judgment, make_judge, to_judgment
from evaluation.abstention.ladder import Ladder, LadderError, LadderResult
from evaluation.abstention.near_duplicates import NearDupFloor, ShingleIndex, near_dup_floor
from evaluation.abstention.negative_control import ControlResult, control_result, pair_foreign
from evaluation.abstention.provenance import PassageClass, TurnFacts, class_shares, classify, classify_contexts
from evaluation.abstention.relabel import Suggestion, suggestions, write_suggestions
from evaluation.abstention.review import sample_for_review, write_review
from evaluation.abstention.roles import Roles, model_family, resolve_roles
from evaluation.abstention.rule_metrics import RuleMetrics, rule_metrics
from evaluation.abstention.sources import PageIndex, conversation_qrels, other_turn_qrels
from evaluation.abstention.sources import hard_negatives as find_hard_negatives
from storage.benchmark import Benchmark, BenchTurn, load_benchmark
from storage.store import RunStore

Progress = Callable[[str, int, int], None]


@dataclass
class AbstentionResult:
    """Everything :func:`run_abstention` computed (the same numbers as the files it wrote).

    Attributes:
        per_retriever: the main table (primary judge), one dict per rung, ladder order.
        auroc_columns: the AUROC columns of ``per_retriever`` (``auroc:<detector>:<labelling>``).
        offline_demo: True when any part is an offline stand-in.
        stand_ins: which parts are stand-ins.
        notes: sentences shown in every report (skips, flags, failures).
        files: output paths by name.
        markdown: the summary (Prefect artifact).
    """

    out_dir: Path
    benchmark: str
    config: AbstentionConfig
    offline_demo: bool
    stand_ins: list[str]
    ladder: LadderResult
    contexts: list[Context]
    judgments: dict[str, dict[tuple, Judgment]]
    rule_metrics: dict[tuple[str, str], RuleMetrics]
    per_retriever: list[dict]
    auroc_columns: list[str]
    agreements: list[tuple[str, Agreement]]
    negative_control: dict[str, ControlResult]
    near_dup: dict[str, NearDupFloor]
    aurocs: list[dict]
    detectors: list[DetectorStatus]
    provenance: list[PassageClass]
    provenance_shares: dict[str, dict[str, dict[str, float]]]
    comparisons: list[Comparison]
    flips: list[Flip]
    flip_summaries: list[FlipSummary]
    answer_check: list[GroupAccuracy] | None
    suggestions: list[Suggestion]
    notes: list[str] = field(default_factory=list)
    files: dict[str, Path] = field(default_factory=dict)
    markdown: str = ""


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


def _item_id(key: tuple[str, tuple[str, ...]]) -> str:
    h = hashlib.sha1("\x1f".join(key[1]).encode("utf-8")).hexdigest()[:10]
    return f"{key[0]}|{h}"


def _call_row(res, purpose: str, who: str) -> dict:
    r = res.to_row()
    return {"purpose": purpose, "judge": who, **r}


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
        bench, hn = load_for_abstention(benchmark, format, domain)
    else:
        bench, hn = benchmark, find_hard_negatives(benchmark)
    if hard_negatives is not None:
        hn = {k: dict(v) for k, v in hard_negatives.items()}
    try:
        from evaluation.abstention.ladder import parse_rung
        for r in cfg.retrievers:
            parse_rung(r)
    except LadderError as exc:
        raise AbstentionError(str(exc)) from None
    roles = resolve_roles(cfg, llm_config)
    turns = select_turns(bench, cfg)
    if not turns:
        raise AbstentionError(f"benchmark {bench.name} has no turn with a relevant qrels passage to analyse")
    store = RunStore(str(out_dir)).ensure()
    analysis = _Analysis(bench, turns, cfg, roles, store, hn, progress or (lambda *a: None))
    return asyncio.run(analysis.run())


class _Analysis:
    def __init__(self, bench: Benchmark, turns: list[BenchTurn], cfg: AbstentionConfig, roles: Roles,
                 store: RunStore, hn: dict[str, dict[str, str]], progress: Progress) -> None:
        self.bench, self.turns, self.cfg, self.roles, self.store = bench, turns, cfg, roles, store
        self.hn = hn
        self.progress = progress
        self.by_id = {t.sample_id: t for t in turns}
        self.notes: list[str] = []
        self.call_rows: list[dict] = []
        self.texts = {d: doc.text for d, doc in bench.corpus.items()}
        self.judge_names = [p.name for p in roles.judges]
        self.primary = self.judge_names[0]

    # -- LLM helpers --------------------------------------------------------------------
    async def _map(self, llm: LLMSession, step, inputs: list, ids: list[str], purpose: str, who: str):
        self.progress(f"{purpose}:{who}", 0, len(inputs))
        batch = await llm.map(step, inputs, item_ids=ids, on_budget="return")
        self.progress(f"{purpose}:{who}", len(inputs), len(inputs))
        if batch.stopped_reason:
            self.notes.append(f"LLM budget reached during {purpose} ({who}): {batch.stopped_reason}; "
                              "unstarted items are missing from the statistics.")
        self.call_rows.extend(_call_row(r, purpose, who) for r in batch.items)
        return batch

    async def _judge(self, llm: LLMSession, keyed: Mapping[tuple, dict],
                     purpose: str) -> dict[str, dict[tuple, Judgment]]:
        """Every judge on every keyed input (empty contexts are ``no`` without a call)."""
        out: dict[str, dict[tuple, Judgment]] = {}
        no_ref = {k for k, x in keyed.items() if not x["reference_answer"].strip()}
        todo = [(k, x) for k, x in keyed.items() if x["passages"] and k not in no_ref]
        for part in self.roles.judges:
            labels: dict[tuple, Judgment] = {k: Judgment(part.name, "no", (), "empty context", "rule")
                                             for k, x in keyed.items() if not x["passages"] and k not in no_ref}
            labels.update({k: Judgment(part.name, None, (), "the turn has no reference answer to judge against",
                                       "none", failure="no_reference_answer") for k in no_ref})
            if todo:
                batch = await self._map(llm, make_judge(part.name, part.role), [x for _, x in todo],
                                        [_item_id(k) for k, _ in todo], purpose, part.name)
                for (k, _), res in zip(todo, batch.items):
                    labels[k] = to_judgment(part.name, res, k[1])
            out[part.name] = labels
        return out

    # -- steps ----------------------------------------------------------------------------
    async def _expansions(self, llm: LLMSession, ladder: Ladder) -> tuple[dict[str, list[str]] | None, str]:
        part = self.roles.expander
        if not ladder.needs_expansions or part.offline:
            return None, "prf"
        inputs = [{"question": t.question, "history": [list(m) for m in t.history], "n": self.cfg.n_expansions}
                  for t in self.turns]
        batch = await self._map(llm, ExpandQuery(part.role), inputs, [t.sample_id for t in self.turns],
                                "expansion", part.name)
        exps: dict[str, list[str]] = {}
        failed = 0
        for t, res in zip(self.turns, batch.items):
            if res.ok:
                exps[t.sample_id] = [e for e in res.output.expansions if e.strip()][:self.cfg.n_expansions]
            else:
                exps[t.sample_id] = []
                failed += 1
        if failed:
            self.notes.append(f"{failed} turns got no LLM expansions (failed calls): their fusion lists are empty.")
        return exps, f"llm:{part.name}"

    async def _probe(self, llm: LLMSession, keyed: Mapping[tuple, dict]) -> tuple[dict[str, dict[tuple, float]],
                                                                                   list[DetectorStatus]]:
        probs: dict[str, dict[tuple, float]] = {}
        status: list[DetectorStatus] = [DetectorStatus(TOP1, True, "retriever top-1 score (negated)")]
        todo = [(k, x) for k, x in keyed.items() if x["passages"]]
        for part in self.roles.answerers:
            name = f"answer:{part.name}"
            p: dict[tuple, float] = {k: 0.0 for k, x in keyed.items() if not x["passages"]}
            try:
                batch = await self._map(llm, AnswerabilityProbe(part.name, part.role, part.offline),
                                        [x for _, x in todo], [_item_id(k) for k, _ in todo], "probe", part.name)
            except LogprobsUnsupported as exc:
                msg = (f"Detector {name} skipped: {exc}. The answer model's first-token probability needs "
                       "logprobs, so its AUROC is not computed.")
                status.append(DetectorStatus(name, False, msg))
                self.notes.append(msg)
                continue
            missing = 0
            for (k, x), res in zip(todo, batch.items):
                v = p_answerable(res, x)
                if v is None:
                    missing += 1
                else:
                    p[k] = v
            if todo and missing == len(todo):
                msg = (f"Detector {name} skipped: no context got a usable first token (failed calls, or neither "
                       "ANSWERABLE nor UNANSWERABLE among the first token's alternatives).")
                status.append(DetectorStatus(name, False, msg, missing))
                self.notes.append(msg)
                continue
            msg = ("offline stand-in: best passage's share of question words" if part.offline
                   else "first-token P(ANSWERABLE) from endpoint logprobs")
            if missing:
                msg += f"; {missing} contexts without a usable first token are left out"
                self.notes.append(f"Detector {name}: {missing} contexts had no usable first token (failed call or "
                                  "neither label among the first token's alternatives); they are left out.")
            status.append(DetectorStatus(name, True, msg, missing))
            probs[name] = p
        return probs, status

    async def _answer_check(self, llm: LLMSession, contexts: list[Context],
                            labels: Mapping[tuple, Judgment]) -> list[GroupAccuracy] | None:
        if not self.cfg.answer_check:
            return None
        if not self.roles.answerers:
            self.notes.append("Answer check skipped: no answer model.")
            return None
        rng = random.Random(self.cfg.seed)
        fm: dict[tuple, Context] = {}
        un: dict[tuple, Context] = {}
        for c in contexts:
            j = labels.get(c.key)
            if j is None or not c.gold or not c.doc_ids:
                continue
            if c.rule_unanswerable and j.label == "yes":
                fm.setdefault(c.key, c)
            elif j.label == "no" and j.backend != "rule":
                un.setdefault(c.key, c)
        n = self.cfg.answer_check_n
        pick = lambda d: rng.sample(sorted(d), min(n, len(d)))  # noqa: E731
        fm_keys, un_keys = pick(fm), pick(un)
        nc_ids = list(dict.fromkeys(k[0] for k in fm_keys))
        groups: dict[str, list[dict]] = {
            "false_miss": [step_input(self.bench, self.by_id[k[0]], k[1], self.cfg.max_passage_chars) for k in fm_keys],
            "unanswerable": [step_input(self.bench, self.by_id[k[0]], k[1], self.cfg.max_passage_chars)
                             for k in un_keys],
            "no_context": [step_input(self.bench, self.by_id[s], (), self.cfg.max_passage_chars) for s in nc_ids]}
        ans_part, judge_part = self.roles.answerers[0], self.roles.judges[0]
        out = []
        for g in GROUPS:
            xs = groups[g]
            if not xs:
                out.append(group_accuracy(g, []))
                continue
            ids = [f"{g}|{i}" for i in range(len(xs))]
            answers = await self._map(llm, AnswerQuestion(ans_part.role, ans_part.offline), xs, ids,
                                      f"answer-check:{g}", ans_part.name)
            cx, cids, pos = [], [], []
            for i, (x, res) in enumerate(zip(xs, answers.items)):
                if res.ok:
                    cx.append({"question": x["question"], "reference_answer": x["reference_answer"],
                               "answer": res.output.text})
                    cids.append(ids[i])
                    pos.append(i)
            verdicts: list[bool | None] = [None] * len(xs)
            if cx:
                judged = await self._map(llm, JudgeAnswer(judge_part.role, judge_part.offline), cx, cids,
                                         f"answer-check-judge:{g}", judge_part.name)
                for i, res in zip(pos, judged.items):
                    verdicts[i] = res.output.correct if res.ok else None
            out.append(group_accuracy(g, verdicts))
        return out

    # -- main -----------------------------------------------------------------------------
    async def run(self) -> AbstentionResult:
        cfg = self.cfg
        emb_cache = cfg.embedding_cache or str(self.store.local_dir("cache", "embeddings"))
        ladder = Ladder(self.bench, self.turns, cfg, cache_dir=emb_cache)
        async with LLMSession(self.roles.config, store=self.store) as llm:
            # step 1: ladder
            exps, exp_backend = await self._expansions(llm, ladder)
            self.progress("ladder", 0, len(ladder.specs))
            lres = ladder.run(expansions=exps, expansion_backend=exp_backend)
            self.progress("ladder", len(ladder.specs), len(ladder.specs))
            # step 2: contexts, rule labels, content labels
            contexts = build_contexts(lres.runs, self.turns, cfg.context_k)
            judged_keys: dict[tuple, dict] = {}
            fixed: dict[tuple, Judgment] = {}
            for c in contexts:
                if c.benchmark_unanswerable:
                    fixed.setdefault(c.key, Judgment("", "no", (), "benchmark: no relevant passage for this turn",
                                                     "benchmark"))
                elif c.key not in judged_keys:
                    judged_keys[c.key] = step_input(self.bench, self.by_id[c.sample_id], c.doc_ids,
                                                    cfg.max_passage_chars)
            judgments = await self._judge(llm, judged_keys, "judge")
            n_no_ref = len({k[0] for k, x in judged_keys.items() if not x["reference_answer"].strip()})
            if n_no_ref:
                self.notes.append(f"{n_no_ref} turns have no reference answer: their contexts are not judged and "
                                  "are left out of every content-label statistic.")
            for j in self.judge_names:
                for k, v in fixed.items():
                    judgments[j][k] = Judgment(j, v.label, (), v.reason, v.backend)
            # step 3: negative control
            nc_ctx = [c for c in contexts if c.retriever == cfg.nc_retriever and not c.benchmark_unanswerable]
            pairs, dropped = pair_foreign(nc_ctx)
            nc_inputs: dict[tuple, dict] = {}
            for p in pairs:
                nc_inputs[(p.sample_id, p.doc_ids)] = step_input(self.bench, self.by_id[p.sample_id], p.doc_ids,
                                                                 cfg.max_passage_chars)
            nc_labels = await self._judge(llm, nc_inputs, "negative-control") if nc_inputs else {}
            # step 6 (scores): answer-model probes
            probe_keys = {**judged_keys}
            for c in contexts:
                if c.key not in probe_keys:
                    probe_keys[c.key] = step_input(self.bench, self.by_id[c.sample_id], c.doc_ids,
                                                   cfg.max_passage_chars)
            probs, det_status = await self._probe(llm, probe_keys)
            # step 7
            answer_check = await self._answer_check(llm, contexts, judgments[self.primary])
        if not pairs:
            self.notes.append("Negative control skipped: it needs at least two conversations.")
        if dropped:
            self.notes.append(f"Negative control: {dropped} borrowed contexts held one of the turn's own qrels "
                              "passages and were dropped.")
        return self._finish(lres, contexts, judgments, nc_labels, probs, det_status, answer_check)

    # -- statistics and outputs -------------------------------------------------------------
    def _finish(self, lres: LadderResult, contexts: list[Context], judgments: dict[str, dict[tuple, Judgment]],
                nc_labels: dict[str, dict[tuple, Judgment]], probs: dict[str, dict[tuple, float]],
                det_status: list[DetectorStatus], answer_check: list[GroupAccuracy] | None) -> AbstentionResult:
        cfg = self.cfg
        retrievers = list(lres.runs)
        by_r: dict[str, list[Context]] = {r: [c for c in contexts if c.retriever == r] for r in retrievers}

        # step 5: rule metrics per (retriever, judge)
        rm: dict[tuple[str, str], RuleMetrics] = {}
        for r in retrievers:
            for j in self.judge_names:
                lab = [judgments[j].get(c.key) for c in by_r[r]]
                rm[(r, j)] = rule_metrics([c.rule_unanswerable for c in by_r[r]],
                                          [x.label if x is not None else None for x in lab])

        # step 2: agreement of the primary judge with every other judge
        agreements: list[tuple[str, Agreement]] = []
        for other in self.judge_names[1:]:
            def pair_labels(ctxs):
                la, lb = [], []
                for c in ctxs:
                    a, b = judgments[self.primary].get(c.key), judgments[other].get(c.key)
                    if a is None or b is None or a.backend in ("rule", "benchmark", "none"):
                        continue
                    la.append(a.label)
                    lb.append(b.label)
                return la, lb
            for r in retrievers:
                la, lb = pair_labels(by_r[r])
                agreements.append((r, agreement(self.primary, la, other, lb)))
            uniq = list({c.key: c for c in contexts}.values())
            la, lb = pair_labels(uniq)
            agreements.append(("all (unique contexts)", agreement(self.primary, la, other, lb)))
            fam_a, fam_b = model_family(self.primary), model_family(other)
            if fam_a == fam_b and not (self.roles.judges[0].offline and self.roles.judges[1].offline):
                self.notes.append(f"Judges {self.primary} and {other} look like the same model family ({fam_a}); "
                                  "the method asks for a second judge of another family.")

        # step 3
        nc: dict[str, ControlResult] = {}
        for j in self.judge_names:
            if nc_labels:
                nc[j] = control_result(j, [x.label for x in nc_labels[j].values()], cfg.negative_control_ceiling)
                if nc[j].unfit:
                    self.notes.append(f"Judge {j} is flagged UNFIT: it says yes to {nc[j].yes_rate:.1%} of other "
                                      f"conversations' contexts (ceiling {cfg.negative_control_ceiling:.0%}).")

        # step 4
        shingle_index = ShingleIndex(self.texts, cfg.near_dup_ngram)
        floors = near_dup_floor([c for c in contexts if c.gold], shingle_index, cfg.near_dup_threshold)

        # step 6: detectors and AUROC
        det_scores: dict[str, dict[tuple[str, str], float]] = {TOP1: {}}
        for r in retrievers:
            for c, s in zip(by_r[r], top1_scores(by_r[r])):
                det_scores[TOP1][(r, c.sample_id)] = s
        abstain: dict[str, dict[tuple[str, str], bool]] = {}
        for name, p in probs.items():
            det_scores[name] = {}
            abstain[name] = {}
            for c in contexts:
                if c.key in p:
                    det_scores[name][(c.retriever, c.sample_id)] = 1.0 - p[c.key]
                    abstain[name][(c.retriever, c.sample_id)] = p[c.key] < cfg.abstain_threshold
        detectors = list(det_scores)
        models = list(abstain)
        labellings = ["rule"] + [f"content:{j}" for j in self.judge_names]

        def content_value(j: Judgment | None) -> int | None:
            if j is None or j.label is None:
                return None
            if j.label == "partial":
                return None if cfg.partial == "exclude" else 0
            return 1 if j.label == "no" else 0

        rows: list[ContextRow] = []
        for c in contexts:
            labs: dict[str, int | None] = {"rule": int(c.rule_unanswerable)}
            for j in self.judge_names:
                labs[f"content:{j}"] = content_value(judgments[j].get(c.key))
            k2 = (c.retriever, c.sample_id)
            rows.append(ContextRow(c.retriever, c.sample_id, labs,
                                   {d: det_scores[d].get(k2) for d in detectors},
                                   {m: abstain[m].get(k2) for m in models}))
        aurocs: list[dict] = []
        for r in retrievers:
            rr = [x for x in rows if x.retriever == r]
            for d in detectors:
                for lab in labellings:
                    v = [(x.labels[lab], x.scores[d]) for x in rr
                         if x.labels[lab] is not None and x.scores[d] is not None]
                    res = auroc_test([a for a, _ in v], [b for _, b in v])
                    aurocs.append({"retriever": r, "detector": d, "labelling": lab, "auroc": res.auroc,
                                   "n_pos": res.n_pos, "n_neg": res.n_neg, "p_value": res.p_value})

        # step 8: provenance of false-miss answers (primary judge)
        pages = PageIndex(self.bench.corpus)
        conv_q = conversation_qrels(self.bench)
        facts = {t.sample_id: TurnFacts(qrels=frozenset(d for d, g in t.gold.items() if g >= 1),
                                        hard_negatives=frozenset(self.hn.get(t.sample_id, {})),
                                        other_turn_qrels=other_turn_qrels(conv_q, t.conv_id, t.sample_id))
                 for t in self.turns}
        fm_items = []
        for c in contexts:
            j = judgments[self.primary].get(c.key)
            if c.gold and c.rule_unanswerable and j is not None and j.label == "yes":
                fm_items.append((c.retriever, c.sample_id, c.doc_ids, j.supporting))
        prov = classify_contexts(fm_items, facts, shingle_index, pages, cfg.near_dup_threshold, cfg.neighbour_window)
        prov_shares = {"supporting": class_shares(prov, True), "all_passages": class_shares(prov, False)}

        # step 9: comparison flips
        comps: dict[str, list[Comparison]] = {
            lab: comparisons(rows, lab, retrievers, detectors, models, cfg.alpha, cfg.n_resamples, cfg.seed)
            for lab in labellings}
        flip_rows: list[Flip] = []
        summaries: list[FlipSummary] = []
        pairs = [("rule", f"content:{self.primary}")]
        if len(self.judge_names) > 1:
            pairs.append((f"content:{self.primary}", f"content:{self.judge_names[1]}"))
        for a, b in pairs:
            fr, fs = flips(comps[a], comps[b])
            flip_rows.extend(fr)
            summaries.append(fs)

        # step 10: relabel suggestions
        def cls_of(sid: str, d: str) -> str:
            return classify(d, facts[sid], shingle_index, pages, cfg.near_dup_threshold, cfg.neighbour_window)

        def jac(sid: str, d: str) -> float:
            return max((shingle_index.similarity(d, q) for q in facts[sid].qrels), default=0.0)

        sugg = suggestions(contexts, judgments, self.judge_names, self.hn, cls_of, jac)

        # main table
        first_model = models[0] if models else None
        auroc_cols: list[str] = []
        for d in detectors:
            for lab in ("rule", f"content:{self.primary}"):
                auroc_cols.append(f"auroc:{d}:{'rule' if lab == 'rule' else 'content'}")
        per_retriever: list[dict] = []
        for i, r in enumerate(retrievers):
            m = rm[(r, self.primary)]
            row: dict[str, Any] = {
                "position": i + 1, "retriever": r, "judge": self.primary, "ndcg": lres.ndcg[r],
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
                dec = [(x, x.abstain[first_model]) for x in rows
                       if x.retriever == r and x.abstain[first_model] is not None]
                if dec:
                    row["model_abstention"] = sum(a for _, a in dec) / len(dec)
                    for lab, col in (("rule", "abstention_accuracy_rule"),
                                     (f"content:{self.primary}", "abstention_accuracy_content")):
                        ok = [bool(a) == bool(x.labels[lab]) for x, a in dec if x.labels[lab] is not None]
                        row[col] = sum(ok) / len(ok) if ok else math.nan
            for a in aurocs:
                if a["retriever"] == r and a["labelling"] in ("rule", f"content:{self.primary}"):
                    row[f"auroc:{a['detector']}:{'rule' if a['labelling'] == 'rule' else 'content'}"] = a["auroc"]
            per_retriever.append(row)

        stand = self.roles.stand_ins
        if stand:
            self.notes.insert(0, "DEMONSTRATION: offline stand-ins are in use (" + "; ".join(stand) + "). "
                              "The numbers show the method at work; they are not a finding.")
        result = AbstentionResult(
            out_dir=Path(self.store.path), benchmark=self.bench.name, config=cfg, offline_demo=bool(stand),
            stand_ins=stand, ladder=lres, contexts=contexts, judgments=judgments, rule_metrics=rm,
            per_retriever=per_retriever, auroc_columns=auroc_cols, agreements=agreements, negative_control=nc,
            near_dup=floors, aurocs=aurocs, detectors=det_status, provenance=prov, provenance_shares=prov_shares,
            comparisons=[c for lab in labellings for c in comps[lab]], flips=flip_rows, flip_summaries=summaries,
            answer_check=answer_check, suggestions=sugg, notes=self.notes)
        self._write(result, det_scores, abstain, probs)
        return result

    def _write(self, res: AbstentionResult, det_scores, abstain, probs) -> None:
        from evaluation.abstention.report import write_outputs
        st = self.store
        cfg = self.cfg
        st.write_table("ladder", S.to_table([
            {"position": i + 1, "retriever": r, "description": res.ladder.descriptions[r], "ndcg": res.ladder.ndcg[r],
             "recall_at_context_k": res.ladder.recall[r], "n_queries": res.ladder.n_queries}
            for i, r in enumerate(res.ladder.runs)], S.LADDER), S.LADDER)
        st.write_table("contexts", S.to_table([
            {"retriever": c.retriever, "sample_id": c.sample_id, "conv_id": c.conv_id, "turn": c.turn,
             "answerability": c.answerability, "doc_ids": list(c.doc_ids), "scores": list(c.scores),
             "gold": sorted(c.gold), "rule_unanswerable": c.rule_unanswerable, "top1": c.top1}
            for c in res.contexts], S.CONTEXTS), S.CONTEXTS)
        st.write_table("content_labels", S.to_table([
            {"retriever": c.retriever, "sample_id": c.sample_id, "judge": j, "label": jm.label,
             "supporting": list(jm.supporting), "reason": jm.reason, "backend": jm.backend, "model": jm.model,
             "failure": jm.failure}
            for c in res.contexts for j in self.judge_names for jm in [res.judgments[j].get(c.key)] if jm is not None],
            S.CONTENT_LABELS), S.CONTENT_LABELS)
        st.write_table("judge_calls", S.to_table(self.call_rows, S.JUDGE_CALLS), S.JUDGE_CALLS)
        st.write_table("rule_metrics", S.to_table([{"retriever": r, "judge": j, **m.to_dict()}
                                                   for (r, j), m in res.rule_metrics.items()], S.RULE_METRICS),
                       S.RULE_METRICS)
        schema = S.per_retriever_schema(res.auroc_columns)
        st.write_table("per_retriever", S.to_table(res.per_retriever, schema), schema)
        st.write_table("agreement", S.to_table([{"retriever": r, **a.to_dict()} for r, a in res.agreements],
                                               S.AGREEMENT), S.AGREEMENT)
        st.write_table("negative_control", S.to_table([r.to_dict() for r in res.negative_control.values()],
                                                      S.NEGATIVE_CONTROL), S.NEGATIVE_CONTROL)
        st.write_table("near_duplicates", S.to_table([
            {"retriever": f.retriever, "sample_id": sid, "doc_id": d.doc_id, "qrels_doc": d.qrels_doc,
             "jaccard": d.jaccard} for f in res.near_dup.values() for sid, d in f.pairs], S.NEAR_DUPLICATES),
            S.NEAR_DUPLICATES)
        ds_rows = []
        for d, sc in det_scores.items():
            for (r, sid), s in sc.items():
                p = None
                ab = None
                if d in abstain:
                    ab = abstain[d].get((r, sid))
                    p = 1.0 - s
                ds_rows.append({"retriever": r, "sample_id": sid, "detector": d, "score": s, "p_answerable": p,
                                "abstain": ab})
        st.write_table("detector_scores", S.to_table(ds_rows, S.DETECTOR_SCORES), S.DETECTOR_SCORES)
        st.write_table("auroc", S.to_table(res.aurocs, S.AUROC), S.AUROC)
        st.write_table("provenance", S.to_table([
            {"retriever": p.retriever, "sample_id": p.sample_id, "doc_id": p.doc_id, "cls": p.cls,
             "supporting": p.supporting} for p in res.provenance], S.PROVENANCE), S.PROVENANCE)
        st.write_table("comparisons", S.to_table([c.to_dict() for c in res.comparisons], S.COMPARISONS), S.COMPARISONS)
        st.write_table("flips", S.to_table([f.to_dict() for f in res.flips], S.FLIPS), S.FLIPS)
        if res.answer_check is not None:
            st.write_table("answer_check", S.to_table([g.to_dict() for g in res.answer_check], S.ANSWER_CHECK),
                           S.ANSWER_CHECK)
        note = res.notes[0] if res.offline_demo else ""
        sample = sample_for_review(res.contexts, cfg.review_n, cfg.seed)
        review = write_review(sample, self.bench, st.path, {j: {k: v.label for k, v in res.judgments[j].items()}
                                                            for j in self.judge_names}, cfg.context_k, note)
        res.files.update({f"review_{k}": v for k, v in review.items()})
        sug = write_suggestions(res.suggestions, st.path, self.texts, self.by_id, note)
        res.files.update({f"relabel_{k}": v for k, v in sug.items()})
        if len(sample) < min(100, cfg.review_n):
            res.notes.append(f"Only {len(sample)} rule-unanswerable contexts were available for the human-review "
                             "sample (100-200 recommended).")
        write_outputs(res)
        st.write_manifest(abstention={
            "benchmark": self.bench.name, "config": cfg.model_dump(mode="json"), "offline_demo": res.offline_demo,
            "stand_ins": res.stand_ins, "notes": res.notes, "n_turns": len(self.turns),
            "judges": [{"name": p.name, "role": p.role, "offline": p.offline} for p in self.roles.judges],
            "answer_models": [{"name": p.name, "role": p.role, "offline": p.offline} for p in self.roles.answerers],
            "expander": {"name": self.roles.expander.name, "offline": self.roles.expander.offline},
            "detectors": [{"name": d.name, "available": d.available, "message": d.message} for d in res.detectors],
            "files": {k: str(v) for k, v in res.files.items()}})


__all__ = ["AbstentionResult", "load_for_abstention", "run_abstention", "select_turns"]
