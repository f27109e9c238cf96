"""Prefect flow ``synthesize``: plan + uniqueness index -> batches of conversations (a task per batch) -> tables + exports.

Orchestration only (logic: ``agents.synth.run``, ``storage.exports``). The conversations are
planned, the synthesis key computed and the uniqueness index built (or opened) once per run,
in one task; each batch gets its plans and the key, and opens the corpus and the persisted,
memory-mapped index once per process (shared by every batch). Batches run one
after another, each with ``synth.concurrency`` conversations in flight and the LLM layer's
own limits; a progress artifact shows conversations done / total, LLM calls, tokens and
cost so far. A budget stop ends the run cleanly: later batches do not start, everything so
far is assembled and saved, and the reason is recorded in the manifest.

A run on an object store (``s3://``) keeps the checkpoint database and the LLM cache on each machine's disk:
the checkpoints are published at every batch boundary and merged back before a batch or a read of the states
(:mod:`storage.sqlite_sync`), the LLM cache is written through (:class:`storage.run_files.ObjectMirror`), and the
exports folder is pushed once written (:func:`storage.run_files.push_dir`), so workers need no shared disk and a
worker lost mid-batch costs the graph steps since its last batch boundary, never an answered LLM call.

On the Dask or Ray runner (``scale.runner = "dask"`` / ``"ray"``, ``mtr synthesize --runner dask``) the batches
run in parallel, ``scale.workers`` at a time, each in a worker process with its own event loop (one
process's loop is CPU-bound at high concurrency: ``benchmarks/synthesis.py``). The conversations,
checkpoints and LLM cache are the same as on the default runner (the conversations are independent and
seeded by id; the checkpoint database and the cache take concurrent writers; a remote worker needs the run
directory on a shared filesystem). With a budget cap, each
batch that starts gets an equal share of what the caps leave after the recorded spend and the shares of
the batches still running (:func:`agents.budget.batch_allowance`): together they never exceed the cap.

With ``scale.llm_concurrency_limit`` set, each batch holds one slot of that Prefect global
concurrency limit while it runs, so many workers (or many flow runs) sharing an endpoint
never have more than the limit's batches in flight. The limit must exist on the server
(``prefect gcl create NAME --limit N``); a missing one is an error, not an unbounded run.
"""
from __future__ import annotations

import os
import socket
from contextlib import nullcontext
from dataclasses import asdict
from pathlib import Path

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_progress_artifact, update_progress_artifact
from prefect.cache_policies import NO_CACHE
from prefect.concurrency.sync import concurrency
from prefect.context import FlowRunContext
from prefect.futures import as_completed
from prefect.runtime import task_run
from prefect.task_runners import ThreadPoolTaskRunner

from agents.budget import batch_allowance
from agents.config import BudgetConfig, LLMConfig
from agents.secrets import redact
from agents.session import run_spend
from embedding.stage import default_cache_dir
from evaluation.card import cost_section, examples_section, realism_section
from evaluation.card_quality import audit_section, gate_section, write_audit_section
from evaluation.realism import question_stats, turn_health
from flows.config import MTRConfig
from flows.pipeline import _api_for_workers, task_runner_for
from flows.prefect_env import prefect_run_settings, publish_markdown, slug
from flows.progress import report
from retrieval.queries import QueryBuilder
from storage.benchmark import load_benchmark
from storage.exports import export_benchmark
from storage.run_files import location, pull_dir, push_dir
from storage.sqlite_sync import pull_sqlite, push_sqlite
from storage.store import RunStore


def llm_config_for(cfg: MTRConfig):
    """The LLM layer config: the file given in ``llm_config``, else the explicit offline backend."""
    llm = LLMConfig.from_file(cfg.llm_config) if cfg.llm_config else LLMConfig(backend="offline")
    if cfg.llm_cache_dir:
        llm = llm.model_copy(update={"cache": llm.cache.model_copy(update={"dir": cfg.llm_cache_dir})})
    return llm


def _searcher(store: RunStore, corpus: dict, cfg: MTRConfig, corpus_sha: str):
    from agents.synth.run import corpus_searcher   # costly: langgraph
    return corpus_searcher(store, corpus, cfg.synth.uniqueness_retriever, str(default_cache_dir(store, cfg)),
                           corpus_sha=corpus_sha)


