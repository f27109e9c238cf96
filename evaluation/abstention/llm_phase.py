"""The LLM phase of the abstention analysis: :class:`LLMPhase` makes every LLM call of a run
in one :class:`~agents.session.LLMSession` (query expansions and the retriever ladder,
step 1; content labels of every context, step 2; negative-control labels on borrowed contexts,
step 3; answer-model probes, step 6; the answer check, step 7) and gives :class:`LLMLabels`,
the input of :func:`evaluation.abstention.run.analyse`. Every call is a ``judge_calls`` row.
"""
from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from typing import Callable, Mapping

from agents.errors import LogprobsUnsupported
from agents.session import LLMSession
from evaluation.abstention.answer_check import GROUPS, AnswerQuestion, GroupAccuracy, JudgeAnswer, group_accuracy
from evaluation.abstention.config import AbstentionConfig
from evaluation.abstention.contexts import Context, build_contexts, step_input
from evaluation.abstention.detectors import TOP1, AnswerabilityProbe, DetectorStatus, p_answerable
from evaluation.abstention.expansions import ExpandQuery
from evaluation.abstention.judges import Judgment, make_judge, to_judgment
from evaluation.abstention.ladder import Ladder, LadderResult
from evaluation.abstention.negative_control import pair_foreign
from evaluation.abstention.roles import Roles
from storage.benchmark import Benchmark, BenchTurn
from storage.store import RunStore

Progress = Callable[[str, int, int], None]


def _item_id(key: tuple[str, tuple[str, ...]]) -> str:
    h = hashlib.sha1("\x1f".join(key[1]).encode("utf-8")).hexdigest()[:10]
    return f"{key[0]}|{h}"


def _call_row(res, purpose: str, who: str) -> dict:
    r = res.to_row()
    return {"purpose": purpose, "judge": who, **r}


@dataclass
class LLMLabels:
    """What the LLM phase of the analysis produced (steps 1-3, the answer-model probes of
    step 6 and step 7); the input of :func:`~evaluation.abstention.run.analyse`.

    Attributes:
        ladder: step 1, the retriever ladder's runs and nDCG.
        contexts: step 2, every (retriever, turn) top-k context with its rule label.
        judgments: ``{judge: {context key: Judgment}}`` (benchmark-unanswerable turns: ``no``).
        control_labels: step 3, the judges' labels on borrowed contexts (``{}``: no pairs).
        probabilities: ``{answer-model detector: {context key: P(answerable)}}``.
        detectors: availability of every detector.
        answer_check: step 7 (None when not run).
        call_rows: one ``judge_calls`` row per LLM call.
        notes: sentences for the reports (skips, failures, budget stops).
    """

    ladder: LadderResult
    contexts: list[Context]
    judgments: dict[str, dict[tuple, Judgment]]
    control_labels: dict[str, dict[tuple, Judgment]]
    probabilities: dict[str, dict[tuple, float]]
    detectors: list[DetectorStatus]
    answer_check: list[GroupAccuracy] | None
    call_rows: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class LLMPhase:
    """The LLM calls of the analysis (one :class:`LLMSession`): expansions and the ladder,
    content labels, negative-control labels, answer-model probes and the answer check."""

    def __init__(self, bench: Benchmark, turns: list[BenchTurn], cfg: AbstentionConfig, roles: Roles,
                 store: RunStore, progress: Progress) -> None:
        self.bench, self.turns, self.cfg, self.roles, self.store = bench, turns, cfg, roles, store
        self.progress = progress
        self.by_id = {t.sample_id: t for t in turns}
        self.notes: list[str] = []
        self.call_rows: list[dict] = []

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

        def pick(found: Mapping[tuple, Context]) -> list[tuple]:
            return rng.sample(sorted(found), min(n, len(found)))

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
    async def run(self) -> LLMLabels:
        cfg = self.cfg
        emb_cache = cfg.embedding_cache or str(self.store.local_dir("cache", "embeddings"))
        ladder = Ladder(self.bench, self.turns, cfg, cache_dir=emb_cache)
        primary = self.roles.judges[0].name
        async with LLMSession(self.roles.config, store=self.store) as llm:
            # step 1: ladder
            expansions, expansion_backend = await self._expansions(llm, ladder)
            self.progress("ladder", 0, len(ladder.specs))
            ladder_result = ladder.run(expansions=expansions, expansion_backend=expansion_backend)
            self.progress("ladder", len(ladder.specs), len(ladder.specs))
            # step 2: contexts, rule labels, content labels
            contexts = build_contexts(ladder_result.runs, self.turns, cfg.context_k)
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
            for j in judgments:
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
            answer_check = await self._answer_check(llm, contexts, judgments[primary])
        if not pairs:
            self.notes.append("Negative control skipped: it needs at least two conversations.")
        if dropped:
            self.notes.append(f"Negative control: {dropped} borrowed contexts held one of the turn's own qrels "
                              "passages and were dropped.")
        return LLMLabels(ladder_result, contexts, judgments, nc_labels, probs, det_status, answer_check, self.call_rows,
                         self.notes)