@task(name="synthesis-plan-and-index", cache_policy=NO_CACHE, tags=["mtr", "stage:synthesize"])
def prepare_task(run_dir: str, config: dict) -> dict:
    """Once per run: the conversation plans, the synthesis key and the uniqueness index (built
    and persisted under ``<run>/cache/uniqueness`` the first time, opened memory-mapped after)."""
    from agents.synth.replace import replacement_cap
    from agents.synth.run import (corpus_hash, load_plan_inputs, offline_language_note, plan_conversations,   # costly:
                                  synthesis_key)                                                         # langgraph
    cfg = MTRConfig.model_validate(config)
    store = RunStore(run_dir)
    clusters, cvecs, corpus = load_plan_inputs(store)
    if note := offline_language_note(corpus, llm_config_for(cfg)):
        get_run_logger().warning(note)
    plans = plan_conversations(clusters, cvecs, cfg.synth)
    n_spares = replacement_cap(len(plans), cfg.synth.max_replaced_share) if cfg.synth.min_turns_kept > 0 else 0
    spares = plan_conversations(clusters, cvecs, cfg.synth, spares=n_spares) if n_spares else []
    sha = corpus_hash(corpus)
    _searcher(store, corpus, cfg, sha)
    return {"plans": [asdict(p) for p in plans], "spares": [asdict(p) for p in spares], "corpus_sha": sha,
            "key": synthesis_key(corpus, llm_config_for(cfg), cfg.synth, corpus_sha=sha)}


def _batch_name() -> str:
    p = task_run.parameters
    return f"synth-batch-{p['index']}[{Path(p['run_dir']).name}]"


def llm_slot(cfg: MTRConfig):
    """One slot of the configured Prefect global concurrency limit, or nothing when none is set."""
    name = cfg.scale.llm_concurrency_limit
    if not name:
        return nullcontext()
    return concurrency(name, occupy=1, strict=True, raise_on_lease_renewal_failure=False)


@task(name="synthesize-batch", cache_policy=NO_CACHE, task_run_name=_batch_name, tags=["mtr", "stage:synthesize"])
def synth_batch(run_dir: str, config: dict, plans: list[dict], key: str, corpus_sha: str, total: int,
                index: int, budget_share: dict | None = None) -> dict:
    """One batch of the plans made by :func:`prepare_task` (the corpus and the persisted
    uniqueness index are opened once per process and shared by the batches). ``budget_share``:
    this batch's allowance when batches run in parallel (the run's caps otherwise)."""
    from agents.synth.run import ConvPlan, checkpoint_db, load_corpus, synthesize_batch   # costly: langgraph
    cfg = MTRConfig.model_validate(config)
    store = RunStore(run_dir)
    if not store.has_table("chunks"):
        raise RuntimeError(f"run directory {run_dir} is not visible on {socket.gethostname()}: synthesis batches on a "
                           "Dask cluster read and write the run directory, so remote workers need it on a shared "
                           "filesystem at the same path")
    corpus = load_corpus(store)
    search = _searcher(store, corpus, cfg, corpus_sha)
    chosen = [ConvPlan.from_dict(p) for p in plans]
    llm = llm_config_for(cfg)
    if budget_share is not None:
        llm = llm.model_copy(update={"budget": BudgetConfig.model_validate(budget_share)})
    db = checkpoint_db(store)
    pull_sqlite(store, db)      # an object-store run: what other (or lost) workers checkpointed, up to their last batch
    try:
        with llm_slot(cfg):
            out = synthesize_batch(store, chosen, corpus, llm, cfg.synth, search,
                                   progress=lambda n: report("synthesize", n, total), key=key,
                                   seed_budget=budget_share is None)
    except BaseException:
        try:
            push_sqlite(store, db)
        except Exception:  # noqa: BLE001 - the batch's own error is the one to report
            pass
        raise
    push_sqlite(store, db)      # the batch boundary: this worker's checkpoints to the store
    done = sum(1 for s in out["states"].values() if s.get("done"))
    stopped = out["stopped"]
    if stopped and budget_share is not None:
        stopped += " (this batch's share of the run's budget: batches run in parallel)"
    return {"done": done, "stopped": stopped, "llm_totals": out["llm_totals"], "pid": os.getpid()}


def batches_at_once(cfg: MTRConfig) -> int:
    """Synthesis batches in flight: ``scale.workers`` when this flow runs on a task runner of worker
    processes (``run_synthesis`` with ``scale.runner = "dask"`` or ``"ray"``), else 1 (one after another in this
    process; also when the flow runs as a subflow on the default thread pool)."""
    ctx = FlowRunContext.get()
    runner = getattr(ctx, "task_runner", None)
    return cfg.scale.workers if runner is not None and not isinstance(runner, ThreadPoolTaskRunner) else 1


def _add_totals(acc: dict, totals: dict) -> dict:
    """Per-role LLM totals of the batches so far (each batch reports its own session's)."""
    for role, t in (totals or {}).items():
        a = acc.setdefault(role, {})
        for k, v in t.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                a[k] = a.get(k, 0) + v
    return acc


def run_batches(run_dir: str, config: dict, batches: list[list[dict]], prep: dict, total: int, on_done) -> str | None:
    """Run the synthesis batches, ``batches_at_once`` at a time; ``on_done(result)`` after each one.
    Returns the budget stop reason, or None. After a stop no batch starts; running ones finish."""
    cfg = MTRConfig.model_validate(config)
    width = batches_at_once(cfg)
    common = {"run_dir": run_dir, "config": config, "key": prep["key"], "corpus_sha": prep["corpus_sha"],
              "total": total}
    if width <= 1:
        for i, batch in enumerate(batches):
            r = synth_batch(plans=batch, index=i, **common)
            on_done(r)
            if r["stopped"]:
                return r["stopped"]
        return None
    caps = llm_config_for(cfg).budget
    capped = caps.max_tokens is not None or caps.max_usd is not None
    store = RunStore(run_dir)
    queue = list(enumerate(batches))
    running: dict = {}          # future -> the batch's allowance (None without caps)
    stopped: str | None = None
    with _api_for_workers():
        while queue or running:
            while queue and len(running) < width and stopped is None:
                i, batch = queue.pop(0)
                share = None
                if capped:
                    spent_t, spent_usd = run_spend(store, store.run_id)
                    share = batch_allowance(caps, spent_t, spent_usd, [s for s in running.values() if s is not None],
                                            min(width - len(running), len(queue) + 1))
                fut = synth_batch.submit(plans=batch, index=i, budget_share=None if share is None else share.model_dump(),
                                         **common)
                running[fut] = share
            if not running:
                break
            fut = next(as_completed(list(running)))
            running.pop(fut)
            r = fut.result()
            report("synthesize", r["done"], total)      # (a worker process has no progress bar to advance)
            on_done(r)
            if r["stopped"] and stopped is None:
                stopped = r["stopped"]
    return stopped


def export_query_texts(mode: str, messages: dict, rewrites: dict) -> dict[str, str]:
    """The query text of every turn in one export mode (the retrieval layer's query builder)."""
    return QueryBuilder(mode=mode).build_all(messages, rewrites)


def card_sections(store, synth_cfg) -> list[str]:
    """The dataset card's evaluation-layer sections (:mod:`evaluation.card`): realism
    statistics, three example conversations and the cost per role. Difficulty per turn and
    per switch needs an evaluation and is added by ``mtr demo`` / ``mtr evaluate`` runs."""
    turns = store.read_table("turns").to_pylist()
    calls = store.read_table("llm_calls").to_pylist() if store.has_table("llm_calls") else []
    sections = [realism_section(question_stats(load_benchmark(store.path, "ours")), turn_health(turns))] if turns else []
    sections += [examples_section(turns),
                 cost_section(calls, sum(t["status"] == "ok" for t in turns), synth_cfg.minutes_per_turn_human,
                              synth_cfg.human_hourly_usd, synth_cfg.human_cost_source)]
    return sections


def quality_sections(store, cfg: MTRConfig) -> list[str]:
    """The card's quality sections (:mod:`evaluation.card_quality`): the gate's rejections per check, role and model,
    and the self-audit's place (filled in by :func:`self_audit_task` once the audit has run; with ``--no-audit`` it
    says so)."""
    gate = store.read_table("gate_rejections").to_pylist() if store.has_table("gate_rejections") else []
    turns = store.read_table("turns", columns=["status"]).column("status").to_pylist()
    sections = [gate_section(gate, cfg.synth.gate.mode, cfg.synth.gate.resolved(), sum(s == "ok" for s in turns),
                             len({r["sample_id"] for r in gate if r["final"]}), cfg.synth.gate.skip)]
    sections.append(audit_section(None, "the audit is running" if cfg.self_audit.enabled
                                  else "turned off (`--no-audit` / `self_audit.enabled = false`)"))
    return sections


@task(name="self-audit", cache_policy=NO_CACHE, tags=["mtr", "stage:audit"])
def self_audit_task(run_dir: str, config: dict, card: str | None, stopped: str | None = None) -> dict:
    """MTR-Eval on the new benchmark, into ``<run>/audit`` and the run's ``self_audit`` table
    (:func:`evaluation.audit.self_audit.self_audit_or_reason`), then its section on the card. After a budget stop no
    LLM judge spends more."""
    from evaluation.audit.self_audit import self_audit_or_reason   # costly: the judges' indexes (bm25s, torch)
    cfg = MTRConfig.model_validate(config)
    store = RunStore(run_dir)
    a = cfg.self_audit
    if card and store.remote:      # this process may not be the one that wrote the exports
        card = str(pull_dir(store, "export") / "README.md")
    result = self_audit_or_reason(run_dir, llm_config_for(cfg), judges=a.judges,
                                  llm_judges=a.llm_judges and not stopped,
                                  options={"sample": a.sample, "reverse_pass": a.reverse_pass,
                                           "embedding_cache": str(default_cache_dir(store, cfg))})
    write_audit_section(card, result)
    if card:
        push_dir(store, "export")
    return result


def complete_rounds(run_dir: str, config: dict, prep: dict, run_round) -> dict:
    """The planned conversations, then rounds of spares for the short ones (:mod:`agents.synth.replace`).
    ``run_round(plans)`` runs one round's plans (dicts) as batches and returns the budget stop reason or None."""
    from agents.synth.replace import complete_conversations, replacement_cap   # costly: langgraph
    from agents.synth.run import ConvPlan, checkpoint_db, read_states
    cfg = MTRConfig.model_validate(config)
    store = RunStore(run_dir)

    def run(plans: list) -> tuple[dict, str | None]:
        stopped = run_round([asdict(p) for p in plans])
        pull_sqlite(store, checkpoint_db(store))     # batches of other worker processes (an object-store run)
        return read_states(store, plans, prep["key"]), stopped   # the batches' checkpoints only

    plans = [ConvPlan.from_dict(p) for p in prep["plans"]]
    done = complete_conversations(plans, [ConvPlan.from_dict(p) for p in prep.get("spares") or []], run,
                                  cfg.synth.min_turns_kept, replacement_cap(len(plans), cfg.synth.max_replaced_share))
    return {**done, "plans": [asdict(p) for p in done["plans"]], "states": None}


@task(name="assemble-and-export", cache_policy=NO_CACHE, tags=["mtr", "stage:export"])
def assemble_task(run_dir: str, config: dict, plans: list[dict], key: str, completion: dict | None = None) -> dict:
    from agents.synth.run import ConvPlan, assemble, checkpoint_db, read_states   # costly: langgraph
    cfg = MTRConfig.model_validate(config)
    store = RunStore(run_dir)
    chosen = [ConvPlan.from_dict(p) for p in plans]
    pull_sqlite(store, checkpoint_db(store))
    summary = assemble(store, chosen, read_states(store, chosen, key), cfg.synth,   # the batches' checkpoints only
                       completion=completion)
    exp = export_benchmark(store, minutes_per_turn=cfg.synth.minutes_per_turn_human,
                           hourly_usd=cfg.synth.human_hourly_usd, query_texts=export_query_texts,
                           human_cost_source=cfg.synth.human_cost_source,
                           card_sections=card_sections(store, cfg.synth) + quality_sections(store, cfg))
    push_dir(store, "export")        # an object-store run: the exports folder to the store
    return {"summary": summary, "export": {**exp, "location": location(store, "export")}}


@flow(name="mtr-synthesize", flow_run_name="synthesize-{run_name}")
def synthesize_flow(run_dir: str, config: dict, run_name: str = "") -> dict:
    logger = get_run_logger()
    cfg = MTRConfig.model_validate(config)
    prep = prepare_task(run_dir=run_dir, config=config)      # plans, key and uniqueness index: once per run
    bs = cfg.synth.batch_size
    progress_id = None
    try:
        progress_id = create_progress_artifact(progress=0.0, description="conversations done / total")
    except Exception:  # noqa: BLE001 - artifacts are best effort
        pass
    done, finished, n_batches, total, totals = 0, 0, 0, 0, {}

    def on_done(r: dict) -> None:
        nonlocal done, finished
        done += r["done"]
        finished += 1
        _add_totals(totals, r["llm_totals"])
        calls = sum(v.get("calls", 0) for v in totals.values())
        toks = sum(v.get("prompt_tokens", 0) + v.get("completion_tokens", 0) for v in totals.values())
        cost = sum(v.get("cost_usd", 0.0) for v in totals.values())
        logger.info("batch %d/%d: %d/%d conversations done; LLM calls %d, tokens %d, cost $%.4f",
                    finished, n_batches, done, total, calls, toks, cost)
        if progress_id:
            try:
                update_progress_artifact(progress_id, progress=100.0 * done / max(1, total))
            except Exception:  # noqa: BLE001
                pass
        # a new version of the same key per batch: the UI shows the latest figures
        publish_markdown(f"synth-progress-{slug(run_name, 50)}",
                         f"| conversations done | LLM calls | tokens | cost (USD) |\n|---|---|---|---|\n"
                         f"| {done} / {total} | {calls} | {toks} | {cost:.4f} |", "synthesis progress")
        if r["stopped"]:
            logger.warning("stopping: %s", r["stopped"])

    def run_round(round_plans: list[dict]) -> str | None:
        """One round: the planned conversations, or the spares that replace the short ones."""
        nonlocal n_batches, total
        batches = [round_plans[i:i + bs] for i in range(0, len(round_plans), bs)]
        n_batches += len(batches)
        total += len(round_plans)
        return run_batches(run_dir, config, batches, prep, total, on_done)

    done_rounds = complete_rounds(run_dir, config, prep, run_round)
    stopped = done_rounds["stopped"]
    for r in done_rounds["replaced"]:
        logger.info("conversation %s kept %.0f%% of its turns: replaced by %s", r["conv_id"], 100 * r["kept_share"],
                    r["replaced_by"])
    completion = {"replaced": done_rounds["replaced"], "short_kept": done_rounds["short_kept"]}
    res = assemble_task(run_dir=run_dir, config=config, plans=done_rounds["plans"], key=prep["key"],
                        completion=completion)
    if cfg.self_audit.enabled:     # MTR-Eval on the new benchmark; its section replaces the card's placeholder
        card = str(Path(res["export"]["export_dir"]) / "README.md") if res["export"].get("export_dir") else None
        res["audit"] = self_audit_task(run_dir=run_dir, config=config, card=card, stopped=stopped)
    RunStore(run_dir).write_manifest(stages={"synthesize": {"summary": res["summary"], "stopped": stopped,
                                                            **completion}})
    publish_markdown(f"synth-{slug(run_name, 50)}", lambda: _markdown(run_dir, res, stopped),
                     "MTR-Suite synthesis summary")
    return {**res, "stopped": stopped}


def _markdown(run_dir: str, res: dict, stopped: str | None) -> str:
    s = res["summary"]
    lines = [f"# Synthesis `{Path(run_dir).name}`", "", f"Backend: **{s['backend']}**", "",
             "| statistic | value |", "|---|---|"] + [f"| {k} | {v} |" for k, v in s.items()]
    lines += ["", f"Exports: `{res['export']['export_dir']}`"]
    audit = res.get("audit") or {}
    if audit.get("ensemble"):
        lines += ["", "Self-audit (ensemble means): " + ", ".join(
            f"{m} {v['mean']:.2f}" for m, v in audit["ensemble"].items() if v.get("mean") is not None)]
    if stopped:
        lines += ["", f"**Stopped early:** {stopped}"]
    return "\n".join(lines)


def run_synthesis(run_dir: str, cfg: MTRConfig) -> dict:
    store = RunStore(run_dir)
    for t in ("clusters", "chunks", "embeddings"):
        if not store.has_table(t):
            raise ValueError(f"run {run_dir} has no {t!r} table; run the spine first (`mtr build CORPUS --run ...`)")
    llm_config_for(cfg)     # a broken LLM config fails here, before any flow run, log or event exists
    store.write_manifest(config=redact(cfg.model_dump(mode="json")))
    runner = task_runner_for(cfg)
    fl = synthesize_flow if runner is None else synthesize_flow.with_options(task_runner=runner)
    with prefect_run_settings(store.path):
        return fl(run_dir=store.path, config=cfg.model_dump(mode="json"), run_name=Path(store.path).name)
